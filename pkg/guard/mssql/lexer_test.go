package mssql

import (
	"reflect"
	"testing"
)

// disagreements is the lexer's disagreement corpus: texts on which a T-SQL
// lexer could read something other than SQL Server reads, each with the
// tokens SQL Server's own lexer makes of it (Microsoft's ScriptDom grammar,
// TSql170.g), or refused ("") where the reader cannot be certain. Whatever
// a comment, a literal or a delimited name hides, SQL Server and the reader
// must agree on where it ends.
var disagreements = []struct {
	sql  string
	want []string // token texts; nil: refused
}{
	// Line comments end at CR, LF or CR LF — and at nothing else.
	{"SELECT 1 --\rDELETE", []string{"SELECT", "1", "DELETE"}},
	{"SELECT 1 --\r\nDELETE", []string{"SELECT", "1", "DELETE"}},
	{"SELECT 1 --\nDELETE", []string{"SELECT", "1", "DELETE"}},
	{"SELECT 1 -- x\u2028DELETE", []string{"SELECT", "1"}},
	{"SELECT 1 -- x\u2029DELETE", []string{"SELECT", "1"}},
	{"SELECT 1 -- x\u0085DELETE", []string{"SELECT", "1"}},
	{"SELECT 1 -- x\vDELETE", []string{"SELECT", "1"}},
	{"SELECT 1 -- x\fDELETE", []string{"SELECT", "1"}},
	{"SELECT 1 -- /* \nDELETE", []string{"SELECT", "1", "DELETE"}},
	{"SELECT 1 ---\rDELETE", []string{"SELECT", "1", "DELETE"}},
	// --(* opens an ODBC escape; { } are ODBC escapes.
	{"SELECT 1 --(* *)--", nil},
	{"SELECT 1 --(", []string{"SELECT", "1"}},
	{"SELECT 1 -- (*", []string{"SELECT", "1"}},
	{"SELECT {fn NOW()}", nil},
	{"SELECT {d '2026-01-01'}", nil},
	{"SELECT 1 }", nil},
	// Block comments nest; only /* and */ count inside, not -- or quotes.
	{"/* /* */ */ SELECT", []string{"SELECT"}},
	{"/* -- */ SELECT", []string{"SELECT"}},
	{"/* ' */ SELECT", []string{"SELECT"}},
	{"/* [ */ SELECT", []string{"SELECT"}},
	{"/* /* */ SELECT", nil},
	{"/*/ SELECT */ x", []string{"x"}},
	{"/**/SELECT", []string{"SELECT"}},
	{"SELECT 1/**/DELETE", []string{"SELECT", "1", "DELETE"}},
	// Numbers: an exponent's digits and sign are optional.
	{"1e", []string{"1e"}},
	{"1eDELETE", []string{"1e", "DELETE"}},
	{"1E", []string{"1E"}},
	{"1.e", []string{"1.e"}},
	{"1.eCOMMIT", []string{"1.e", "COMMIT"}},
	{".5e", []string{".5e"}},
	{".5eSHUTDOWN", []string{".5e", "SHUTDOWN"}},
	{"1e+", []string{"1e+"}},
	{"1e+DELETE", []string{"1e+", "DELETE"}},
	{"1e-x", []string{"1e-", "x"}},
	{"1e+5x", []string{"1e+5", "x"}},
	{"1.5.5", []string{"1.5", ".5"}},
	{"1..5", []string{"1.", ".5"}},
	{"1.", []string{"1."}},
	{"1x", []string{"1", "x"}},
	{"1DELETE", []string{"1", "DELETE"}},
	{"1e5e5", []string{"1e5", "e5"}},
	{"x.e", []string{"x", ".", "e"}},
	{"0x", []string{"0x"}},
	{"0X1f", []string{"0X1f"}},
	{"0x1FDELETE", []string{"0x1FDE", "LETE"}},
	{"0xGO", []string{"0x", "GO"}},
	{"0x1\\\n2", nil},
	// Money literals, pseudo-columns, sqlcmd variables, labels: refused.
	{"$12.5", nil},
	{"$ 12", nil},
	{"\u20ac12", nil},
	{"\u00a512", nil},
	{"$action", nil},
	{"$(var)", nil},
	{"x: SELECT", nil},
	{"a::b", []string{"a", "::", "b"}},
	// Strings: doubled quotes, N or n prefix, line ends inside.
	{"'a''b'", []string{"'a''b'"}},
	{"N'x'n'y'", []string{"N'x'", "n'y'"}},
	{"'a\r\nb' x", []string{"'a\r\nb'", "x"}},
	{"'-- /* ' x", []string{"'-- /* '", "x"}},
	{"xN'abc'", []string{"xN", "'abc'"}},
	{"'a'", []string{"'a'"}},
	{"'a", nil},
	// Delimited identifiers: doubled closers, line ends, trailing spaces.
	{"[a]]b]", []string{"a]b"}},
	{`"a""b"`, []string{`a"b`}},
	{"[Invoice ]", []string{"Invoice"}},
	{"[Invoice   ]", []string{"Invoice"}},
	{`"Invoice "`, []string{"Invoice"}},
	{"[ Invoice]", []string{" Invoice"}},
	{"[a\r\nb]", nil},
	{"[]", nil},
	{`""`, nil},
	{"[  ]", nil},
	{"[a\tb]", nil},
	{"[a\u200bb]", nil},
	{"[a\ufeffb]", nil},
	{"[a\u00a0]", nil},
	{"[a\u3000]", nil},
	// Identifiers: @ # $ _ inside; letters of any script; marks after.
	{"a@b$c#d_1", []string{"a@b$c#d_1"}},
	{"@v$1", []string{"@v$1"}},
	{"@@ROWCOUNT", []string{"@@ROWCOUNT"}},
	{"##g", []string{"##g"}},
	{"caf\u00e9 \u5ba2\u6237", []string{"caf\u00e9", "\u5ba2\u6237"}},
	// Look-alike letters some case or width rule reads as ASCII: refused.
	{"\u017fysobjects", nil},
	{"[\u017fysobjects]", nil},
	{"\u212aeys", nil},
	{"\uff24\uff25\uff2c\uff25\uff34\uff25", nil},
	{"\U0001d403\U0001d404\U0001d40b", nil},
	{"\u0130nvoice", nil},
	{"\u0131d", nil},
	{"stra\u00dfe", []string{"stra\u00dfe"}},
	// SQL Server's whitespace, U+200B and the C0 controls included.
	{"SELECT\u200bDELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\u00a0DELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\u1680DELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\u2007DELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\u202fDELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\u205fDELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\u3000DELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\u0085DELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\x01DELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\x1fDELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\x0eDELETE", []string{"SELECT", "DELETE"}},
	{"SELECT\u200cDELETE", nil}, // zero width non-joiner: not whitespace
	{"SELECT\ufeffDELETE", nil},
	{"SELECT\u180eDELETE", nil},
}

func TestLexLikeSQLServer(t *testing.T) {
	for _, c := range disagreements {
		toks, err := lex(c.sql)
		if c.want == nil {
			if err == nil {
				t.Errorf("%q lexed as %q; want it refused", c.sql, texts(toks))
			} else if err.msg == "" {
				t.Errorf("%q: refused without a reason", c.sql)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v; want %q", c.sql, err, c.want)
			continue
		}
		if got := texts(toks); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q lexed as %q; want %q", c.sql, got, c.want)
		}
	}
}

// texts are the token texts before the EOF.
func texts(toks []token) []string {
	out := []string{}
	for _, t := range toks {
		if t.kind != tEOF {
			out = append(out, t.text)
		}
	}
	return out
}

func TestSameName(t *testing.T) {
	cases := []struct {
		a, b           string
		same, caseOnly bool
	}{
		{"orders", "orders", true, false},
		{"orders", "ORDERS", true, true},
		{"sysobjects", "\u017fysobjects", false, false},
		{"keys", "\u212aeys", false, false},
		{"caf\u00e9", "CAF\u00c9", false, false}, // only ASCII folds with certainty
		{"a", "ab", false, false},
	}
	for _, c := range cases {
		if same, caseOnly := sameName(c.a, c.b); same != c.same || caseOnly != c.caseOnly {
			t.Errorf("sameName(%q, %q) = %v, %v; want %v, %v", c.a, c.b, same, caseOnly, c.same, c.caseOnly)
		}
	}
}
