package executor

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
)

// TestLargeTablesMismatchIsAConnectionWarning: a connection whose
// large_tables names a column its table lacks (every read of the table
// refused) or a table that is not there (the real one unbounded) is served
// with a warning on its descriptor saying which; a right entry is not.
func TestLargeTablesMismatchIsAConnectionWarning(t *testing.T) {
	path := demoPath(t)
	for _, c := range []struct {
		large map[string]string
		want  string
	}{
		{map[string]string{"main.orders": "ordered_at"}, ""},
		{map[string]string{"main.orders": "orderd_at"}, "main.orders on orderd_at, a column it does not have"},
		{map[string]string{"main.ordrs": "ordered_at"}, "large_tables names main.ordrs, which matches no readable table"},
	} {
		s := newService(t, Config{Connections: []connections.Connection{
			{ID: "demo", Engine: contracts.EngineSQLite, Path: path, LargeTables: c.large}}})
		d := s.Descriptors()[0]
		all := strings.Join(d.Warnings, "\n")
		switch {
		case d.Status != contracts.ConnectionAvailable:
			t.Errorf("%v: %+v", c.large, d)
		case c.want == "" && len(d.Warnings) > 0:
			t.Errorf("%v: warnings %q for a right entry", c.large, d.Warnings)
		case c.want != "" && !strings.Contains(all, c.want):
			t.Errorf("%v: warnings %q, want one saying %q", c.large, d.Warnings, c.want)
		}
		if strings.Contains(all, path) {
			t.Errorf("%v: a warning names the file: %q", c.large, d.Warnings)
		}
		s.Stop()
	}
}
