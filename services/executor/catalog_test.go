package executor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/sqlitegen"
	"github.com/sondehq/sonde/services/executor/connections"
)

// manyTablesService serves a generated SQLite file of n tables (a view over
// every tenth) as connection "big", with the given readable patterns.
func manyTablesService(t *testing.T, n int, store ArtifactStore, readable ...string) *Service {
	t.Helper()
	path := filepath.Join(t.TempDir(), "big.db")
	if err := sqlitegen.Generate(context.Background(), path, sqlitegen.Spec{Tables: n, ViewEvery: 10, Rows: 1}); err != nil {
		t.Fatal(err)
	}
	conn := connections.Connection{ID: "big", Engine: contracts.EngineSQLite, Path: path, Readable: readable}
	return newService(t, Config{Connections: []connections.Connection{conn}, Artifacts: store})
}

func catalogReq(mut func(*contracts.ExecRequest)) contracts.ExecRequest {
	r := contracts.ExecRequest{RunID: "run-1", StepID: "s1", ConnectionID: "big", Profile: contracts.ProfileAgentReadOnly, TimeoutMs: 30000}
	if mut != nil {
		mut(&r)
	}
	return r
}

// TestInventoryOfAProductionSizedFile: 600 tables and 60 views are
// described in one operation at a fixed statement cost; a bound that bites
// says so and continues where it stopped.
func TestInventoryOfAProductionSizedFile(t *testing.T) {
	ctx := context.Background()
	store := memStore{}
	s := manyTablesService(t, 600, store)
	r := s.shownExec(ctx, contracts.OpInventory, catalogReq(nil))
	if r.Status != contracts.ExecOK {
		t.Fatalf("inventory: %+v", r)
	}
	inv := r.Inventory
	if inv == nil {
		art := store[contracts.ArtifactKey("run-1", r.Artifact.CorrelationID)]
		inv = art.Inventory
	}
	if inv == nil || inv.Total != 660 || len(inv.Relations) != 660 || inv.Truncated {
		t.Fatalf("inventory of 660 relations: %+v", inv)
	}
	full := r.Statements

	small := manyTablesService(t, 10, memStore{})
	rs := small.Exec(ctx, contracts.OpInventory, catalogReq(nil))
	if rs.Status != contracts.ExecOK || rs.Statements != full {
		t.Fatalf("10 tables cost %d statements, 600 cost %d: the capture's cost must not grow with the schema", rs.Statements, full)
	}

	// A bound of 100: truncated, counted, continued.
	seen := map[string]bool{}
	after := ""
	for page := 0; ; page++ {
		r := s.shownExec(ctx, contracts.OpInventory, catalogReq(func(r *contracts.ExecRequest) { r.MaxObjects, r.After = 100, after }))
		if r.Status != contracts.ExecOK || r.Inventory == nil || r.Inventory.Total != 660 {
			t.Fatalf("page %d: %+v", page, r)
		}
		for _, rel := range r.Inventory.Relations {
			if seen[rel.QualifiedName()] {
				t.Fatalf("page %d repeats %s", page, rel.QualifiedName())
			}
			seen[rel.QualifiedName()] = true
		}
		if !r.Inventory.Truncated {
			break
		}
		after = r.Inventory.Next
	}
	if len(seen) != 660 {
		t.Fatalf("pages held %d relations, want 660", len(seen))
	}
}

// TestInspectSchemaReachesEveryTable: inspect_schema on a database of any
// size answers — a page of names with how to ask for the next, never
// result_too_large — and reaches a table by name and by pattern.
func TestInspectSchemaReachesEveryTable(t *testing.T) {
	ctx := context.Background()
	s := manyTablesService(t, 600, memStore{})
	next := regexp.MustCompile(`inspect_schema (\{[^}]*\})`)
	seen := map[string]bool{}
	req := catalogReq(nil)
	for page := 0; page < 20; page++ {
		r := s.shownExec(ctx, contracts.OpSchema, req)
		if r.Status != contracts.ExecOK {
			t.Fatalf("page %d: %+v", page, r)
		}
		for _, line := range strings.Split(r.Text, "\n") {
			if strings.HasPrefix(line, `"main".`) {
				seen[line] = true
			}
		}
		m := next.FindStringSubmatch(r.Text)
		if m == nil || !strings.Contains(m[1], `"after"`) {
			break
		}
		req = catalogReq(nil)
		if err := json.Unmarshal([]byte(m[1]), &req); err != nil {
			t.Fatalf("the next-page arguments %s do not decode: %v", m[1], err)
		}
		req.ConnectionID, req.Profile, req.TimeoutMs = "big", contracts.ProfileAgentReadOnly, 30000
	}
	if len(seen) != 660 {
		t.Fatalf("following the pages reached %d relations, want 660", len(seen))
	}

	name := sqlitegen.TableName(437)
	r := s.shownExec(ctx, contracts.OpSchema, catalogReq(func(r *contracts.ExecRequest) { r.Table = strings.ToUpper(name) }))
	if r.Status != contracts.ExecOK || !strings.Contains(r.Text, `"main"."`+name+`" — table`) || !strings.Contains(r.Text, `"parent_id"`) {
		t.Fatalf("by name: %+v", r)
	}
	r = s.shownExec(ctx, contracts.OpSchema, catalogReq(func(r *contracts.ExecRequest) { r.Pattern = "*_0437" }))
	if r.Status != contracts.ExecOK || !strings.Contains(r.Text, `"main"."`+name+`" — table`) || r.Artifact.Rows != 1 {
		t.Fatalf("by pattern: %+v", r)
	}
	r = s.shownExec(ctx, contracts.OpSchema, catalogReq(func(r *contracts.ExecRequest) { r.Pattern = "%invoices%" }))
	if r.Status != contracts.ExecOK || r.Artifact.Rows < 30 || !strings.Contains(r.Text, "readable relations match") {
		t.Fatalf("a LIKE-style pattern lists its matches: %+v", r)
	}
	r = s.shownExec(ctx, contracts.OpSchema, catalogReq(func(r *contracts.ExecRequest) { r.Pattern = strings.Repeat("*a", 2000) + "b" }))
	if r.Status != contracts.ExecRefused || r.Refusal.Code != "bad_request" {
		t.Fatalf("a 4 KB pattern: %+v", r)
	}
	r = s.shownExec(ctx, contracts.OpSchema, catalogReq(func(r *contracts.ExecRequest) { r.Table = "nowhere" }))
	if r.Status != contracts.ExecOK || r.Artifact.Rows != 0 || !strings.Contains(r.Text, "no readable relation matches") {
		t.Fatalf("no match: %+v", r)
	}
}

// TestReadablePatternsHoldInTheInventory: relations the patterns hide are
// counted, never named — not as relations, not as a foreign key's target,
// not in a listing.
func TestReadablePatternsHoldInTheInventory(t *testing.T) {
	ctx := context.Background()
	// Tables 100-199 and their views readable. Each table's parent is the
	// one before it and some refer to table 0 too, so table 100's keys (and
	// others') point into the hidden half: those keys are dropped.
	s := manyTablesService(t, 200, memStore{}, "main.*_01*")
	r := s.shownExec(ctx, contracts.OpInventory, catalogReq(nil))
	if r.Status != contracts.ExecOK || r.Inventory == nil {
		t.Fatalf("inventory: %+v", r)
	}
	inv := r.Inventory
	if inv.Total != 110 || inv.Unreadable != 110 {
		t.Fatalf("total %d unreadable %d, want 110 and 110 (100 tables and 10 views each side)", inv.Total, inv.Unreadable)
	}
	hidden := sqlitegen.TableName(50)
	b, _ := json.Marshal(inv)
	for _, h := range []string{hidden, sqlitegen.TableName(99), sqlitegen.TableName(0)} {
		if strings.Contains(string(b), `"`+h+`"`) {
			t.Fatalf("the inventory names %s, which the readable patterns hide", h)
		}
	}
	r = s.shownExec(ctx, contracts.OpSchema, catalogReq(func(r *contracts.ExecRequest) { r.Table = hidden }))
	if r.Status != contracts.ExecOK || r.Artifact.Rows != 0 || strings.Contains(r.Text, hidden+`" —`) {
		t.Fatalf("a hidden table was described: %+v", r)
	}
	r = s.shownExec(ctx, contracts.OpSchema, catalogReq(func(r *contracts.ExecRequest) { r.Pattern = "*" }))
	if strings.Contains(r.Text, hidden) {
		t.Fatal("a listing names a hidden table")
	}
}

// TestLargeInventoryTravelsInItsArtifact: an inventory too large for a
// reply is left out of it and stored whole in the artifact.
func TestLargeInventoryTravelsInItsArtifact(t *testing.T) {
	ctx := context.Background()
	store := memStore{}
	s := manyTablesService(t, 1500, store)
	r := s.shownExec(ctx, contracts.OpInventory, catalogReq(func(r *contracts.ExecRequest) { r.CorrelationID = "ctx_big" }))
	if r.Status != contracts.ExecOK || r.Inventory != nil {
		t.Fatalf("a large inventory travelled in the reply (%v)", r.Inventory != nil)
	}
	art := store[contracts.ArtifactKey("run-1", "ctx_big")]
	if art.Inventory == nil || art.Inventory.Total != 1650 || len(art.Data) != 1650 {
		t.Fatalf("artifact inventory %v", art.Inventory != nil)
	}
}

// TestCheckReadsWithoutRunning: the check operation classifies a statement
// with the guard and lists its names; nothing reaches the database.
func TestCheckReadsWithoutRunning(t *testing.T) {
	ctx := context.Background()
	s := newService(t, Config{})
	req := read("DELETE FROM orders")
	r := s.shownExec(ctx, contracts.OpCheck, req)
	if r.Status != contracts.ExecOK || r.Check == nil || r.Check.ReadOnly || r.Check.Refusal == nil {
		t.Fatalf("a write: %+v", r)
	}
	req = read("SELECT o.id FROM orders AS o JOIN customers AS c ON c.id = o.customer_id")
	r = s.shownExec(ctx, contracts.OpCheck, req)
	if r.Status != contracts.ExecOK || !r.Check.ReadOnly || len(r.Check.Relations) != 2 || !r.Check.FoldCase {
		t.Fatalf("a read: %+v", r.Check)
	}
	if r.Artifact != nil || r.Statements != 0 {
		t.Fatalf("a check produced a result or sent statements: %+v", r)
	}
}

func TestGlob(t *testing.T) {
	for _, c := range []struct {
		pattern, s string
		want       bool
	}{
		{"*", "", true}, {"*", "orders", true}, {"ord*", "orders", true}, {"*ers", "orders", true},
		{"*rde*", "orders", true}, {"o?ders", "orders", true}, {"o?ders", "oders", false},
		{"orders", "orders_x", false}, {"*a*b*c", "aXbXc", true}, {"*a*b*c", "aXbXcX", false},
		{"a**b", "ab", true}, {"", "", true}, {"", "x", false},
	} {
		if got := glob(c.pattern, c.s); got != c.want {
			t.Errorf("glob(%q, %q) = %v", c.pattern, c.s, got)
		}
	}
}

// TestExplainPlansWithoutRunning: the explain operation answers the plan and
// its summary, stores the plan as the artifact, and refuses what a read is
// refused.
func TestExplainPlansWithoutRunning(t *testing.T) {
	ctx := context.Background()
	store := memStore{}
	s := newService(t, Config{Artifacts: store})
	r := s.shownExec(ctx, contracts.OpExplain, read("SELECT o.id FROM orders AS o JOIN customers AS c ON c.id = o.customer_id WHERE o.status = 'paid'"))
	if r.Status != contracts.ExecOK || r.Plan == nil || len(r.Plan.Access) == 0 || r.Artifact == nil {
		t.Fatalf("plan: %+v", r)
	}
	if !strings.Contains(r.Text, "(the statement was not run)") || !strings.Contains(r.Text, "no cost or row estimates") || r.Fingerprint == "" {
		t.Fatalf("plan text:\n%s", r.Text)
	}
	if art := store[contracts.ArtifactKey("run-1", r.Artifact.CorrelationID)]; !strings.HasPrefix(art.SQL, "EXPLAIN QUERY PLAN") || len(art.Data) == 0 {
		t.Fatalf("artifact %+v", art)
	}
	if r := s.shownExec(ctx, contracts.OpExplain, read("DELETE FROM orders")); r.Status != contracts.ExecRefused || r.Refusal.Code != contracts.RefuseNotASelect {
		t.Fatalf("a write was planned: %+v", r)
	}
}
