package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// pgCorpusDB creates a throwaway database holding postgrestest.Fixture on
// SONDE_TEST_PG_URL, with a least-privilege role that may only read the
// fixture's public tables, all dropped when the test ends. It returns the
// owner's DSN (to check the state) and the role's (to serve the
// connection).
func pgCorpusDB(t testing.TB) (owner, agent string) {
	t.Helper()
	base := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect to SONDE_TEST_PG_URL: %v", err)
	}
	defer root.Close(ctx)
	var b [4]byte
	_, _ = rand.Read(b[:])
	db, role := "sonde_mcp_"+hex.EncodeToString(b[:]), "sonde_mcp_agent_"+hex.EncodeToString(b[:])
	exec := func(c *pgx.Conn, sql string) {
		t.Helper()
		if _, err := c.Exec(ctx, sql); err != nil {
			t.Fatalf("%.60s: %v", sql, err)
		}
	}
	exec(root, "CREATE DATABASE "+db)
	exec(root, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	withDB := func(user string) string {
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		u.Path = "/" + db
		if user != "" {
			u.User = url.User(user)
		}
		return u.String()
	}
	owner, agent = withDB(""), withDB(role)
	oc, err := pgx.Connect(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close(ctx)
	exec(oc, postgrestest.Fixture)
	exec(oc, strings.ReplaceAll(`
REVOKE ALL ON DATABASE `+db+` FROM PUBLIC;
GRANT CONNECT ON DATABASE `+db+` TO ROLE_X;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
ALTER ROLE ROLE_X SET default_transaction_read_only = on;
GRANT USAGE ON SCHEMA public TO ROLE_X;
GRANT SELECT ON public.customers, public.orders, public.events TO ROLE_X;`, "ROLE_X", role))
	return owner, agent
}

// pgState fingerprints every row of the fixture and the relations of its
// schemas, so that any change shows.
func pgState(t testing.TB, dsn string) string {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var parts []string
	for _, q := range []string{
		"SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x.id), '')) FROM public.customers x",
		"SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x.id), '')) FROM public.orders x",
		"SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x.id), '')) FROM public.events x",
		"SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x.id), '')) FROM secret.keys x",
		"SELECT string_agg(n.nspname || '.' || c.relname, ',' ORDER BY 1) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')",
		"SELECT last_value::text FROM public.orders_id_seq",
	} {
		var s string
		if err := c.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n")
}

// TestMCPPostgresHostileCorpus sends every statement of PostgreSQL's hostile
// corpus through run_query, over both transports, to a real PostgreSQL
// connection under the corpus's own policy: each must be refused by the
// guard with exactly the corpus's code, as a tool error with a fix, and the
// database must be unchanged, rows, relations and sequences alike.
func TestMCPPostgresHostileCorpus(t *testing.T) {
	owner, agent := pgCorpusDB(t)
	pol := postgrestest.Policy()
	s := stacktest.Start(t, stacktest.Options{NoOrchestrator: true, Connections: []connections.Connection{{
		ID: "pg", Engine: contracts.EnginePostgres, DSN: agent, Readable: pol.Readable, LargeTables: pol.LargeTables}}})
	waitConnection(t, s, "pg")
	before := pgState(t, owner)
	for name, tr := range mcpTransports(s, "") {
		t.Run(name, func(t *testing.T) {
			cs := mcpConnect(t, tr())
			for _, c := range postgrestest.Hostile {
				e := wantToolError(t, c.Name, toolCall(t, cs, "run_query", map[string]any{"connection_id": "pg", "sql": c.SQL}))
				if e.Error.Code != c.Code || e.Status != http.StatusUnprocessableEntity || e.Error.Fix == "" {
					t.Errorf("%s (%.60q): %+v, want refusal %s with a fix", c.Name, c.SQL, e.Error, c.Code)
				}
			}
			// The same guard stands in front of explain_query.
			for _, c := range postgrestest.Hostile[:10] {
				wantToolError(t, c.Name, toolCall(t, cs, "explain_query", map[string]any{"connection_id": "pg", "sql": c.SQL}))
			}
			var q struct {
				RowCount int `json:"row_count"`
			}
			wantOK(t, "a valid read", toolCall(t, cs, "run_query", map[string]any{"connection_id": "pg", "sql": "SELECT id, name FROM public.customers WHERE id = $1", "params": []any{3}}), &q)
			if q.RowCount != 1 {
				t.Fatalf("valid read: %d rows", q.RowCount)
			}
		})
	}
	if after := pgState(t, owner); after != before {
		t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
	}
}

// waitConnection waits until the gateway lists connection id as available.
func waitConnection(t testing.TB, s *stacktest.Stack, id string) {
	t.Helper()
	c := s.Client("")
	deadline := time.Now().Add(30 * time.Second)
	for {
		conns, err := c.Connections(context.Background())
		if err == nil {
			for _, d := range conns {
				if d.ID == id && (d.Status == "" || d.Status == contracts.ConnectionAvailable) {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("connection %s never became available: %+v %v", id, conns, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
