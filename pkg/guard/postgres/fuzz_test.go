package postgres_test

import (
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
)

// FuzzRead holds the reader to two properties on any input: it never
// panics, and whatever passes is exactly one SELECT with nothing inside that
// writes or locks — checked on a fresh parse of the text that would run.
func FuzzRead(f *testing.F) {
	for _, c := range postgrestest.Hostile {
		f.Add(c.SQL)
	}
	for _, q := range postgrestest.Valid {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		st, ref := postgres.Reader{}.Read(q)
		if ref != nil {
			if st != nil {
				t.Fatalf("both a statement and a refusal for %q", q)
			}
			return
		}
		assertOneSelect(t, st.Text)
		assertColumnsTied(t, st, "public")
		_, _ = guard.Check(postgres.Reader{}, q, postgrestest.Policy())
	})
}

// assertColumnsTied holds ColumnRefs to the tables the statement reads: a
// column is only ever tied to one of them.
func assertColumnsTied(t *testing.T, st *guard.Statement, defaultSchema string) {
	t.Helper()
	tables := map[string]bool{}
	for _, n := range st.Tables(defaultSchema) {
		tables[n] = true
	}
	for _, c := range st.ColumnRefs(defaultSchema) {
		if k := (guard.Table{Schema: c.Schema, Name: c.Table}).QualifiedName(defaultSchema); !tables[k] {
			t.Fatalf("%q: column %+v tied to %s, which it does not read (%v)", st.Text, c, k, st.Tables(defaultSchema))
		}
	}
}
