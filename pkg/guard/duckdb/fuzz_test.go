package duckdb

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/duckdb/duckdbtest"
)

// FuzzRead feeds the reader arbitrary text, seeded with both corpora. It must
// never panic, and whatever passes must be one statement that reads: it
// starts as a query starts, the lexer too reads it as one statement, and
// reading its text again passes again.
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
			if ref.Code == "" || ref.Message == "" || ref.Fix == "" {
				t.Fatalf("%q: incomplete refusal %+v", sql, ref)
			}
			return
		}
		switch kw := strings.ToUpper(leadingKeyword(st.Text)); kw {
		case "SELECT", "WITH", "FROM", "VALUES", "TABLE":
		default:
			t.Fatalf("%q passed but starts with %q", sql, kw)
		}
		if n := len(splitStatements(st.Text)); n != 1 {
			// DuckDB's parser read one statement where the lexer reads
			// several: one of the two ends a literal, a comment or a
			// statement elsewhere than the other, and a pass must never rest
			// on that disagreement.
			t.Fatalf("%q passed, but the lexer reads %d statements in %q", sql, n, st.Text)
		}
		if _, ref := guard.Check(r, st.Text, duckdbtest.Policy()); ref != nil {
			t.Fatalf("%q passed, its text %q did not: %+v", sql, st.Text, ref)
		}
		tables := map[string]bool{}
		for _, n := range st.Tables("main") {
			tables[n] = true
		}
		for _, c := range st.ColumnRefs("main") {
			if k := (guard.Table{Schema: c.Schema, Name: c.Table}).QualifiedName("main"); !tables[k] {
				t.Fatalf("%q: column %+v tied to %s, which it does not read", sql, c, k)
			}
		}
	})
}
