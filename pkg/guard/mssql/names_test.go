package mssql

import (
	"reflect"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// TestSystemTables: SQL Server's catalogs are System tables in the schema
// SQL Server resolves them to, the bare compatibility views in sys.
func TestSystemTables(t *testing.T) {
	cases := []struct {
		sql  string
		want guard.Table
	}{
		{"SELECT * FROM sysobjects", guard.Table{Schema: "sys", Name: "sysobjects", System: true}},
		{"SELECT * FROM SysComments c", guard.Table{Schema: "sys", Name: "SysComments", Alias: "c", System: true}},
		{"SELECT * FROM dbo.syslogins", guard.Table{Schema: "sys", Name: "syslogins", System: true}},
		{"SELECT * FROM [sysprocesses ]", guard.Table{Schema: "sys", Name: "sysprocesses", System: true}},
		{"SELECT * FROM shop..sysusers", guard.Table{Catalog: "shop", Schema: "sys", Name: "sysusers", System: true}},
		{"SELECT * FROM sys.objects", guard.Table{Schema: "sys", Name: "objects", System: true}},
		{"SELECT * FROM [SYS].[sql_modules]", guard.Table{Schema: "SYS", Name: "sql_modules", System: true}},
		{"SELECT * FROM information_schema.columns", guard.Table{Schema: "information_schema", Name: "columns", System: true}},
		// A user schema's table of the same name is the user's.
		{"SELECT * FROM sales.sysobjects", guard.Table{Schema: "sales", Name: "sysobjects"}},
		{"SELECT * FROM dbo.system_settings", guard.Table{Schema: "dbo", Name: "system_settings"}},
	}
	for _, c := range cases {
		st, ref := Reader{}.Read(c.sql)
		if ref != nil {
			t.Errorf("%q: %+v", c.sql, ref)
			continue
		}
		if st.Names != guard.NamesFold {
			t.Errorf("%q: names %v, want %v", c.sql, st.Names, guard.NamesFold)
		}
		if got := st.Scopes[0].Tables[0]; got != c.want {
			t.Errorf("%q: %+v, want %+v", c.sql, got, c.want)
		}
	}
	// With every table readable, the catalogs still are not, unless named.
	open := guard.Policy{DefaultSchema: "dbo", Catalog: "shop"}
	for _, sql := range []string{"SELECT * FROM sysobjects", "SELECT * FROM sys.sql_modules", "SELECT * FROM INFORMATION_SCHEMA.ROUTINES"} {
		if _, ref := guard.Check(Reader{}, sql, open); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
			t.Errorf("%q under an open policy: %+v, want table_not_readable", sql, ref)
		}
	}
	named := guard.Policy{Readable: []string{"dbo.*", "sys.sysobjects"}, DefaultSchema: "dbo", Catalog: "shop"}
	if _, ref := guard.Check(Reader{}, "SELECT name FROM sysobjects", named); ref != nil {
		t.Errorf("sysobjects named by a pattern: %+v", ref)
	}
}

// TestOuterJoinLimits: a bound in an outer join's ON limits only the side
// the join does not preserve.
func TestOuterJoinLimits(t *testing.T) {
	cases := []struct {
		sql  string
		want [][]string // the Limits of each bound, in order
	}{
		{"SELECT * FROM a LEFT JOIN b ON b.d >= 1", [][]string{{"b"}}},
		{"SELECT * FROM a x LEFT OUTER JOIN b y ON x.d >= 1 AND y.d >= 1", [][]string{{"y"}, {"y"}}},
		{"SELECT * FROM a RIGHT JOIN b ON a.d >= 1", [][]string{{"a"}}},
		{"SELECT * FROM a FULL OUTER JOIN b ON a.d >= 1", [][]string{{}}},
		{"SELECT * FROM a JOIN b ON a.d >= 1", [][]string{nil}},
		{"SELECT * FROM a INNER JOIN b ON a.d >= 1 WHERE b.d >= 1", [][]string{nil, nil}},
		{"SELECT * FROM a LEFT JOIN b ON b.id = a.id RIGHT JOIN c ON a.d >= 1", [][]string{{"a", "b"}}},
		{"SELECT * FROM a LEFT JOIN (b JOIN c ON c.d >= 1) ON b.d >= 1", [][]string{nil, {"b", "c"}}},
		{"SELECT * FROM a LEFT JOIN (SELECT 1 AS d) s ON s.d >= 1", [][]string{{"s"}}},
		{"SELECT * FROM x, a LEFT JOIN b ON b.d >= 1 RIGHT JOIN c ON a.d >= 1", [][]string{{"b"}, {"a", "b"}}},
	}
	for _, c := range cases {
		st, ref := Reader{}.Read(c.sql)
		if ref != nil {
			t.Errorf("%q: %+v", c.sql, ref)
			continue
		}
		var got [][]string
		for _, sc := range st.Scopes {
			for _, b := range sc.Bounds {
				got = append(got, b.Limits)
			}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: limits %#v, want %#v", c.sql, got, c.want)
		}
	}
}
