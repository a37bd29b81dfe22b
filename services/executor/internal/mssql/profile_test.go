package mssql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	guardmssql "github.com/sondehq/sonde/pkg/guard/mssql"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// The composed T-SQL: brackets around each segment (a ] doubled),
// COUNT_BIG, no distinct count of a type that cannot be compared, both
// shapes with LIKE, TOP for a sample; and, for hostile names, one SELECT
// reading that table and no other, as the T-SQL reader reads it.
func TestProfileComposedTSQL(t *testing.T) {
	p := engine.ProfileRequest{
		Relation: contracts.Relation{Schema: "dbo", Name: "Cust]omer"},
		Depth:    contracts.DepthPattern,
		Columns: []contracts.RelationColumn{{Name: "Id", Type: "int"}, {Name: "Email", Type: "nvarchar(60)"},
			{Name: "Doc", Type: "xml"}, {Name: "Notes", Type: "ntext"}},
	}
	plan := engine.ComposeProfile(Dialect, p, 0)
	want := "SELECT COUNT_BIG(*) AS n,\n" +
		"       COUNT_BIG([Id]) AS p0,\n" +
		"       COUNT_BIG(DISTINCT [Id]) AS d0,\n" +
		"       COUNT_BIG([Email]) AS p1,\n" +
		"       COUNT_BIG(DISTINCT [Email]) AS d1,\n" +
		"       COUNT_BIG(CASE WHEN [Email] LIKE N'%_@_%._%' THEN 1 END) AS e1,\n" +
		"       COUNT_BIG(CASE WHEN [Email] LIKE N'%[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]%' THEN 1 END) AS g1,\n" +
		"       COUNT_BIG([Doc]) AS p2,\n" +
		"       COUNT_BIG([Notes]) AS p3,\n" +
		"       COUNT_BIG(CASE WHEN [Notes] LIKE N'%_@_%._%' THEN 1 END) AS e3,\n" +
		"       COUNT_BIG(CASE WHEN [Notes] LIKE N'%[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]%' THEN 1 END) AS g3\n" +
		"  FROM [dbo].[Cust]]omer]"
	if plan.SQL != want {
		t.Errorf("composed:\n%s\nwant:\n%s", plan.SQL, want)
	}
	sampled := engine.ComposeProfile(Dialect, engine.ProfileRequest{Relation: p.Relation, Columns: p.Columns[:2]}, engine.ProfileSampleRows)
	if !strings.HasSuffix(sampled.SQL, "FROM (SELECT TOP (100000) [Id], [Email] FROM [dbo].[Cust]]omer]) AS sampled") {
		t.Errorf("sampled:\n%s", sampled.SQL)
	}

	// (A line break is left out: the T-SQL reader refuses invisible
	// characters in a delimited identifier, a caution of its own.)
	for _, name := range []string{`x]; DROP TABLE victim; --`, `a"b`, `[x]`, `x.y`, `ü'`, `--`, `/*`} {
		rel := contracts.Relation{Schema: `s]; DELETE FROM t; --`, Name: name}
		for _, sample := range []int64{0, 10} {
			plan := engine.ComposeProfile(Dialect, engine.ProfileRequest{Relation: rel, Depth: contracts.DepthPattern,
				Columns: []contracts.RelationColumn{{Name: `c]; DROP TABLE t; --`, Type: "varchar(10)"}}}, sample)
			st, ref := guardmssql.Reader{}.Read(batch(plan.SQL))
			if ref != nil {
				t.Fatalf("%q: %v\n%s", name, ref, plan.SQL)
			}
			var tables []string
			for _, sc := range st.Scopes {
				for _, tb := range sc.Tables {
					tables = append(tables, tb.Schema+"."+tb.Name)
				}
			}
			if len(tables) != 1 || tables[0] != rel.Schema+"."+name {
				t.Errorf("%q: reads %q\n%s", name, tables, plan.SQL)
			}
		}
	}
}

// TestLiveProfile runs the composed profile on the live server, when there
// is one (SONDE_TEST_MSSQL_URL).
func TestLiveProfile(t *testing.T) {
	db, dsn := live(t)
	ctx := context.Background()
	e, err := Open(ctx, Config{DSN: dsn, Readable: []string{"sonde_test.*"}, LargeTables: map[string]string{"sonde_test.events": "event_date"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	before := checksum(t, db)
	req := engine.Request{Profile: contracts.ProfileAgentReadOnly, Timeout: 10 * time.Second}
	cat, err := e.Describe(ctx, req, []contracts.Relation{{Schema: "sonde_test", Name: "orders"}, {Schema: "sonde_test", Name: "events"}})
	if err != nil || len(cat.Relations) != 2 {
		t.Fatalf("describe: %v", err)
	}
	orders, events := cat.Relations[0], cat.Relations[1]
	res, err := e.Profile(ctx, req, engine.ProfileRequest{Relation: orders, Columns: orders.Columns, Depth: contracts.DepthPattern})
	if err != nil || res.Rows != 3 || res.Sampled || res.Columns[2].Present != 2 || res.Columns[2].EmailLike == nil {
		t.Fatalf("orders %+v %v", res, err)
	}
	res, err = e.Profile(ctx, req, engine.ProfileRequest{Relation: events, Columns: events.Columns, Depth: contracts.DepthDistribution})
	if err != nil || !res.Sampled || res.Rows != 2 {
		t.Fatalf("events %+v %v", res, err)
	}
	if _, err := e.Unprofilable(ctx, req); err != nil {
		t.Errorf("unprofilable: %v", err)
	}
	if checksum(t, db) != before {
		t.Error("the table changed")
	}
}
