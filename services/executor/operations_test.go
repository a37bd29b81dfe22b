package executor

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/exectext"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

// chinookFile copies one of the shared Chinook files into the test's
// directory, or skips the test when the dataset is not present.
func chinookFile(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "datasets", "chinook", name))
	if err != nil {
		t.Skipf("chinook not present: %v", err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func opsDigest(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", sha256.Sum256(b))
}

func opsRequest(conn string, kind contracts.OperationsKind) contracts.ExecRequest {
	return contracts.ExecRequest{RunID: "run-1", StepID: "s1", ConnectionID: conn, Profile: contracts.ProfileAgentOperations,
		Kind: kind, TimeoutMs: 5000}
}

// Every kind on the Chinook files of SQLite and DuckDB, under the
// agent-operations profile: a kind the engine answers is stored with the
// declared columns and rendered fenced with the moment sentence; sessions
// and slow-queries are refused kind_unsupported with the engine's reason;
// the files are unchanged.
func TestOperationsOnChinook(t *testing.T) {
	for _, c := range []struct {
		engine contracts.Engine
		file   string
	}{{contracts.EngineSQLite, "chinook.sqlite"}, {contracts.EngineDuckDB, "chinook.duckdb"}} {
		t.Run(string(c.engine), func(t *testing.T) {
			path := chinookFile(t, c.file)
			before := opsDigest(t, path)
			store := memStore{}
			s := newService(t, Config{Engine: c.engine, Artifacts: store,
				Connections: []connections.Connection{{ID: "chinook", Engine: c.engine, Path: path}}})
			for _, kind := range contracts.OperationsKinds {
				reply := s.shownExec(context.Background(), contracts.OpOperations, opsRequest("chinook", kind))
				if kind == contracts.OpsSessions || kind == contracts.OpsSlowQueries {
					if reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseKindUnsupported ||
						reply.Refusal.Message == "" || !strings.Contains(reply.Refusal.Fix, "table-stats") {
						t.Errorf("%s: %+v, want kind_unsupported with a reason", kind, reply)
					}
					continue
				}
				if reply.Status != contracts.ExecOK {
					t.Fatalf("%s: %+v", kind, reply)
				}
				art, ok := store[contracts.ArtifactKey("run-1", reply.Artifact.CorrelationID)]
				if !ok || !reflect.DeepEqual(art.Columns, contracts.OperationsColumns[kind]) || art.Profile != contracts.ProfileAgentOperations || art.SQL == "" {
					t.Errorf("%s: artifact %+v", kind, art.ArtifactSummary)
				}
				if err := fencetest.Check(reply.Text, 1); err != nil || !strings.Contains(reply.Text, exectext.MomentNotHistory) {
					t.Errorf("%s: %v\n%s", kind, err, reply.Text)
				}
			}
			s.Stop(context.Background())
			if opsDigest(t, path) != before {
				t.Fatal("chinook changed")
			}
		})
	}
}

// The request's shape: an unknown kind is refused listing the six, a
// statement is refused, limit bounds the rows (default and most
// MaxOperationsRows), schema narrows the rows that name a relation and
// keeps those that name none, and an empty reading still carries its
// declared columns.
func TestOperationsRequest(t *testing.T) {
	path := chinookFile(t, "chinook.sqlite")
	store := memStore{}
	s := newService(t, Config{Artifacts: store, Connections: []connections.Connection{{ID: "chinook", Engine: contracts.EngineSQLite, Path: path}}})
	exec := func(mut func(*contracts.ExecRequest)) shownReply {
		req := opsRequest("chinook", contracts.OpsTableStats)
		mut(&req)
		return s.shownExec(context.Background(), contracts.OpOperations, req)
	}

	reply := exec(func(r *contracts.ExecRequest) { r.Kind = "locks" })
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.BadRequest ||
		!strings.Contains(reply.Refusal.Fix, "sessions, slow-queries, table-stats, index-stats, storage, health") {
		t.Errorf("unknown kind: %+v", reply)
	}
	reply = exec(func(r *contracts.ExecRequest) { r.SQL = "select 1" })
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.BadRequest {
		t.Errorf("a statement: %+v", reply)
	}

	reply = exec(func(r *contracts.ExecRequest) { r.Limit = 3 })
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 3 || !strings.Contains(reply.Text, "8 more were not (the limit)") {
		t.Errorf("limit 3: %+v\n%s", reply.Artifact, reply.Text)
	}
	for _, limit := range []int{0, -1, 1000} {
		reply = exec(func(r *contracts.ExecRequest) { r.Limit = limit })
		if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 11 {
			t.Errorf("limit %d: %+v", limit, reply)
		}
	}

	reply = exec(func(r *contracts.ExecRequest) { r.Schema = "other" })
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 0 || !strings.Contains(reply.Text, "11 rows left out as another schema's") ||
		!reflect.DeepEqual(store[contracts.ArtifactKey("run-1", reply.Artifact.CorrelationID)].Columns, contracts.OperationsColumns[contracts.OpsTableStats]) {
		t.Errorf("schema other: %+v\n%s", reply.Artifact, reply.Text)
	}
	reply = exec(func(r *contracts.ExecRequest) { r.Schema, r.Kind = "other", contracts.OpsStorage })
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 2 {
		t.Errorf("storage narrowed to other keeps the database's own rows: %+v\n%s", reply.Artifact, reply.Text)
	}
	reply = exec(func(r *contracts.ExecRequest) { r.Schema = "MAIN" })
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 11 {
		t.Errorf("schema MAIN: %+v", reply.Artifact)
	}
}

// A reading past the byte bound is refused, never cut short.
func TestOperationsOverBudget(t *testing.T) {
	path := chinookFile(t, "chinook.sqlite")
	s := newService(t, Config{Connections: []connections.Connection{{ID: "chinook", Engine: contracts.EngineSQLite, Path: path}}})
	req := opsRequest("chinook", contracts.OpsTableStats)
	req.MaxBytes = 200
	reply := s.shownExec(context.Background(), contracts.OpOperations, req)
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseReadingOverBudget || reply.Artifact != nil {
		t.Fatalf("over budget: %+v", reply)
	}
}

// agent-operations serves readings and nothing else; an engine without
// the capability refuses kind_unsupported.
func TestOperationsProfileAndCapability(t *testing.T) {
	s := newService(t, Config{})
	read := read("select 1")
	read.Profile = contracts.ProfileAgentOperations
	if reply := s.shownExec(context.Background(), contracts.OpRead, read); reply.Status != contracts.ExecRefused || reply.Refusal.Code != refuse.Unsupported {
		t.Errorf("a read under agent-operations: %+v", reply)
	}
	if reply := s.shownExec(context.Background(), contracts.OpOperations, opsRequest("demo", contracts.OpsHealth)); reply.Status != contracts.ExecOK {
		t.Errorf("health under agent-operations: %+v", reply)
	}
	// The same SQLite engine, seen only as an engine.Engine.
	srv := s.conns["demo"]
	srv.mu.Lock()
	srv.engine = plainEngine{srv.engine}
	srv.mu.Unlock()
	reply := s.shownExec(context.Background(), contracts.OpOperations, opsRequest("demo", contracts.OpsHealth))
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseKindUnsupported {
		t.Errorf("an engine without readings: %+v", reply)
	}
}

// plainEngine hides every optional capability of the engine it holds.
type plainEngine struct{ engine.Engine }

// Hostile names — the fence corpus as table and column names — reach the
// model fenced, once, in every reading.
func TestOperationsHoldTheFence(t *testing.T) {
	path := hostileSQLite(t)
	before := opsDigest(t, path)
	s := newService(t, Config{Connections: []connections.Connection{{ID: "hostile", Engine: contracts.EngineSQLite, Path: path}}})
	cases := map[string]fenceCase{}
	for _, kind := range contracts.OperationsKinds {
		cases[string(kind)] = fenceCase{contracts.OpOperations, opsRequest("hostile", kind)}
	}
	checkFenced(t, s, cases)
	reply := s.shownExec(context.Background(), contracts.OpOperations, opsRequest("hostile", contracts.OpsTableStats))
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows < 12 {
		t.Errorf("table-stats of the hostile file: %+v", reply.Artifact)
	}
	s.Stop(context.Background())
	if opsDigest(t, path) != before {
		t.Fatal("the file changed")
	}
}

// On PostgreSQL through the service: the readings answer under the
// agent-operations profile, narrowed to a schema by the server, and a
// table the readable patterns hide is never named.
func TestOperationsOnPostgres(t *testing.T) {
	dsn := pgtest.URL(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	a, b := "sonde_ops_a_"+strings.ToLower(rand.Text()[:8]), "sonde_ops_b_"+strings.ToLower(rand.Text()[:8])
	hostile := "t\"; DROP SCHEMA " + a + " CASCADE; --\nx"
	setup := []string{
		"CREATE SCHEMA " + a, "CREATE SCHEMA " + b,
		"CREATE TABLE " + a + ".orders (id int PRIMARY KEY)", "CREATE TABLE " + a + ".hidden_secrets (id int PRIMARY KEY)",
		"CREATE TABLE " + pgx.Identifier{a, hostile}.Sanitize() + " (id int PRIMARY KEY)",
		"CREATE TABLE " + b + ".other (id int PRIMARY KEY)",
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+a+", "+b+" CASCADE") })
	for _, q := range setup {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	s := newService(t, Config{Engine: contracts.EnginePostgres, Connections: []connections.Connection{
		{ID: "pg", Engine: contracts.EnginePostgres, DSN: dsn, Readable: []string{a + ".orders", a + ".t*", b + ".*"}}}})
	for _, kind := range contracts.OperationsKinds {
		req := opsRequest("pg", kind)
		req.Schema = a
		reply := s.shownExec(ctx, contracts.OpOperations, req)
		if kind == contracts.OpsSlowQueries && reply.Status == contracts.ExecRefused && reply.Refusal.Code == contracts.RefuseKindUnsupported {
			continue
		}
		if reply.Status != contracts.ExecOK {
			t.Fatalf("%s: %+v", kind, reply)
		}
		// A session's statement may name any readable table; the readings
		// of relations hold to the schema.
		if strings.Contains(reply.Text, "hidden_secrets") || kind != contracts.OpsSessions && strings.Contains(reply.Text, b+".other") {
			t.Errorf("%s: names a hidden table or another schema's:\n%s", kind, reply.Text)
		}
		if err := fencetest.Check(reply.Text, 1); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
		if kind == contracts.OpsTableStats && (reply.Artifact.Rows != 2 || !strings.Contains(reply.Text, `t"; DROP SCHEMA `+a+` CASCADE; --\nx`) ||
			!strings.Contains(reply.Text, "1 row left out: they name a relation")) {
			t.Errorf("table-stats of %s: %+v\n%s", a, reply.Artifact, reply.Text)
		}
	}
	// The schema is attacker text too: bound, never spliced.
	for _, schema := range []string{"x'; DROP SCHEMA " + a + " CASCADE; --", `"; DROP SCHEMA ` + a + ` CASCADE; --`, a + "\nnext", "$1"} {
		for _, kind := range []contracts.OperationsKind{contracts.OpsTableStats, contracts.OpsIndexStats, contracts.OpsStorage} {
			req := opsRequest("pg", kind)
			req.Schema = schema
			if reply := s.shownExec(ctx, contracts.OpOperations, req); reply.Status != contracts.ExecOK || kind != contracts.OpsStorage && reply.Artifact.Rows != 0 {
				t.Errorf("%s narrowed to %q: %+v", kind, schema, reply)
			}
		}
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = $1", a).Scan(&n); err != nil || n != 3 {
		t.Fatalf("schema %s holds %d tables (%v), want 3", a, n, err)
	}
}
