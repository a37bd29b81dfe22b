package executor

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver the fixture is written with

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
)

// TestHandoverProfileOnPostgres: the editor replay of an answer
// (agent-handover) is held to what the run's reads are held to, not merely
// to the text of the statement: a SELECT whose function writes — called, or
// behind a view — is stopped before it runs, and the table is unchanged. It reads up to 500 rows, refuses (never truncates)
// beyond, and sets no statement timeout of its own where the run's read sets
// ten seconds.
func TestHandoverProfileOnPostgres(t *testing.T) {
	dsn := pgtest.URL(t)
	ctx := context.Background()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	schema := fmt.Sprintf("handover_%d", os.Getpid())
	if _, err := admin.ExecContext(ctx, fmt.Sprintf(`
DROP SCHEMA IF EXISTS %[1]s CASCADE;
CREATE SCHEMA %[1]s;
CREATE TABLE %[1]s.counter (n int);
CREATE FUNCTION %[1]s.bump() RETURNS int LANGUAGE sql VOLATILE AS $$ INSERT INTO %[1]s.counter VALUES (1) RETURNING n $$;
CREATE VIEW %[1]s.bumped AS SELECT %[1]s.bump() AS n;
CREATE VIEW %[1]s.timeout AS SELECT current_setting('statement_timeout') AS t;`, schema)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec("DROP SCHEMA IF EXISTS " + schema + " CASCADE") })

	conn := connections.Connection{ID: "pg", Engine: contracts.EnginePostgres, DSN: dsn}
	store := memStore{}
	s := newService(t, Config{Engine: contracts.EnginePostgres, Connections: []connections.Connection{conn}, Artifacts: store})
	replay := func(q string) contracts.ExecReply {
		return s.Exec(ctx, contracts.OpRead, contracts.ExecRequest{StepID: "h1", ConnectionID: "pg",
			Profile: contracts.ProfileAgentHandover, SQL: q, TimeoutMs: 2147483647})
	}

	// The guard refuses the function by name; behind a view the check of
	// the statement's resolved objects finds it in the view's body and
	// refuses it before anything runs (the read-only transaction would
	// refuse the INSERT behind that).
	if reply := replay("SELECT " + schema + ".bump() AS n"); reply.Status == contracts.ExecOK {
		t.Fatalf("a writing function ran under agent-handover: %+v", reply)
	}
	reply := replay("SELECT n FROM " + schema + ".bumped")
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseFunctionDenied || !strings.Contains(reply.Refusal.Message, "bump") {
		t.Fatalf("a view whose function writes, under agent-handover: %+v %+v %+v", reply, reply.Refusal, reply.Error)
	}
	var n int
	if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM "+schema+".counter").Scan(&n); err != nil || n != 0 {
		t.Fatalf("counter holds %d rows (%v): the replay wrote", n, err)
	}

	timeout := func(profile contracts.Profile) any {
		t.Helper()
		reply := s.Exec(ctx, contracts.OpRead, contracts.ExecRequest{StepID: "h2", ConnectionID: "pg", Profile: profile,
			SQL: "SELECT t FROM " + schema + ".timeout", TimeoutMs: 2147483647})
		if reply.Status != contracts.ExecOK {
			t.Fatalf("%s: %+v %+v %+v", profile, reply, reply.Refusal, reply.Error)
		}
		return store[contracts.ArtifactKey("", reply.Artifact.CorrelationID)].Data[0][0]
	}
	// The session's own setting stands under agent-handover (this server's
	// is 0, none); the run's read sets ten seconds.
	var server string
	if err := admin.QueryRowContext(ctx, "SHOW statement_timeout").Scan(&server); err != nil {
		t.Fatal(err)
	}
	if got := timeout(contracts.ProfileAgentHandover); got != server {
		t.Errorf("statement_timeout under agent-handover %v, want the server's %q", got, server)
	}
	if got := timeout(contracts.ProfileAgentReadOnly); got != "10s" {
		t.Errorf("statement_timeout under agent-read-only %v, want 10s", got)
	}

	if reply := replay("SELECT g FROM generate_series(1, 500) AS g"); reply.Status != contracts.ExecOK || reply.Artifact.Rows != 500 || reply.Artifact.Truncated {
		t.Fatalf("500 rows: %+v", reply)
	}
	if reply := replay("SELECT g FROM generate_series(1, 501) AS g"); reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseResultTooLarge {
		t.Fatalf("501 rows: %+v", reply)
	}
}
