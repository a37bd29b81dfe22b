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
		_, _ = guard.Check(postgres.Reader{}, q, postgrestest.Policy())
	})
}
