package guard_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/guard"
	guardduckdb "github.com/sondehq/sonde/pkg/guard/duckdb"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
	guardpg "github.com/sondehq/sonde/pkg/guard/postgres"
	guardsqlite "github.com/sondehq/sonde/pkg/guard/sqlite"
)

// engine is one of the four readers with its dialect and default schema.
type engine struct {
	engine  contracts.Engine
	name    string // as deepShapes' dialects
	lex     guard.Lexicon
	schema  string
	reader  guard.Reader
	cleanup func()
}

var (
	duckOnce   sync.Once
	duckReader *guardduckdb.Reader
	duckErr    error
)

// sqliteSchema is what the SQLite reader compiles against: SQLite resolves
// names while it compiles, so the tables the statements read must exist.
var sqliteSchema = []string{
	"CREATE TABLE customer (customer_id INTEGER PRIMARY KEY, name TEXT)",
	"CREATE TABLE invoice (invoice_id INTEGER PRIMARY KEY, customer_id INTEGER, invoice_date TEXT, total REAL)",
	"CREATE TABLE t (x, a)",
}

// engines opens the four readers; the SQLite one compiles on a database file
// holding sqliteSchema.
func engines(t testing.TB) []engine {
	t.Helper()
	duckOnce.Do(func() { duckReader, duckErr = guardduckdb.New() })
	if duckErr != nil {
		t.Fatal(duckErr)
	}
	path := filepath.Join(t.TempDir(), "guard.db")
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sqliteSchema {
		if _, err := w.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	w.Close()
	ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	ro.SetMaxOpenConns(1)
	conn, err := ro.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); ro.Close() })
	return []engine{
		{engine: contracts.EnginePostgres, name: "pg", lex: guard.LexPostgres, schema: "public", reader: guardpg.Reader{}},
		{engine: contracts.EngineDuckDB, name: "duckdb", lex: guard.LexDuckDB, schema: "main", reader: duckReader},
		{engine: contracts.EngineSQLite, name: "sqlite", lex: guard.LexSQLite, schema: "main",
			reader: guardsqlite.Reader{Compiler: guardsqlite.ConnCompiler(context.Background(), conn)}},
		{engine: contracts.EngineMSSQL, name: "mssql", lex: guard.LexTSQL, schema: "dbo", reader: guardmssql.Reader{}},
	}
}

// TestDeepInputsNeverCrash: every reader, given every deeply nested shape at
// sizes up to and well past the shape limits, returns — a statement or a
// refusal with a reason and a fix, and too_complex exactly where the shape
// check says so. A crash in a native parser ends this test's process.
func TestDeepInputsNeverCrash(t *testing.T) {
	sizes := []int{1, 10, 100, guard.MaxNesting - 1, guard.MaxNesting, guard.MaxNesting + 1,
		guard.MaxOperatorChain / 2, guard.MaxOperatorChain - 1, guard.MaxOperatorChain, guard.MaxOperatorChain + 1,
		1500, 4500, 10000, 25000, 60000}
	if testing.Short() {
		sizes = []int{10, guard.MaxNesting + 1, guard.MaxOperatorChain + 1, 25000}
	}
	for _, e := range engines(t) {
		for _, s := range deepShapes {
			for _, n := range sizes {
				q := s.build(n, e.name)
				st, ref := e.reader.Read(q)
				over := guard.CheckShape(q, e.lex) != nil
				switch {
				case ref == nil && st == nil:
					t.Errorf("%s %s %d: neither a statement nor a refusal", e.name, s.name, n)
				case ref == nil && over:
					t.Errorf("%s %s %d: passed past the shape limits", e.name, s.name, n)
				case ref == nil:
				case ref.Message == "" || ref.Fix == "":
					t.Errorf("%s %s %d: incomplete refusal %+v", e.name, s.name, n, ref)
				case over != (ref.Code == contracts.RefuseTooComplex):
					t.Errorf("%s %s %d: refused %s (%s); shape over the limits: %v", e.name, s.name, n, ref.Code, ref.Message, over)
				}
			}
		}
	}
}

// outerJoinCases hold a large table to a bound in the query that reads it,
// across join kinds: a condition in an outer join's ON bounds only the side
// the join does not preserve.
var outerJoinCases = []struct {
	sql string
	ok  bool
}{
	// The bound sits in the ON of a join that preserves every invoice.
	{"SELECT count(*) FROM invoice i LEFT JOIN customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", false},
	{"SELECT count(*) FROM invoice i LEFT OUTER JOIN customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", false},
	{"SELECT count(*) FROM invoice i FULL JOIN customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", false},
	{"SELECT count(*) FROM invoice i FULL OUTER JOIN customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", false},
	{"SELECT count(*) FROM customer c RIGHT JOIN invoice i ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", false},
	{"SELECT count(*) FROM customer c RIGHT OUTER JOIN invoice ON c.customer_id = invoice.customer_id AND invoice.invoice_date >= '2030-01-01'", false},
	{"SELECT count(*) FROM invoice LEFT JOIN customer ON customer.customer_id = invoice.customer_id AND invoice.invoice_date >= '2030-01-01'", false},
	{"SELECT count(*) FROM invoice i LEFT JOIN customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01' JOIN customer d ON d.customer_id = c.customer_id", false},
	{"SELECT count(*) FROM invoice i LEFT JOIN customer c ON c.customer_id = i.customer_id LEFT JOIN customer d ON d.customer_id = c.customer_id AND i.invoice_date >= '2030-01-01'", false},
	// The bound limits invoice itself.
	{"SELECT count(*) FROM invoice i LEFT JOIN customer c ON c.customer_id = i.customer_id WHERE i.invoice_date >= '2030-01-01'", true},
	{"SELECT count(*) FROM customer c LEFT JOIN invoice i ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", true},
	{"SELECT count(*) FROM invoice i RIGHT JOIN customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", true},
	{"SELECT count(*) FROM invoice i JOIN customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", true},
	{"SELECT count(*) FROM invoice i INNER JOIN customer c ON c.customer_id = i.customer_id AND i.invoice_date >= '2030-01-01'", true},
	{"SELECT count(*) FROM invoice i FULL JOIN customer c ON c.customer_id = i.customer_id WHERE i.invoice_date >= '2030-01-01'", true},
}

// TestOuterJoinBoundsAllEngines runs outerJoinCases through each reader and
// the shared rules: the rule is one, every engine's walker must say which
// tables a bound in ON limits (guard.Bound.Limits).
func TestOuterJoinBoundsAllEngines(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			p := guard.Policy{DefaultSchema: e.schema,
				LargeTables: map[string]string{e.schema + ".invoice": "invoice_date"}}
			for _, c := range outerJoinCases {
				_, ref := guard.Check(e.reader, c.sql, p)
				switch {
				case c.ok && ref != nil:
					t.Errorf("refused %s (%s):\n%s", ref.Code, ref.Message, c.sql)
				case !c.ok && ref == nil:
					t.Errorf("admitted a large table unbounded:\n%s", c.sql)
				case !c.ok && ref.Code != contracts.RefuseLargeTableUnbounded:
					t.Errorf("refused %s (%s), want %s:\n%s", ref.Code, ref.Message, contracts.RefuseLargeTableUnbounded, c.sql)
				}
			}
		})
	}
}

// TestShapeRefusalNamesTheLimit: the refusal every reader gives a statement
// past the limits is too_complex, with the limit in its fix.
func TestShapeRefusalNamesTheLimit(t *testing.T) {
	for _, e := range engines(t) {
		for q, limit := range map[string]int{
			"SELECT 1" + strings.Repeat("+1", 25000):                                                            guard.MaxOperatorChain,
			"SELECT " + strings.Repeat("(", guard.MaxNesting+1) + "1" + strings.Repeat(")", guard.MaxNesting+1): guard.MaxNesting,
			"SELECT '" + strings.Repeat("x", guard.MaxStatementBytes) + "'":                                     guard.MaxStatementBytes,
		} {
			_, ref := e.reader.Read(q)
			if ref == nil || ref.Code != contracts.RefuseTooComplex || !strings.Contains(ref.Fix, fmt.Sprint(limit)) {
				t.Errorf("%s: %.40q: %+v, want too_complex naming %d", e.name, q, ref, limit)
			}
		}
	}
}

// TestReadersFollowTheirSpec: every engine the list (pkg/engine) declares
// has a reader here, and what the reader reports of a statement's names is
// the rule its spec declares — the rule readable patterns are checked under.
func TestReadersFollowTheirSpec(t *testing.T) {
	readers := map[contracts.Engine]engine{}
	for _, e := range engines(t) {
		readers[e.engine] = e
	}
	for _, spec := range enginespec.All() {
		e, ok := readers[spec.Name]
		if !ok {
			t.Errorf("engine %s has no guard reader", spec.Name)
			continue
		}
		if e.schema != spec.DefaultSchema {
			t.Errorf("%s: the reader's default schema %q, the spec's %q", spec.Name, e.schema, spec.DefaultSchema)
		}
		st, ref := e.reader.Read("SELECT invoice_id FROM invoice")
		if ref != nil {
			t.Errorf("%s: %v", spec.Name, ref)
			continue
		}
		if st.Names != spec.Names {
			t.Errorf("%s: the reader compares names %v, the spec declares %v", spec.Name, st.Names, spec.Names)
		}
	}
	if len(readers) != len(enginespec.All()) {
		t.Errorf("%d readers for %d listed engines", len(readers), len(enginespec.All()))
	}
}
