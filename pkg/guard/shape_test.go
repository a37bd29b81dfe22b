package guard

import (
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
)

var lexicons = map[string]Lexicon{"postgres": LexPostgres, "sqlite": LexSQLite, "duckdb": LexDuckDB, "tsql": LexTSQL}

// TestShapeSkipsWhatTheEngineSkips: brackets and operators inside strings,
// quoted names and comments do not count — read with each engine's own
// rules, and where a rule differs the text counts where the engine reads it.
func TestShapeSkipsWhatTheEngineSkips(t *testing.T) {
	deep := strings.Repeat("(", 300)
	cases := []struct {
		sql     string
		nesting map[Lexicon]int // missing: 0
	}{
		{"SELECT '" + deep + "'", nil},
		{"SELECT 'it''s " + deep + "'", nil},
		{`SELECT "` + deep + `"`, nil},
		{`SELECT "a""` + deep + `"`, nil},
		{"SELECT 1 -- " + deep, nil},
		{"SELECT 1 /* " + deep + " */", map[Lexicon]int{LexPostgres: 1, LexDuckDB: 1, LexTSQL: 1, LexSQLite: 1}},
		// E'…': a backslash escapes the quote in PostgreSQL and DuckDB only.
		{`SELECT E'\'` + deep + `'`, map[Lexicon]int{LexSQLite: 300, LexTSQL: 300}},
		// …and not in a plain string.
		{`SELECT 'a\' ` + deep, map[Lexicon]int{LexPostgres: 300, LexDuckDB: 300, LexSQLite: 300, LexTSQL: 300}},
		// an E that ends a longer word starts no escape string
		{`SELECT xe'\' ` + deep, map[Lexicon]int{LexPostgres: 300, LexDuckDB: 300, LexSQLite: 300, LexTSQL: 300}},
		// Dollar quotes in PostgreSQL and DuckDB.
		{"SELECT $x$ " + deep + " $x$", map[Lexicon]int{LexSQLite: 300, LexTSQL: 300}},
		{"SELECT $$ " + deep + " $$", map[Lexicon]int{LexSQLite: 300, LexTSQL: 300}},
		// $ inside a name is part of the name, not a quote.
		{"SELECT a$$ " + deep + " $$", map[Lexicon]int{LexPostgres: 300, LexDuckDB: 300, LexSQLite: 300, LexTSQL: 300}},
		// $1 is a parameter.
		{"SELECT $1 " + deep + " $1", map[Lexicon]int{LexPostgres: 300, LexDuckDB: 300, LexSQLite: 300, LexTSQL: 300}},
		// Comments nest in PostgreSQL, DuckDB and SQL Server, not in SQLite;
		// their nesting counts.
		{"SELECT 1 /* /* */ " + deep + " */", map[Lexicon]int{LexPostgres: 2, LexDuckDB: 2, LexTSQL: 2, LexSQLite: 300}},
		{"SELECT (1 " + strings.Repeat("/*", 300) + strings.Repeat("*/", 300) + ")", map[Lexicon]int{LexPostgres: 301, LexDuckDB: 301, LexTSQL: 301, LexSQLite: 2}},
		// A line comment ends at a lone \r (SQL Server, PostgreSQL, DuckDB).
		{"SELECT 1 --x\r" + deep, map[Lexicon]int{LexPostgres: 300, LexDuckDB: 300, LexSQLite: 300, LexTSQL: 300}},
		// [names] with ]] in SQL Server; SQLite's end at the first ].
		{"SELECT [a]]" + deep + "]", map[Lexicon]int{LexPostgres: 300, LexDuckDB: 300, LexSQLite: 300}},
		// `names` in SQLite.
		{"SELECT `" + deep + "`", map[Lexicon]int{LexPostgres: 300, LexDuckDB: 300, LexTSQL: 300}},
		// CASE … END nests.
		{"SELECT " + strings.Repeat("CASE WHEN 1=1 THEN ", 300) + "1" + strings.Repeat(" END", 300),
			map[Lexicon]int{LexPostgres: 300, LexDuckDB: 300, LexSQLite: 300, LexTSQL: 300}},
	}
	for _, c := range cases {
		for name, lex := range lexicons {
			if got := MeasureShape(c.sql, lex).Nesting; got != c.nesting[lex] {
				t.Errorf("%s: nesting of %.60q = %d, want %d", name, c.sql, got, c.nesting[lex])
			}
		}
	}
}

func TestShapeSubqueries(t *testing.T) {
	cases := map[string]int{
		"SELECT 1":            0,
		"SELECT (1)":          0,
		"SELECT ((SELECT 1))": 1,
		"SELECT (SELECT 1) + (SELECT (SELECT 2))":         2,
		"SELECT * FROM (SELECT 1) a, (SELECT 2) b":        1,
		"(SELECT 1) UNION (SELECT 2)":                     1,
		"SELECT x FROM t WHERE x IN (VALUES (1))":         1,
		"SELECT f(x) FROM t WHERE x IN ('SELECT')":        0,
		"SELECT (  -- c\n  WITH a AS (SELECT 1) TABLE a)": 2,
	}
	for q, want := range cases {
		if got := MeasureShape(q, LexPostgres).Subqueries; got != want {
			t.Errorf("subqueries of %q = %d, want %d", q, got, want)
		}
	}
}

func TestShapeOperatorChain(t *testing.T) {
	cases := []struct {
		sql   string
		chain int
	}{
		{"SELECT 1", 0},
		{"SELECT 1+1+1", 2},
		{"SELECT - - - 1", 3},
		{"SELECT -+-+1", 4},
		{"SELECT NOT NOT x", 2},
		{"SELECT 1+1, 2+2, 3+3", 1},                       // list items are siblings
		{"SELECT a FROM t WHERE x=1 AND y=2", 3},          // one item: x=1 AND y=2
		{"SELECT (1+1)+1", 3},                             // one level, one operator inside it
		{"SELECT 1,1 UNION SELECT 1,1 UNION SELECT 1", 2}, // set operations span the commas
		{"SELECT f(1+1, 2+2)", 2},
		{"SELECT 'a+b' || \"c-d\"", 2},
		{"SELECT x::int::int", 4},
		{"SELECT t.a", 1},
		{"SELECT 1.5e-3", 0},
	}
	for _, c := range cases {
		if got := MeasureShape(c.sql, LexPostgres).OperatorChain; got != c.chain {
			t.Errorf("chain of %q = %d, want %d", c.sql, got, c.chain)
		}
	}
	// T-SQL: --(* opens an ODBC escape, not a comment.
	if got := MeasureShape("SELECT 1 --(* 1+1", LexTSQL).OperatorChain; got < 3 {
		t.Errorf("--(* read as a comment: chain %d", got)
	}
}

func TestCheckShapeLimits(t *testing.T) {
	for name, lex := range lexicons {
		ok := []string{
			"SELECT " + strings.Repeat("(", MaxNesting) + "1" + strings.Repeat(")", MaxNesting),
			"SELECT 1" + strings.Repeat("+1", MaxOperatorChain-1),
			"SELECT '" + strings.Repeat("x", MaxStatementBytes-len("SELECT ''")) + "'",
			// a wide but shallow query passes: each list item is short
			"SELECT " + strings.Repeat("a+b, ", 3000) + "1",
			"SELECT " + strings.Repeat("(SELECT ", MaxSubqueryNesting) + "1" + strings.Repeat(")", MaxSubqueryNesting),
			"SELECT " + strings.Repeat("(SELECT 1) + ", 500) + "1", // many subqueries side by side
		}
		for _, q := range ok {
			if ref := CheckShape(q, lex); ref != nil {
				t.Errorf("%s: refused %.60q: %+v", name, q, ref)
			}
		}
		bad := map[string]string{
			"SELECT " + strings.Repeat("(", MaxNesting+1) + "1" + strings.Repeat(")", MaxNesting+1):                                  "200",
			"SELECT 1" + strings.Repeat("+1", MaxOperatorChain+1):                                                                    "1000",
			"SELECT '" + strings.Repeat("x", MaxStatementBytes) + "'":                                                                "65536",
			"SELECT " + strings.Repeat("CASE WHEN 1=1 THEN ", MaxNesting+1) + "1":                                                    "200",
			"SELECT 1" + strings.Repeat(" UNION ALL SELECT 1, 2", MaxOperatorChain+1):                                                "1000",
			"SELECT " + strings.Repeat("( /* c */\n select ", MaxSubqueryNesting+1) + "1":                                            "12",
			"SELECT 1 WHERE 1 IN " + strings.Repeat("(WITH a AS (SELECT 1) SELECT * FROM a WHERE 1 IN ", MaxSubqueryNesting) + "(1)": "12",
			"SELECT * FROM " + strings.Repeat("(FROM ", MaxSubqueryNesting+1) + "t":                                                  "12",
		}
		for q, limit := range bad {
			ref := CheckShape(q, lex)
			if ref == nil || ref.Code != contracts.RefuseTooComplex || ref.Message == "" || !strings.Contains(ref.Fix, limit) {
				t.Errorf("%s: %.60q: %+v, want too_complex with the limit %s in the fix", name, q, ref, limit)
			}
		}
	}
}

// TestMeasureShapeIsLinear: no input of the largest size the check reads
// takes long, however its brackets are mismatched.
func TestMeasureShapeIsLinear(t *testing.T) {
	half := MaxStatementBytes / 2
	inputs := []string{
		strings.Repeat("(", half) + strings.Repeat("]", half),
		strings.Repeat("[", 1) + strings.Repeat("(", half-1) + strings.Repeat("]", half),
		strings.Repeat("CASE ", half/5) + strings.Repeat(")", half),
		strings.Repeat("/*", half),
		strings.Repeat("$a", half),
		strings.Repeat("'", MaxStatementBytes),
	}
	for _, in := range inputs {
		for _, lex := range lexicons {
			start := time.Now()
			MeasureShape(in, lex)
			if d := time.Since(start); d > time.Second {
				t.Errorf("%.20q…: %v", in, d)
			}
		}
	}
}
