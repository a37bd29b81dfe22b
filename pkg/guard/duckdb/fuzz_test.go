package duckdb

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/duckdb/duckdbtest"
)

// FuzzRead feeds the reader arbitrary text, seeded with both corpora. It must
// never panic, and whatever passes must be one statement that reads:
// it starts as a query starts, and reading its text again passes again.
//
//	go test -fuzz FuzzRead -fuzztime 60s ./pkg/guard/duckdb/
func FuzzRead(f *testing.F) {
	for _, c := range duckdbtest.Hostile {
		f.Add(c.SQL)
	}
	for _, q := range duckdbtest.Valid {
		f.Add(q)
	}
	r := reader(f)
	f.Fuzz(func(t *testing.T, sql string) {
		st, ref := guard.Check(r, sql, duckdbtest.Policy())
		if ref != nil {
			if ref.Code == "" || ref.Reason == "" || ref.Fix == "" {
				t.Fatalf("%q: incomplete refusal %+v", sql, ref)
			}
			return
		}
		switch kw := strings.ToUpper(leadingKeyword(st.Text)); kw {
		case "SELECT", "WITH", "FROM", "VALUES", "TABLE":
		default:
			t.Fatalf("%q passed but starts with %q", sql, kw)
		}
		if len(splitStatements(st.Text)) > 1 {
			// The lexer is only a hint, but a pass it reads as several
			// statements deserves a look.
			t.Logf("%q: the lexer sees several statements", sql)
		}
		if _, ref := guard.Check(r, st.Text, duckdbtest.Policy()); ref != nil {
			t.Fatalf("%q passed, its text %q did not: %+v", sql, st.Text, ref)
		}
	})
}
