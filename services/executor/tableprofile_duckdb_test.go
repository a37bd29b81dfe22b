package executor

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// duckSnapshot counts the rows of every table of the file (the package
// driver, read-only), for a before-and-after comparison.
func duckSnapshot(t *testing.T, path string) map[string]int64 {
	t.Helper()
	db, err := sql.Open("duckdb", path+"?access_mode=read_only")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query("SELECT schema_name, table_name FROM duckdb_tables() WHERE NOT internal")
	if err != nil {
		t.Fatal(err)
	}
	var names [][2]string
	for rows.Next() {
		var n [2]string
		if err := rows.Scan(&n[0], &n[1]); err != nil {
			t.Fatal(err)
		}
		names = append(names, n)
	}
	rows.Close()
	out := map[string]int64{}
	for _, n := range names {
		q := `"` + strings.ReplaceAll(n[0], `"`, `""`) + `"."` + strings.ReplaceAll(n[1], `"`, `""`) + `"`
		var c int64
		if err := db.QueryRow("SELECT count(*) FROM " + q).Scan(&c); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out[q] = c
	}
	return out
}

func TestProfileChinookDuckDB(t *testing.T) {
	path := chinookCopy(t, "chinook.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	setup := []string{
		"CREATE SCHEMA s2", "CREATE TABLE s2.customer (id INTEGER)",
		"CREATE SEQUENCE ticket_seq", "CREATE MACRO twice(x) AS x * 2",
		"CREATE TABLE docs (id INTEGER, body JSON, m MAP(VARCHAR, INTEGER), l INTEGER[], s STRUCT(a INTEGER))",
		"INSERT INTO docs SELECT i, '{\"i\":' || i || '}', MAP {'k': i % 2}, [i % 3], {'a': i % 4} FROM range(100) t(i)",
		"CREATE TABLE events (id INTEGER, event_date DATE)",
		"INSERT INTO events SELECT i, DATE '2025-01-01' FROM range(100010) t(i)",
		"CREATE TABLE victim (id INTEGER)", "INSERT INTO victim VALUES (1), (2), (3)",
	}
	for i, name := range HostileTableNames {
		q := `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
		setup = append(setup, "CREATE TABLE "+q+" (v VARCHAR)", fmt.Sprintf("INSERT INTO %s VALUES ('%d')", q, i))
	}
	for _, s := range setup {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	before := duckSnapshot(t, path)
	s := newService(t, Config{Engine: contracts.EngineDuckDB, Connections: []connections.Connection{{ID: "duck", Engine: contracts.EngineDuckDB,
		Path: path, LargeTables: map[string]string{"main.events": "event_date"}}}})
	ctx := context.Background()

	tp := wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("duck", "main.Customer", contracts.DepthPattern, "")))
	if tp.Rows != 59 || len(tp.Columns) != 13 {
		t.Fatalf("Customer %+v", tp)
	}
	if c := column(tp, "Email"); c == nil || c.EmailLike == nil || *c.EmailLike != 59 || *c.Distinct != 59 {
		t.Errorf("Email %+v", c)
	}
	if !hasFinding(tp, contracts.FindingHighNull, "Company") || !hasFinding(tp, contracts.FindingSuspectedPII, "Email") {
		t.Errorf("findings %+v", tp.Findings)
	}
	// DuckDB folds names: Customer and s2.customer answer "customer"
	// equally, so it is refused, naming both.
	r := s.shownExec(ctx, contracts.OpProfile, profileReq("duck", "customer", "", ""))
	wantRefusal(t, r, string(contracts.RefuseTableSpellingAmbiguous))
	if !strings.Contains(r.Refusal.Message, `"main"."Customer"`) || !strings.Contains(r.Refusal.Message, `"s2"."customer"`) {
		t.Errorf("refusal %+v", r.Refusal)
	}
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("duck", "MAIN.customer", "", "")))
	if tp.Table.Schema != "main" || tp.Table.Name != "Customer" {
		t.Errorf("Customer resolved to %+v", tp.Table)
	}

	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("duck", "docs", contracts.DepthDistribution, "")))
	for _, c := range tp.Columns {
		if c.Distinct == nil || c.Present != 100 {
			t.Errorf("docs %+v", c)
		}
	}
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("duck", "events", "", "")))
	if !tp.Sampled || tp.Rows != engine.ProfileSampleRows {
		t.Errorf("events %+v", tp)
	}
	for _, name := range []string{"ticket_seq", "twice"} {
		wantRefusal(t, s.shownExec(ctx, contracts.OpProfile, profileReq("duck", name, "", "")), string(contracts.RefuseObjectNotProfilable))
	}

	for i, name := range HostileTableNames {
		tp := wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("duck", name, contracts.DepthPattern, "")))
		if tp.Table.Name != name || tp.Rows != 1 || tp.Columns[0].Present != 1 {
			t.Errorf("%d %q: %+v", i, name, tp)
		}
	}
	for _, spelling := range HostileSpellings {
		r := s.shownExec(ctx, contracts.OpProfile, profileReq("duck", spelling, "", ""))
		if r.Status != contracts.ExecRefused || r.Error != nil {
			t.Errorf("%q: %s %+v %+v", spelling, r.Status, r.Refusal, r.Error)
		}
	}
	s.Stop(context.Background())
	after := duckSnapshot(t, path)
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("the database changed:\n%v\n%v", before, after)
	}
}
