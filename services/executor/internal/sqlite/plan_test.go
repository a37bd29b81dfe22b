package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

func planReq(q string) engine.Request {
	return engine.Request{SQL: q, Limits: refuseLimits, Timeout: 5 * time.Second}
}

func mustPlan(t *testing.T, e *Engine, q string) (Result, contracts.PlanSummary) {
	t.Helper()
	res, sum, err := e.Plan(context.Background(), planReq(q))
	if err != nil {
		t.Fatalf("Plan(%q): %v", q, err)
	}
	if res.Statements != 1 || res.SQL != "EXPLAIN QUERY PLAN "+strings.TrimRight(q, "; ") || res.Fingerprint == "" {
		t.Fatalf("Plan(%q): statements %d, SQL %q, fingerprint %q", q, res.Statements, res.SQL, res.Fingerprint)
	}
	var names []string
	for _, c := range res.Rows.Columns {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "id,parent,detail" || len(res.Rows.Rows) == 0 {
		t.Fatalf("Plan(%q): columns %v, %d rows", q, names, len(res.Rows.Rows))
	}
	if sum.Engine != contracts.EngineSQLite || sum.Cost != nil || sum.Rows != nil || !strings.Contains(sum.Note, "no cost or row estimates") {
		t.Fatalf("Plan(%q): summary %+v", q, sum)
	}
	return res, sum
}

func access(sum contracts.PlanSummary) string {
	var parts []string
	for _, a := range sum.Access {
		s := a.Relation + ":" + string(a.Access)
		if a.Index != "" {
			s += ":" + a.Index
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " ")
}

func TestPlanAccessKinds(t *testing.T) {
	e := open(t, fixture(t))
	for _, c := range []struct{ sql, access, uninterpreted string }{
		{"SELECT name FROM t", "t:full scan", ""},
		{"SELECT i FROM n WHERE i = 5", "n:index:n_i", ""},
		{"SELECT name FROM t WHERE id = 2;", "t:index:INTEGER PRIMARY KEY", ""},
		{"SELECT t.name, n.i FROM t JOIN n ON n.i = t.id", "n:full scan t:index:INTEGER PRIMARY KEY", ""},
		{"SELECT id FROM v", "t:full scan", ""},
		{"SELECT * FROM t WHERE id = 1 UNION ALL SELECT * FROM t", "t:mixed:INTEGER PRIMARY KEY",
			"COMPOUND QUERY|LEFT-MOST SUBQUERY|UNION ALL"},
		{"SELECT name FROM t ORDER BY name", "t:full scan", "USE TEMP B-TREE FOR ORDER BY"},
		{"SELECT a.name FROM t a JOIN t b ON b.name = a.name", "t:mixed:automatic", "BLOOM FILTER ON b (name=?)"},
		{"WITH c AS MATERIALIZED (SELECT name FROM t) SELECT name FROM c", "t:full scan", "MATERIALIZE c|SCAN c"},
	} {
		_, sum := mustPlan(t, e, c.sql)
		if got := access(sum); got != c.access {
			t.Errorf("%q: access %q, want %q", c.sql, got, c.access)
		}
		if got := strings.Join(sum.Uninterpreted, "|"); got != c.uninterpreted {
			t.Errorf("%q: uninterpreted %q, want %q", c.sql, got, c.uninterpreted)
		}
	}
}

// TestPlanNeverRuns: a statement that fails when it runs, and one that
// would run for very long, both plan at once.
func TestPlanNeverRuns(t *testing.T) {
	e := open(t, fixture(t))
	failing := "SELECT abs(-9223372036854775807 - id) FROM t"
	if _, err := read(t, e, failing); err == nil {
		t.Fatal("the failing statement did not fail when read")
	}
	mustPlan(t, e, failing)
	start := time.Now()
	mustPlan(t, e, "SELECT count(*) FROM n a, n b, n c, n d, n f")
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("planning took %v: the statement ran", el)
	}
}

// TestPlanGuardedAsRead: what Read refuses, Plan refuses with the same code
// and sends nothing; a caller cannot write the EXPLAIN itself.
func TestPlanGuardedAsRead(t *testing.T) {
	path := fixture(t)
	e, err := Open(context.Background(), path, guard.Policy{Readable: []string{"main.n"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, q := range []string{
		"DELETE FROM n",
		"SELECT name FROM t",
		"SELECT id FROM v",
		"SELECT i FROM n WHERE i IN (SELECT id FROM t)",
		"EXPLAIN QUERY PLAN SELECT i FROM n",
		"EXPLAIN SELECT i FROM n",
		"SELECT i FROM n; DELETE FROM n",
	} {
		_, readErr := read(t, e, q)
		var want *contracts.Refusal
		if !errors.As(readErr, &want) {
			t.Fatalf("%q: Read gave %v, want a refusal", q, readErr)
		}
		res, _, err := e.Plan(context.Background(), planReq(q))
		var got *contracts.Refusal
		if !errors.As(err, &got) || got.Code != want.Code || res.Statements != 0 {
			t.Errorf("%q: Plan gave %v after %d statements, want refusal %s", q, err, res.Statements, want.Code)
		}
	}
	ok, _ := mustPlan(t, e, "SELECT i FROM n")
	r := planReq("select i  from n")
	r.Failed = []string{ok.Fingerprint}
	_, _, err = e.Plan(context.Background(), r)
	var ref *contracts.Refusal
	if !errors.As(err, &ref) || ref.Code != contracts.RefuseAlreadyFailed {
		t.Errorf("repeated: %v", err)
	}
	if res, err := read(t, e, "SELECT i FROM n"); res.Fingerprint != ok.Fingerprint {
		t.Errorf("Read fingerprint %q (%v), Plan's %q", res.Fingerprint, err, ok.Fingerprint)
	}
}

// TestPlanHostileCorpus sends every hostile shape through Plan: the guard's
// refusals are Read's, and the file and its canary table do not change.
func TestPlanHostileCorpus(t *testing.T) {
	path := fixture(t)
	before := digest(t, path)
	e := open(t, path)
	for _, c := range hostileShapes {
		res, _, err := e.Plan(context.Background(), planReq(c.sql))
		if strings.HasPrefix(c.want, "ran:") {
			continue // a limit SQLite holds while the statement runs; a plan runs nothing
		}
		if code, atRunTime := strings.CutPrefix(c.want, "db:"); !atRunTime {
			var ref *contracts.Refusal
			if !errors.As(err, &ref) || string(ref.Code) != code || res.Statements != 0 {
				t.Errorf("%q: Plan gave %v after %d statements, want refusal %s", c.sql, err, res.Statements, code)
			}
		}
	}
	e.Close()
	if after := digest(t, path); after != before {
		t.Fatal("the database file changed")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var rows int
	if err := db.QueryRow("SELECT count(*) FROM t").Scan(&rows); err != nil || rows != 3 {
		t.Fatalf("canary t holds %d rows (%v), want 3", rows, err)
	}
}

// TestPlanUnderAuthorizer: SQLite compiles the statement again to plan it,
// and the statement's authorizer holds while it does — EXPLAIN QUERY PLAN of
// an unreadable table, sent past the guard, is denied by SQLite itself.
func TestPlanUnderAuthorizer(t *testing.T) {
	path := fixture(t)
	e, err := Open(context.Background(), path, guard.Policy{Readable: []string{"main.n"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	db, _ := e.current(context.Background())
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, err = e.run(context.Background(), conn, explainPrefix+"SELECT name FROM t", nil, nil, refuseLimits, 5*time.Second)
	if d := wantClass(t, err, contracts.DBPermission); !strings.Contains(d.Message, "authorizer denied") {
		t.Fatalf("%s, want the authorizer's denial", d.Message)
	}
	if _, err := e.run(context.Background(), conn, explainPrefix+"SELECT i FROM n", nil, nil, refuseLimits, 5*time.Second); err != nil {
		t.Fatalf("a readable table: %v", err)
	}
}
