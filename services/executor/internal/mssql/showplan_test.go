package mssql

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
)

func fixture(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "showplan", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParsePlan(t *testing.T) {
	plan, err := ParsePlan(fixture(t, "select_join.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan.Statements, []string{"SELECT"}) {
		t.Errorf("statements %v", plan.Statements)
	}
	want := []PlanObject{{Database: "shop", Schema: "dbo", Table: "customers"}, {Database: "shop", Schema: "dbo", Table: "orders"}}
	if !reflect.DeepEqual(plan.Objects, want) {
		t.Errorf("objects %+v, want %+v", plan.Objects, want)
	}
	// One row per statement: several documents add up.
	plan, err = ParsePlan(fixture(t, "select_constant.xml"), fixture(t, "insert.xml"))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan.Statements, []string{"SELECT WITHOUT QUERY", "INSERT"}) {
		t.Errorf("statements %v", plan.Statements)
	}
	if _, err := ParsePlan("<html/>"); err == nil {
		t.Error("a document that is no showplan parsed")
	}
	if _, err := ParsePlan("<ShowPlanXML><unclosed>"); err == nil {
		t.Error("broken XML parsed")
	}
	if got := unbracket("[we]]ird]"); got != "we]ird" {
		t.Errorf("unbracket: %q", got)
	}
}

var planPolicy = guard.Policy{
	Readable:      []string{"dbo.*"},
	LargeTables:   map[string]string{"dbo.events": "event_date"},
	DefaultSchema: "dbo",
	Catalog:       "shop",
}

func TestCheckPlan(t *testing.T) {
	cases := []struct {
		fixture, sql string
		code         contracts.Code
	}{
		{"select_join.xml", "SELECT o.id, c.name FROM dbo.orders AS o JOIN dbo.customers AS c ON c.id = o.customer_id", ""},
		{"select_constant.xml", "SELECT 1", ""},
		{"string_split.xml", "SELECT value FROM STRING_SPLIT(N'a,b', N',')", ""},
		// The guard saw events and its bound; the plan agrees.
		{"view_over_events.xml", "SELECT * FROM dbo.events WHERE event_date >= '2026-01-01'", ""},
		// A view reads events underneath: the guard could not see a bound.
		{"view_over_events.xml", "SELECT * FROM dbo.recent_activity", contracts.RefuseLargeTableUnbounded},
		{"two_statements.xml", "SELECT 1", contracts.RefuseEngineParse},
		{"insert.xml", "SELECT 1", contracts.RefuseEngineParse},
		{"cond.xml", "SELECT 1", contracts.RefuseEngineParse},
		{"remote.xml", "SELECT * FROM dbo.orders", contracts.RefuseTableNotReadable},
		{"other_database.xml", "SELECT name FROM dbo.logins", contracts.RefuseTableNotReadable},
	}
	for _, c := range cases {
		st, ref := guardmssql.Reader{}.Read(c.sql)
		if ref != nil {
			t.Fatalf("%s: the guard refused %q: %+v", c.fixture, c.sql, ref)
		}
		plan, err := ParsePlan(fixture(t, c.fixture))
		if err != nil {
			t.Fatalf("%s: %v", c.fixture, err)
		}
		ref = CheckPlan(plan, st, planPolicy)
		switch {
		case c.code == "" && ref != nil:
			t.Errorf("%s: refused %+v", c.fixture, ref)
		case c.code != "" && (ref == nil || ref.Code != c.code):
			t.Errorf("%s: %+v, want %s", c.fixture, ref, c.code)
		}
	}
	// Objects outside the readable patterns are refused even when the
	// guard's reading named only readable ones.
	st, _ := guardmssql.Reader{}.Read("SELECT * FROM dbo.orders")
	plan := &Plan{Statements: []string{"SELECT"}, Objects: []PlanObject{{Database: "shop", Schema: "hr", Table: "salaries"}}}
	if ref := CheckPlan(plan, st, planPolicy); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
		t.Errorf("hr.salaries in the plan: %+v", ref)
	}
	// SQL Server's own catalogs in the plan (a view over sys.sql_modules,
	// a compatibility view) are readable only when a pattern names them,
	// even when every table is.
	open := planPolicy
	open.Readable = []string{"*"}
	for _, o := range []PlanObject{{Database: "shop", Schema: "sys", Table: "sysschobjs"}, {Schema: "sys", Table: "sql_modules"},
		{Database: "shop", Schema: "dbo", Table: "sysobjects"}, {Schema: "INFORMATION_SCHEMA", Table: "ROUTINES"}} {
		plan.Objects = []PlanObject{o}
		if ref := CheckPlan(plan, st, open); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
			t.Errorf("%+v in the plan under readable *: %+v", o, ref)
		}
	}
	plan.Objects = []PlanObject{{Server: "lnk", Database: "shop", Schema: "dbo", Table: "orders"}}
	if ref := CheckPlan(plan, st, planPolicy); ref == nil || ref.Code != contracts.RefuseTableNotReadable {
		t.Errorf("an object on a linked server: %+v", ref)
	}
}
