package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

func opsReq() engine.Request { return engine.Request{Timeout: 10 * time.Second} }

// opsEngine opens an engine on the fixture as the agent role, with the
// readable patterns given.
func (s *server) opsEngine(t *testing.T, readable ...string) *Engine {
	t.Helper()
	e, err := New(context.Background(), connections.Connection{
		ID: "pg-ops", Engine: contracts.EnginePostgres, DSN: s.ownerDSN, AgentDSN: s.agentDSN, Readable: readable,
	}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// loadChinook fills the fixture database with the shared Chinook script
// (from its \c line on: the script's own CREATE DATABASE is not run), or
// skips the test when the dataset is not present.
func (s *server) loadChinook(t *testing.T) {
	t.Helper()
	src := filepath.Join("..", "..", "..", "..", "..", "shared", "datasets", "chinook", "chinook_postgres.sql")
	data, err := os.ReadFile(src)
	if err != nil {
		t.Skipf("chinook not present: %v", err)
	}
	script := string(data)
	_, after, ok := strings.Cut(script, `\c chinook;`)
	if !ok {
		t.Fatal("the Chinook script has no \\c chinook; line")
	}
	mustExec(t, s.admin, after)
	mustExec(t, s.admin, "ANALYZE")
}

func marshal(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// Each kind on Chinook: the declared width, rows where the server has
// them, slow-queries answered or refused with the reason the server gives
// (pg_stat_statements not installed, or installed but not preloaded).
func TestOperationsChinook(t *testing.T) {
	s := testServer(t)
	s.loadChinook(t)
	e := s.opsEngine(t)
	for _, kind := range contracts.OperationsKinds {
		r, err := e.Operations(context.Background(), opsReq(), kind)
		if kind == contracts.OpsSlowQueries {
			var ku *engine.KindUnsupportedError
			if !errors.As(err, &ku) || !strings.Contains(ku.Reason, "pg_stat_statements extension is not installed") {
				t.Errorf("slow-queries without the extension: %v", err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v %s", kind, err, marshal(err))
		}
		if len(r.Rows) != len(r.Schemas) || r.Statements == 0 {
			t.Fatalf("%s: %d rows, %d schemas, %d statements", kind, len(r.Rows), len(r.Schemas), r.Statements)
		}
		for _, row := range r.Rows {
			if len(row) != len(contracts.OperationsColumns[kind]) {
				t.Fatalf("%s: row %v, want %d values", kind, row, len(contracts.OperationsColumns[kind]))
			}
		}
		t.Logf("%s: %v", kind, r.Rows[:min(3, len(r.Rows))])
	}
	// The fixture's admin session is another role's: without
	// pg_read_all_stats it is listed, its statement not shown.
	sessions, err := e.Operations(context.Background(), opsReq(), contracts.OpsSessions)
	if err != nil || len(sessions.Rows) == 0 || sessions.Rows[0][3] != "<insufficient privilege>" {
		t.Errorf("sessions as an unprivileged role: %v %v", sessions.Rows, err)
	}
	stats, err := e.Operations(context.Background(), opsReq(), contracts.OpsTableStats)
	if err != nil {
		t.Fatal(err)
	}
	var track []any
	for _, row := range stats.Rows {
		if row[1] == "track" {
			track = row
		}
	}
	// n_live_tup is an estimate the statistics system updates on its own
	// schedule: present, not exact.
	if track == nil || track[2] == nil || track[2].(int64) <= 0 || track[3].(int64) <= 0 {
		t.Errorf("table-stats: track is %v, want its live rows and its bytes", track)
	}
	idx, err := e.Operations(context.Background(), opsReq(), contracts.OpsIndexStats)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(marshal(idx.Rows), `"public","track","track_pkey",true`) {
		t.Errorf("index-stats lacks track_pkey as unique: %s", marshal(idx.Rows))
	}
	health, err := e.Operations(context.Background(), opsReq(), contracts.OpsHealth)
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]any{}
	for _, row := range health.Rows {
		checks[row[0].(string)] = row[1]
	}
	for _, c := range []string{"version", "uptime_s", "connections", "cache_hit_ratio", "database_bytes", "in_recovery"} {
		if checks[c] == nil {
			t.Errorf("health: %s is %v", c, checks[c])
		}
	}
	if checks["in_recovery"] != "false" {
		t.Errorf("in_recovery %v", checks["in_recovery"])
	}

	// Installed but not preloaded: refused with that reason; preloaded
	// (a cluster started with shared_preload_libraries): rows.
	// The role set-up revokes EXECUTE on functions created later, an
	// extension's included (docs/executor-postgres.md): granted by name.
	mustExec(t, s.admin, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; GRANT EXECUTE ON FUNCTION pg_stat_statements(boolean) TO "+s.agentRole)
	r, err := e.Operations(context.Background(), opsReq(), contracts.OpsSlowQueries)
	var ku *engine.KindUnsupportedError
	switch {
	case errors.As(err, &ku):
		if !strings.Contains(ku.Reason, "shared_preload_libraries") {
			t.Errorf("slow-queries, installed: %v", ku)
		}
		t.Log("pg_stat_statements is not preloaded on this server: the refusal was tested, not the rows")
	case err != nil:
		t.Fatalf("slow-queries: %v", err)
	default:
		for _, row := range r.Rows {
			if len(row) != len(contracts.OperationsColumns[contracts.OpsSlowQueries]) {
				t.Fatalf("slow-queries: row %v", row)
			}
		}
		t.Logf("slow-queries: %d rows", len(r.Rows))
	}
}

// A session blocked by another's lock names the blocker; a statement that
// names a hidden table is withheld; hidden tables and their indexes are
// never named in any reading.
func TestOperationsBlockedSessionAndHidden(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, "GRANT pg_read_all_stats TO "+s.agentRole)
	e := s.opsEngine(t, "public.customers", "public.orders", "public.events")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	connect := func() *pgx.Conn {
		c, err := pgx.Connect(ctx, s.ownerDSN)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	holder, waiter, reader := connect(), connect(), connect()
	var holderPID, waiterPID int
	holder.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&holderPID)
	waiter.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&waiterPID)
	mustExec(t, holder, "BEGIN")
	mustExec(t, holder, "LOCK TABLE public.orders IN ACCESS EXCLUSIVE MODE")
	// The reader stays idle in a transaction whose last statement read the
	// hidden table.
	mustExec(t, reader, "BEGIN")
	mustExec(t, reader, "SELECT k FROM secret.keys")
	done := make(chan error, 1)
	go func() {
		_, err := waiter.Exec(ctx, "SELECT count(*) FROM public.orders")
		done <- err
	}()
	defer func() {
		holder.Exec(context.Background(), "ROLLBACK")
		<-done
	}()

	var blocked []any
	for deadline := time.Now().Add(10 * time.Second); blocked == nil && time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r, err := e.Operations(ctx, opsReq(), contracts.OpsSessions)
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range r.Rows {
			if row[0] == strconv.Itoa(waiterPID) && row[6] != nil {
				blocked = row
			}
		}
		if blocked != nil {
			if r.Withheld == 0 || strings.Contains(marshal(r.Rows), "secret") {
				t.Errorf("the statement naming secret.keys was not withheld: %s (withheld %d)", marshal(r.Rows), r.Withheld)
			}
		}
	}
	if blocked == nil {
		t.Fatal("no session shows as blocked")
	}
	if blocked[6] != strconv.Itoa(holderPID) || !strings.HasPrefix(blocked[5].(string), "Lock") || blocked[2] != "active" {
		t.Errorf("blocked session %v, want blocked_by %d waiting on a lock", blocked, holderPID)
	}

	for _, kind := range []contracts.OperationsKind{contracts.OpsTableStats, contracts.OpsIndexStats, contracts.OpsStorage} {
		r, err := e.Operations(ctx, opsReq(), kind)
		if err != nil {
			t.Fatalf("%s: %v %s", kind, err, marshal(err))
		}
		if strings.Contains(marshal(r.Rows), "secret") || strings.Contains(marshal(r.Rows), "keys") || r.Hidden == 0 {
			t.Errorf("%s names the hidden table or does not count it (%d): %s", kind, r.Hidden, marshal(r.Rows))
		}
	}
	narrow := opsReq()
	narrow.Schema = "secret"
	r, err := e.Operations(ctx, narrow, contracts.OpsTableStats)
	if err != nil || len(r.Rows) != 0 || r.Hidden != 1 {
		t.Errorf("narrowed to the hidden schema: %v (hidden %d) %v", r.Rows, r.Hidden, err)
	}
}

// Hostile relation and index names come back as data, and the database is
// unchanged by the readings.
func TestOperationsHostileNames(t *testing.T) {
	s := testServer(t)
	hostile := "x\"; DROP TABLE public.orders; --\nnext line"
	ident := pgx.Identifier{"public", hostile}.Sanitize()
	mustExec(t, s.admin, "CREATE TABLE "+ident+" (a int)")
	mustExec(t, s.admin, "CREATE INDEX "+pgx.Identifier{hostile + " ix"}.Sanitize()+" ON "+ident+" (a)")
	before := s.state(t)
	e := s.opsEngine(t, "public.*")
	for _, kind := range contracts.OperationsKinds {
		r, err := e.Operations(context.Background(), opsReq(), kind)
		if kind == contracts.OpsSlowQueries {
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v %s", kind, err, marshal(err))
		}
		if kind == contracts.OpsTableStats || kind == contracts.OpsIndexStats || kind == contracts.OpsStorage {
			if !strings.Contains(marshal(r.Rows), marshal(hostile)[1:len(marshal(hostile))-1]) {
				t.Errorf("%s: the hostile name is not carried as written: %s", kind, marshal(r.Rows))
			}
		}
	}
	if after := s.state(t); after != before {
		t.Fatalf("the database changed:\n%s\n%s", before, after)
	}
}

// A costly statement that names a hidden table is left out of
// slow-queries and counted (where pg_stat_statements is preloaded; the
// refusal otherwise, as TestOperationsChinook checks).
func TestOperationsSlowQueriesHidden(t *testing.T) {
	s := testServer(t)
	// The role set-up revokes EXECUTE on functions created later, an
	// extension's included (docs/executor-postgres.md): granted by name.
	mustExec(t, s.admin, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; GRANT EXECUTE ON FUNCTION pg_stat_statements(boolean) TO "+s.agentRole)
	mustExec(t, s.admin, "SELECT count(*) FROM secret.keys")
	mustExec(t, s.admin, "SELECT count(*) FROM public.orders")
	mustExec(t, s.admin, "GRANT pg_read_all_stats TO "+s.agentRole)
	e := s.opsEngine(t, "public.*")
	r, err := e.Operations(context.Background(), opsReq(), contracts.OpsSlowQueries)
	var ku *engine.KindUnsupportedError
	if errors.As(err, &ku) {
		t.Skipf("pg_stat_statements is not preloaded here: %s", ku.Reason)
	}
	if err != nil {
		t.Fatal(err)
	}
	all := marshal(r.Rows)
	if strings.Contains(all, "secret") || r.Hidden == 0 || !strings.Contains(all, "public.orders") {
		t.Errorf("slow-queries (hidden %d): %s", r.Hidden, all)
	}
	for _, row := range r.Rows {
		if calls, _ := row[1].(int64); calls <= 0 {
			t.Errorf("row %v: no calls", row)
		}
	}
}
