package executor

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
	isqlite "github.com/sondehq/sonde/services/executor/internal/sqlite"
)

// A large_tables entry naming a column its table lacks, or a table that is
// not there, is a warning on the connection (issue 17, item 10); a right one
// is not.
func TestLargeTablesCheckedAgainstTheCatalog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "large.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"CREATE TABLE events (id INTEGER PRIMARY KEY, event_date TEXT)",
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, ordered_at TEXT)",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	ctx := context.Background()
	for _, c := range []struct {
		large map[string]string
		want  []string // each warning holds these, in order
	}{
		{map[string]string{"main.events": "event_date", "orders": "ORDERED_AT"}, nil},
		{map[string]string{"main.events": "evnt_date"}, []string{"main.events on evnt_date, a column it does not have: every read of it is refused; name one of its columns (id, event_date)"}},
		{map[string]string{"main.evnts": "event_date", "orders": "ordered_at"}, []string{"large_tables names main.evnts, which matches no readable table"}},
	} {
		eng, err := isqlite.Open(ctx, path, guard.Policy{LargeTables: c.large})
		if err != nil {
			t.Fatal(err)
		}
		got, err := largeTableWarnings(ctx, eng)
		eng.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c.want) {
			t.Errorf("%v: warnings %q, want %d", c.large, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%v: warning %q, want it to say %q", c.large, got[i], w)
			}
		}
	}
}
