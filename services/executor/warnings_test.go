package executor

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/pgtest"
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
		s.Stop(context.Background())
	}
}

// TestImplicitUserCastIsAConnectionWarning: a PostgreSQL database holding a
// user-defined implicit cast, through which every read is refused, is
// served with a warning on its descriptor saying so — before any read is
// refused — and one without it is not.
func TestImplicitUserCastIsAConnectionWarning(t *testing.T) {
	base := pgtest.URL(t)
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	name := fmt.Sprintf("sonde_cast_%d", time.Now().UnixNano())
	if _, err := admin.Exec("CREATE DATABASE " + name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	dsn := u.String()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("CREATE TABLE public.items (id int PRIMARY KEY, label text)"); err != nil {
		t.Fatal(err)
	}
	served := func() contracts.ConnectionDescriptor {
		s := newService(t, Config{Engine: contracts.EnginePostgres, Connections: []connections.Connection{
			{ID: "cast", Engine: contracts.EnginePostgres, DSN: dsn}}})
		defer s.Stop(context.Background())
		return s.Descriptors()[0]
	}
	const warned = "user-defined implicit cast"
	if d := served(); d.Status != contracts.ConnectionAvailable || strings.Contains(strings.Join(d.Warnings, "\n"), warned) {
		t.Fatalf("without the cast: %+v", d)
	}
	if _, err := db.Exec(`CREATE FUNCTION public.items_text(public.items) RETURNS text LANGUAGE sql IMMUTABLE AS 'SELECT ''x''';
		CREATE CAST (public.items AS text) WITH FUNCTION public.items_text(public.items) AS IMPLICIT`); err != nil {
		t.Fatal(err)
	}
	d := served()
	if d.Status != contracts.ConnectionAvailable || !strings.Contains(strings.Join(d.Warnings, "\n"), warned) {
		t.Fatalf("with the cast: %+v", d)
	}
	for _, w := range d.Warnings {
		if strings.Contains(w, u.Host) || strings.Contains(w, name) {
			t.Errorf("a warning names the server or the database: %q", w)
		}
	}
}
