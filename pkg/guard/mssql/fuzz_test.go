package mssql

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// FuzzRead feeds the reader arbitrary text, seeded with both corpora and
// the lexer's disagreement corpus. The
// reader must never panic, and nothing it passes may write: a passed
// statement is one query, begins as one, holds no bare word that writes,
// locks or runs a command, and reads back the same.
func FuzzRead(f *testing.F) {
	for _, c := range hostile {
		f.Add(c.sql)
	}
	for _, s := range valid {
		f.Add(s)
	}
	// The lexer's disagreement corpus, alone and after a SELECT: each is a
	// place where a reader could end a comment, a literal or a name
	// elsewhere than SQL Server does.
	for _, d := range disagreements {
		f.Add(d.sql)
		f.Add("SELECT 1 " + d.sql + " FROM dbo.orders")
	}
	f.Fuzz(func(t *testing.T, sql string) {
		st, ref := Reader{}.Read(sql)
		if ref != nil {
			if ref.Code == "" || ref.Message == "" || ref.Fix == "" {
				t.Fatalf("%q: incomplete refusal %+v", sql, ref)
			}
			return
		}
		toks, err := lex(st.Text)
		if err != nil {
			t.Fatalf("%q passed but its text does not lex: %v", sql, err)
		}
		if f := toks[0]; !f.is("SELECT") && !f.is("WITH") && !f.isPunct("(") {
			t.Fatalf("%q passed beginning with %q", sql, f.text)
		}
		for _, tk := range toks {
			if tk.kind == tWord && (writes[tk.upper()] || tk.is("INTO") || tk.is("OPTION")) || tk.isPunct(";") || tk.kind == tVariable || tk.kind == tTemp {
				t.Fatalf("%q passed holding %q", sql, tk.text)
			}
		}
		for _, sc := range st.Scopes {
			for _, tb := range sc.Tables {
				if _, system := SystemSchema(tb.Schema, tb.Name); system != tb.System || tb.System && !strings.EqualFold(tb.Schema, "sys") && !strings.EqualFold(tb.Schema, "information_schema") {
					t.Fatalf("%q passed reading %+v, which SQL Server resolves otherwise", sql, tb)
				}
			}
		}
		if st.Names != guard.NamesFold {
			t.Fatalf("%q passed with the name rule %v", sql, st.Names)
		}
		again, ref := Reader{}.Read(st.Text)
		if ref != nil || again.Canonical != st.Canonical || len(again.Scopes) != len(st.Scopes) {
			t.Fatalf("%q passed, but its text reads differently: %+v %+v", sql, ref, again)
		}
		if _, ref := guard.Check(Reader{}, sql, policy); ref != nil && ref.Code != contracts.RefuseTableNotReadable && ref.Code != contracts.RefuseLargeTableUnbounded {
			t.Fatalf("%q passed Read, but Check refused it %s", sql, ref.Code)
		}
	})
}

var benchSQL = `WITH monthly AS (
    SELECT DATEFROMPARTS(YEAR(o.ordered_at), MONTH(o.ordered_at), 1) AS month, c.region, SUM(o.total) AS revenue
      FROM dbo.orders AS o
      JOIN dbo.customers AS c ON c.id = o.customer_id
     WHERE o.ordered_at >= DATEADD(month, -12, CAST(GETDATE() AS date)) AND o.status IN (2, 3)
     GROUP BY DATEFROMPARTS(YEAR(o.ordered_at), MONTH(o.ordered_at), 1), c.region)
SELECT region, month, revenue,
       revenue - LAG(revenue) OVER (PARTITION BY region ORDER BY month) AS change,
       PERCENTILE_CONT(0.5) WITHIN GROUP (ORDER BY revenue) OVER (PARTITION BY region) AS median,
       CASE WHEN revenue > 1000 THEN 'high' ELSE 'low' END AS band
  FROM monthly
 WHERE EXISTS (SELECT 1 FROM dbo.events e WHERE e.event_date >= '2026-01-01' AND e.region = monthly.region)
 ORDER BY region, month`

// BenchmarkLex is the raw tokenising of a typical analytics query.
func BenchmarkLex(b *testing.B) {
	b.SetBytes(int64(len(benchSQL)))
	for b.Loop() {
		if _, err := lex(benchSQL); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead is the reader: lexing, parsing, scopes and bounds.
func BenchmarkRead(b *testing.B) {
	b.SetBytes(int64(len(benchSQL)))
	for b.Loop() {
		if _, ref := (Reader{}).Read(benchSQL); ref != nil {
			b.Fatal(ref)
		}
	}
}

// BenchmarkCheck is the whole parser-level guard: Read and the shared rules.
func BenchmarkCheck(b *testing.B) {
	b.SetBytes(int64(len(benchSQL)))
	for b.Loop() {
		if _, ref := guard.Check(Reader{}, benchSQL, policy); ref != nil {
			b.Fatal(ref)
		}
	}
}
