package sqlite

import (
	"testing"

	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

func TestCheckRead(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		code string // "" = allowed
		stmt string // the statement to run, when allowed
	}{
		{"select 1", "", "select 1"},
		{"  SELECT 1;  ", "", "  SELECT 1"},
		{"select 1;;; -- done\n", "", "select 1"},
		{"/* lead */ with x as (select 1) select * from x", "", "/* lead */ with x as (select 1) select * from x"},
		{"select ';' as semi", "", "select ';' as semi"},
		{"select 'it''s; fine'", "", "select 'it''s; fine'"},
		{`select 1 as "a;b"`, "", `select 1 as "a;b"`},
		{"select 1 as `a;b`", "", "select 1 as `a;b`"},
		{"select 1 as [a;b]", "", "select 1 as [a;b]"},
		{"select 1 -- ; delete from t\n", "", "select 1 -- ; delete from t"},
		{"select 1 /* ; delete from t */", "", "select 1 /* ; delete from t */"},
		{"select 1 /* unterminated ; delete", "", "select 1 /* unterminated ; delete"},
		{"select x'00ff'", "", "select x'00ff'"},

		{"", refuse.Empty, ""},
		{"  \n\t", refuse.Empty, ""},
		{"-- nothing\n/* at all */", refuse.Empty, ""},
		{";;", refuse.Empty, ""},

		{"select 1; delete from t", refuse.NotOneStatement, ""},
		{"select 1; create table x(a)", refuse.NotOneStatement, ""},
		{"select 1;select 2", refuse.NotOneStatement, ""},
		{"select 1; -- c\n select 2", refuse.NotOneStatement, ""},
		{"select ';'; drop table t", refuse.NotOneStatement, ""},
		{"select 'a''; drop table t; --'", "", "select 'a''; drop table t; --'"},
		{`select "a""; drop table t"`, "", `select "a""; drop table t"`},

		{"delete from t", refuse.NotASelect, ""},
		{"insert into t values (1)", refuse.NotASelect, ""},
		{"update t set a = 1", refuse.NotASelect, ""},
		{"pragma writable_schema=1", refuse.NotASelect, ""},
		{"attach database 'x.db' as x", refuse.NotASelect, ""},
		{"explain select 1", refuse.NotASelect, ""},
		{"values (1)", refuse.NotASelect, ""},
		{"(select 1)", refuse.NotASelect, ""},
		{"; select 1", refuse.NotASelect, ""},
		{"begin; select 1", refuse.NotASelect, ""},
		{"selectx 1", refuse.NotASelect, ""},

		{"select 'open", refuse.Unparsable, ""},
		{`select "open`, refuse.Unparsable, ""},
		{"select [open", refuse.Unparsable, ""},
		{"select 1\x00; delete from t", refuse.Unparsable, ""},
		{"select '\xff'", refuse.Unparsable, ""},
	} {
		stmt, ref := CheckRead(tc.sql)
		switch {
		case tc.code == "" && ref != nil:
			t.Errorf("%q refused: %v", tc.sql, ref)
		case tc.code == "" && stmt != tc.stmt:
			t.Errorf("%q: statement %q, want %q", tc.sql, stmt, tc.stmt)
		case tc.code != "" && ref == nil:
			t.Errorf("%q allowed, want %s", tc.sql, tc.code)
		case tc.code != "" && ref.Code != tc.code:
			t.Errorf("%q: code %s, want %s (%s)", tc.sql, ref.Code, tc.code, ref.Reason)
		case ref != nil && (ref.Reason == "" || ref.Fix == ""):
			t.Errorf("%q: refusal without reason or fix: %+v", tc.sql, ref)
		}
	}
}

// FuzzCheckRead: whatever the guard lets through is one statement by its
// own lexer, re-checking it changes nothing, and it never panics.
func FuzzCheckRead(f *testing.F) {
	for _, s := range []string{"select 1", "select ';'; delete", "select [a;b]", "with x as (select 1) select 1 -- ;", "select 'a''b'"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		stmt, ref := CheckRead(sql)
		if ref != nil {
			return
		}
		again, ref := CheckRead(stmt)
		if ref != nil || again != stmt {
			t.Fatalf("%q passed as %q, which re-checks as %q, %v", sql, stmt, again, ref)
		}
	})
}
