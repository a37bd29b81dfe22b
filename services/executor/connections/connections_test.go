package connections_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
)

const example = `connections:
  - id: shop                      # what runs and callers name
    engine: postgres
    dsn: postgres://reader:s3cret@db:5432/shop
    agent_dsn: postgres://sonde_agent@db:5432/shop
    readable: ["public.*"]
    large_tables:
      public.events: event_date
    description: Production shop replica
  - id: demo
    engine: sqlite
    path: data/demo.db
    description: Demo shop
`

func TestParseExample(t *testing.T) {
	conns, err := connections.Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	if len(conns) != 2 {
		t.Fatalf("got %d connections", len(conns))
	}
	shop := conns[0]
	if shop.ID != "shop" || shop.Engine != contracts.EnginePostgres || shop.DSN != "postgres://reader:s3cret@db:5432/shop" ||
		shop.AgentDSN != "postgres://sonde_agent@db:5432/shop" || shop.Description != "Production shop replica" {
		t.Errorf("shop = %+v", shop)
	}
	if len(shop.Readable) != 1 || shop.Readable[0] != "public.*" {
		t.Errorf("readable = %v", shop.Readable)
	}
	if shop.LargeTables["public.events"] != "event_date" {
		t.Errorf("large_tables = %v", shop.LargeTables)
	}
	if demo := conns[1]; demo.Engine != contracts.EngineSQLite || demo.Path != "data/demo.db" {
		t.Errorf("demo = %+v", demo)
	}
}

func TestLoadResolvesPaths(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "connections.yaml")
	if err := os.WriteFile(file, []byte(example), 0o600); err != nil {
		t.Fatal(err)
	}
	conns, err := connections.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "data", "demo.db"); conns[1].Path != want {
		t.Fatalf("path = %q, want %q", conns[1].Path, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       []string // substrings, each in one reported error
	}{
		{"empty", "", []string{"empty"}},
		{"no list", "connections: {}\n", []string{"line 1: connections: must be a list"}},
		{"unknown top", "conns: []\n", []string{"line 1: conns: unknown top-level key"}},
		{"missing id", "connections:\n  - engine: sqlite\n    path: x.db\n", []string{"line 2: id: missing"}},
		{"bad id", "connections:\n  - id: my.db\n    engine: sqlite\n    path: x.db\n", []string{`line 2: id: connection id "my.db" is not valid: it holds '.' at byte 2; a connection id is 1 to 64 characters`}},
		{"id past the length", "connections:\n  - id: " + strings.Repeat("a", 4000) + "\n    engine: sqlite\n", []string{`line 2: id: connection id "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"… is not valid: it is 4000 bytes long, more than 64`,
			`line 2: path: sqlite needs the path`}},
		{"id with a wildcard", "connections:\n  - id: \"shop>\"\n    engine: sqlite\n    path: x.db\n", []string{`line 2: id: connection id "shop>" is not valid: it holds '>' at byte 4`}},
		{"dup id", "connections:\n  - id: a\n    engine: sqlite\n    path: x.db\n  - id: a\n    engine: sqlite\n    path: y.db\n",
			[]string{`line 5: connection "a": id: duplicate id (first declared on line 2)`}},
		{"bad engine", "connections:\n  - id: a\n    engine: oracle\n    dsn: x\n", []string{`line 3: connection "a": engine: unknown engine "oracle"`}},
		{"sqlite no path", "connections:\n  - id: a\n    engine: sqlite\n", []string{`connection "a": path: sqlite needs the path`}},
		{"sqlite dsn", "connections:\n  - id: a\n    engine: sqlite\n    path: x.db\n    dsn: file:x.db\n", []string{`line 5: connection "a": dsn: sqlite takes path:`}},
		{"postgres no dsn", "connections:\n  - id: a\n    engine: postgres\n", []string{`connection "a": dsn: postgres needs a dsn`}},
		{"unknown field", "connections:\n  - id: a\n    engine: sqlite\n    path: x.db\n    pasword: x\n", []string{`line 5: connection "a": pasword: unknown field`}},
		{"readable not list", "connections:\n  - id: a\n    engine: sqlite\n    path: x.db\n    readable: main.*\n", []string{`line 5: connection "a": readable: must be a list`}},
		{"large table no column", "connections:\n  - id: a\n    engine: sqlite\n    path: x.db\n    large_tables:\n      events: \"\"\n", []string{`line 6: connection "a": large_tables: table events needs the column`}},
		{"readable three parts", "connections:\n  - id: a\n    engine: postgres\n    dsn: x\n    readable: [a.b.c]\n",
			[]string{`line 5: connection "a": readable: entry 1: table pattern "a.b.c" has 3 parts`}},
		{"readable unclosed quote", "connections:\n  - id: a\n    engine: postgres\n    dsn: x\n    readable: ['public.\"Genre']\n",
			[]string{`connection "a": readable: entry 1: table pattern`, "unclosed"}},
		// Each engine's patterns are read by its spec's name rule: PostgreSQL
		// quotes only with double quotes, so a [bracket] is no quote there.
		{"readable brackets on postgres", "connections:\n  - id: a\n    engine: postgres\n    dsn: x\n    readable: ['[public].orders']\n",
			[]string{`connection "a": readable: entry 1: table pattern "[public].orders"`, "cannot appear in an unquoted name"}},
		{"large table bad key", "connections:\n  - id: a\n    engine: sqlite\n    path: x.db\n    large_tables:\n      main..events: day\n",
			[]string{`line 5: connection "a": large_tables: table pattern "main..events" has an empty part`}},
		{"two problems", "connections:\n  - id: a\n    engine: oracle\n  - id: b\n    engine: sqlite\n", []string{`"a": engine`, `"b": path`}},
		{"yaml syntax", "connections:\n  - id: [\n", []string{"line"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := connections.Parse([]byte(tc.yaml))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			// An error names what is wrong; it never repeats a long value whole.
			if len(err.Error()) > 600 {
				t.Errorf("error of %d bytes: %.200q…", len(err.Error()), err)
			}
			if tc.name != "yaml syntax" {
				var ce *connections.Error
				if !errors.As(err, &ce) {
					t.Errorf("error %T is not a *connections.Error", err)
				}
			}
		})
	}
}

func TestDescriptorHidesSecrets(t *testing.T) {
	conns, err := connections.Parse([]byte(example))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		d := c.Descriptor()
		if d.ID != c.ID || d.Engine != c.Engine || d.Description != c.Description {
			t.Errorf("descriptor %+v does not describe %s", d, c.ID)
		}
		if len(d.Identity) != 64 {
			t.Errorf("identity %q is not a hex sha256", d.Identity)
		}
		// The guard's policy is shown to the people who use the
		// connection: its readable patterns and bounded tables.
		if !slices.Equal(d.Readable, c.Readable) || !maps.Equal(d.LargeTables, c.LargeTables) {
			t.Errorf("descriptor of %s shows readable %v and large tables %v, want %v and %v", c.ID, d.Readable, d.LargeTables, c.Readable, c.LargeTables)
		}
		for _, secret := range []string{"s3cret", "reader", "db:5432", "demo.db", "data/"} {
			if strings.Contains(d.Identity, secret) || strings.Contains(d.Description, secret) {
				t.Errorf("descriptor of %s leaks %q", c.ID, secret)
			}
		}
	}
}

func TestIdentity(t *testing.T) {
	pg := func(dsn string) string {
		return connections.Connection{ID: "x", Engine: contracts.EnginePostgres, DSN: dsn}.Identity()
	}
	// The password and the description do not change the identity; host,
	// port, database and role do.
	base := pg("postgres://reader:one@db:5432/shop")
	if got := pg("postgres://reader:two@DB/shop"); got != base {
		t.Error("password or default port changed the identity")
	}
	if got := pg("host=db port=5432 dbname=shop user=reader password=x"); got != base {
		t.Error("keyword/value DSN of the same database has another identity")
	}
	for _, other := range []string{
		"postgres://reader@db2:5432/shop",
		"postgres://reader@db:5433/shop",
		"postgres://reader@db:5432/shop2",
		"postgres://writer@db:5432/shop",
	} {
		if pg(other) == base {
			t.Errorf("%s has the same identity as the base", other)
		}
	}

	dir := t.TempDir()
	lite := func(p string) string {
		return connections.Connection{ID: "x", Engine: contracts.EngineSQLite, Path: p}.Identity()
	}
	a := lite(filepath.Join(dir, "a.db"))
	if lite(filepath.Join(dir, ".", "a.db")) != a {
		t.Error("the same file under another spelling has another identity")
	}
	if lite(filepath.Join(dir, "b.db")) == a {
		t.Error("two files share an identity")
	}
	duck := connections.Connection{ID: "x", Engine: contracts.EngineDuckDB, Path: filepath.Join(dir, "a.db")}.Identity()
	if duck == a {
		t.Error("engine is not part of the identity")
	}
}
