package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// server is a fixture database of its own on the server SONDE_TEST_PG_URL
// names, with an agent role granted what docs/executor-postgres.md grants.
type server struct {
	ownerDSN, agentDSN string
	agentRole          string
	admin              *pgx.Conn // on the fixture database, as the owner
}

// testServer creates the fixture database, or skips the test without a
// server — and fails it where a server was asked for (pgtest.URL), so the
// PostgreSQL tests cannot pass by skipping.
func testServer(t *testing.T) *server {
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
	suffix := hex.EncodeToString(b[:])
	db, role := "sonde_test_"+suffix, "sonde_agent_"+suffix
	// Test setup runs fixed, trusted scripts: the simple protocol is fine here.
	mustExec(t, root, "CREATE DATABASE "+db)
	mustExec(t, root, "CREATE ROLE "+role+" LOGIN")
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

	s := &server{ownerDSN: withDB(t, base, db, ""), agentDSN: withDB(t, base, db, role), agentRole: role}
	s.admin, err = pgx.Connect(ctx, s.ownerDSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.admin.Close(context.Background()) })
	mustExec(t, s.admin, postgrestest.Fixture)
	mustExec(t, s.admin, strings.ReplaceAll(agentGrants, "sonde_agent", role))
	return s
}

// agentGrants is the script of docs/executor-postgres.md, for the fixture.
const agentGrants = `
REVOKE ALL ON DATABASE CURRENT_DATABASE_PLACEHOLDER FROM PUBLIC;
GRANT CONNECT ON DATABASE CURRENT_DATABASE_PLACEHOLDER TO sonde_agent;
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
REVOKE EXECUTE ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC;
ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;
ALTER ROLE sonde_agent SET default_transaction_read_only = on;
ALTER ROLE sonde_agent SET statement_timeout = '30s';
ALTER ROLE sonde_agent CONNECTION LIMIT 16;
GRANT USAGE ON SCHEMA public TO sonde_agent;
GRANT SELECT ON public.customers, public.orders, public.events TO sonde_agent;
`

func withDB(t *testing.T, base, db, user string) string {
	t.Helper()
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

func mustExec(t *testing.T, c *pgx.Conn, sql string) {
	t.Helper()
	if strings.Contains(sql, "CURRENT_DATABASE_PLACEHOLDER") {
		sql = strings.ReplaceAll(sql, "CURRENT_DATABASE_PLACEHOLDER", c.Config().Database)
	}
	if _, err := c.Exec(context.Background(), sql); err != nil {
		t.Fatalf("setup %q: %v", firstLine(sql), err)
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

// engine opens the fixture's engine: the corpus policy, the agent role.
func (s *server) engine(t *testing.T) *Engine {
	t.Helper()
	p := postgrestest.Policy()
	e, err := New(context.Background(), connections.Connection{
		ID: "pg", Engine: contracts.EnginePostgres, DSN: s.ownerDSN, AgentDSN: s.agentDSN,
		Readable: p.Readable, LargeTables: p.LargeTables,
	}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// ownerEngine opens an engine on the fixture as its owner (no agent_dsn):
// the connection an operator who skipped the agent role would have.
func (s *server) ownerEngine(t *testing.T) *Engine {
	t.Helper()
	p := postgrestest.Policy()
	e, err := New(context.Background(), connections.Connection{
		ID: "pg-owner", Engine: contracts.EnginePostgres, DSN: s.ownerDSN,
		Readable: p.Readable, LargeTables: p.LargeTables,
	}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// state fingerprints everything a write could change: each table's row
// count and checksum, the sequence, large objects, advisory locks, the
// fixture database's relations — and files on the database host, which
// COPY … TO a file or PROGRAM writes without touching a table: the data
// directory's top level (where a relative path lands) and the sonde-*
// files of /tmp (where the corpora and the fixtures aim), each regular
// file with its size and modification time. The admin connection is the
// superuser's, so pg_ls_dir and pg_stat_file may read any path.
func (s *server) state(t *testing.T) string {
	t.Helper()
	var out string
	err := s.admin.QueryRow(context.Background(), `SELECT concat_ws(' | ',
		(SELECT count(*) || ':' || md5(string_agg(c::text, ',' ORDER BY id)) FROM public.customers c),
		(SELECT count(*) || ':' || md5(string_agg(o::text, ',' ORDER BY id)) FROM public.orders o),
		(SELECT count(*) || ':' || md5(string_agg(e::text, ',' ORDER BY id)) FROM public.events e),
		(SELECT count(*) || ':' || md5(string_agg(k::text, ',' ORDER BY id)) FROM secret.keys k),
		(SELECT last_value || ':' || is_called FROM public.orders_id_seq),
		(SELECT count(*) FROM pg_catalog.pg_largeobject_metadata),
		(SELECT count(*) FROM pg_catalog.pg_locks WHERE locktype = 'advisory'),
		(SELECT count(*) FROM pg_catalog.pg_class WHERE relname = 'stolen'),
		(SELECT md5(string_agg(c.oid::text || c.relname || c.relkind::text || c.relnatts, ',' ORDER BY c.oid))
		   FROM pg_catalog.pg_class c WHERE c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'pg_toast'::regnamespace, 'information_schema'::regnamespace)
		    AND c.relpersistence <> 't'),
		'datadir ' || (SELECT string_agg(f || CASE WHEN st.isdir THEN '/' ELSE ':' || st.size || '@' || st.modification END, ',' ORDER BY f)
		   FROM pg_catalog.pg_ls_dir('.') f, LATERAL pg_catalog.pg_stat_file(f, true) st WHERE f <> 'postmaster.pid'),
		'tmp ' || coalesce((SELECT string_agg(f || ':' || st.size || '@' || st.modification, ',' ORDER BY f)
		   FROM pg_catalog.pg_ls_dir('/tmp', true, false) f, LATERAL pg_catalog.pg_stat_file('/tmp/' || f, true) st
		  WHERE f LIKE 'sonde-%' AND NOT coalesce(st.isdir, false)), 'none'))`).Scan(&out)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func req(sql string, p contracts.Profile) engine.Request {
	lim := rowset.Limits{MaxRows: 200, MaxBytes: 256 << 10}
	if p == contracts.ProfileInspect {
		lim = rowset.Limits{MaxRows: 1000, MaxBytes: 1 << 20, Truncate: true}
	}
	return engine.Request{SQL: sql, Profile: p, Limits: lim, Timeout: 5 * time.Second}
}

func dbErr(t *testing.T, err error) *contracts.DBError {
	t.Helper()
	var e *contracts.DBError
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T), want a *contracts.DBError", err, err)
	}
	return e
}

const commitInsert = "COMMIT; INSERT INTO public.orders (customer_id, amount, created_at) VALUES (1, 1, now())"

// TestCommitInsertCannotWrite sends the stacked COMMIT; INSERT through every
// layer: the guard refuses it, and each layer below refuses it again on its
// own — the extended protocol will not run two statements, and a lone write
// meets a read-only transaction and a read-only session.
func TestCommitInsertCannotWrite(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	before := s.state(t)

	for _, p := range []contracts.Profile{contracts.ProfileAgentReadOnly, contracts.ProfileInspect} {
		_, err := e.Read(ctx, req(commitInsert, p))
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseNotOneStatement {
			t.Fatalf("Read under %s: %v, want refusal not_one_statement", p, err)
		}
		// Below the guard: the transaction layer, as the agent role and as
		// the owner.
		for _, eng := range []*Engine{e, s.ownerEngine(t)} {
			_, err = eng.run(ctx, commitInsert, nil, req("", p))
			if d := dbErr(t, err); d.Class != contracts.DBSyntax || !strings.Contains(d.Message, "42601") {
				t.Fatalf("run(COMMIT; INSERT): %+v, want 42601 syntax", d)
			}
		}
	}
	// Below the transaction: a bare pooled connection of the owner, outside
	// any BEGIN.
	owner := s.ownerEngine(t)
	c, err := owner.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Released on every path: a pool closed with a connection still out
	// waits for it, and a failure below would hang the suite.
	defer c.Release()
	_, err = query(ctx, c.Conn(), commitInsert, nil, rowset.Limits{MaxRows: 10, MaxBytes: 1 << 10})
	if d := classify(ctx, err); d.Class != contracts.DBSyntax {
		t.Fatalf("query(COMMIT; INSERT) outside a transaction: %+v, want syntax", d)
	}
	// A lone write on a session outside our transaction is still read-only.
	_, err = query(ctx, c.Conn(), "INSERT INTO public.orders (customer_id, amount, created_at) VALUES (1, 1, now())", nil,
		rowset.Limits{MaxRows: 10, MaxBytes: 1 << 10})
	if d := classify(ctx, err); d.Class != contracts.DBPermission || !strings.Contains(d.Message, "25006") {
		t.Fatalf("lone INSERT on a pooled session: %+v, want 25006 read-only", d)
	}
	// A lone COMMIT ends the read-only transaction, and nothing else is sent.
	if _, err := owner.run(ctx, "COMMIT", nil, req("", contracts.ProfileInspect)); err != nil {
		t.Fatalf("run(COMMIT): %v", err)
	}
	_, err = owner.run(ctx, "INSERT INTO public.orders (customer_id, amount, created_at) VALUES (1, 1, now())", nil, req("", contracts.ProfileInspect))
	if d := dbErr(t, err); d.Class != contracts.DBPermission {
		t.Fatalf("run(INSERT): %+v, want permission (read-only transaction)", d)
	}
	if after := s.state(t); after != before {
		t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
	}
}

// TestHostileCorpusLeavesDatabaseUnchanged runs every hostile shape twice:
// through Read, where the guard must refuse it with its code, and straight
// through the transaction layer as the agent role, where PostgreSQL's own
// means must hold. Row counts and checksums must not move.
func TestHostileCorpusLeavesDatabaseUnchanged(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	before := s.state(t)
	known := map[string]bool{}
	for _, c := range postgrestest.Hostile {
		known[c.Name] = true
	}
	for name := range uninterruptible {
		if !known[name] {
			t.Errorf("uninterruptible names %q, which the hostile corpus no longer holds", name)
		}
	}
	for _, c := range postgrestest.Hostile {
		_, err := e.Read(ctx, req(c.SQL, contracts.ProfileAgentReadOnly))
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != c.Code {
			t.Errorf("%s: Read gave %v, want refusal %s", c.Name, err, c.Code)
		}
		if strings.IndexByte(c.SQL, 0) >= 0 || uninterruptible[c.Name] {
			continue // not sendable as a query string at all, or never ends
		}
		r := req("", contracts.ProfileAgentReadOnly)
		r.Timeout = 2 * time.Second
		_, _ = e.run(ctx, c.SQL, nil, r) // whatever it answers, nothing may change
	}
	if after := s.state(t); after != before {
		t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
	}
}

// uninterruptible are the hostile shapes that, sent below the guard, would
// run for minutes in code PostgreSQL cannot interrupt (no cancel, no
// timeout, no termination reaches it): they are about time, not writes,
// and are not sent below the guard here — a backend busy in one blocks
// even DROP DATABASE (its ProcSignalBarrier) until it ends.
var uninterruptible = map[string]bool{
	"LIKE on built values": true, "ILIKE on an aggregate": true, "NOT LIKE on lpad": true,
	"LIKE ANY of built patterns": true, "strpos on built values": true, "POSITION on built values": true,
	"replace on built values": true, "split_part on built values": true, "string_to_array on built values": true,
	"translate on built values": true, "array overlap of aggregates": true, "array containment of a series": true,
	"LIKE on a CTE's built column": true, "strpos on a subquery's aggregate column": true,
	"LIKE on a recursively doubled value": true,
}

func TestTimeoutAndCancelClassified(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	slow := "SELECT count(*) FROM generate_series(1, 1000000000)"

	r := req(slow, contracts.ProfileAgentReadOnly)
	r.Timeout = 300 * time.Millisecond
	start := time.Now()
	_, err := e.Read(context.Background(), r)
	if d := dbErr(t, err); d.Class != contracts.DBTimeout || !strings.Contains(d.Message, "57014") {
		t.Fatalf("slow read: %+v, want timeout 57014", d)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the timeout took %v", el)
	}

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	_, err = e.Read(ctx, req(slow, contracts.ProfileAgentReadOnly))
	if d := dbErr(t, err); d.Class != contracts.DBCancelled {
		t.Fatalf("cancelled read: %+v, want cancelled", d)
	}
	// The pools still serve.
	if _, err := e.Read(context.Background(), req("SELECT 1", contracts.ProfileAgentReadOnly)); err != nil {
		t.Fatalf("read after a timeout and a cancel: %v", err)
	}
}

// TestSessionDoesNotLeak uses one connection over and over: what one use
// leaves in the session — settings, prepared statements, advisory locks — is
// gone at the next.
func TestSessionDoesNotLeak(t *testing.T) {
	s := testServer(t)
	cfg, err := Config(s.ownerDSN, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = 1, 1
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e := &Engine{pool: pool, policy: postgrestest.Policy(), opMem: DefaultOperationMemory}
	ctx := context.Background()
	one := func(sql string) []any {
		t.Helper()
		res, err := e.run(ctx, sql, nil, req("", contracts.ProfileInspect))
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if len(res.Rows.Rows) == 0 {
			return nil
		}
		return res.Rows.Rows[0]
	}
	pid := one("SELECT pg_backend_pid()")[0]
	one("SELECT set_config('work_mem', '77MB', false), set_config('search_path', 'secret', false)")
	one("SET SESSION CHARACTERISTICS AS TRANSACTION READ WRITE")
	one("PREPARE leak AS SELECT 1")
	one("SELECT pg_advisory_lock(42)")
	one("LISTEN leak")
	got := one(`SELECT pg_backend_pid(), current_setting('work_mem'), current_setting('search_path'),
		current_setting('transaction_read_only'), current_setting('default_transaction_read_only'),
		current_setting('statement_timeout'),
		(SELECT count(*) FROM pg_prepared_statements), (SELECT count(*) FROM pg_locks WHERE locktype = 'advisory'),
		(SELECT count(*) FROM pg_listening_channels())`)
	want := []any{pid, "4MB", "public", "on", "on", "5s", int64(0), int64(0), int64(0)}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("session state leaked: got %v, want %v", got, want)
		}
	}
}

// TestAgentRole runs every profile, inspect included, as the agent role
// when the connection has one; the role reads only what it was granted.
func TestAgentRole(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	user := func(p contracts.Profile) any {
		res, err := e.Read(ctx, req("SELECT current_user", p))
		if err != nil {
			t.Fatal(err)
		}
		return res.Rows.Rows[0][0]
	}
	if u := user(contracts.ProfileAgentReadOnly); u != s.agentRole {
		t.Fatalf("agent-read-only ran as %v, want %s", u, s.agentRole)
	}
	if u := user(contracts.ProfileInspect); u != s.agentRole {
		t.Fatalf("inspect ran as %v, want the agent_dsn's %s", u, s.agentRole)
	}
	res, err := e.Read(ctx, req("SELECT count(*) FROM orders", contracts.ProfileAgentReadOnly))
	if err != nil || res.Rows.Rows[0][0] != int64(500) {
		t.Fatalf("agent count(orders): %v %v", res.Rows, err)
	}
	// Below the guard, the role itself holds the line.
	for _, q := range []string{"SELECT * FROM secret.keys", "SELECT pg_read_file('/etc/hostname')", "COPY (SELECT 1) TO PROGRAM 'true'"} {
		_, err := e.run(ctx, q, nil, req("", contracts.ProfileAgentReadOnly))
		if d := dbErr(t, err); d.Class != contracts.DBPermission {
			t.Errorf("agent %q: %+v, want permission", q, d)
		}
	}
}

func TestReadValuesAndLimits(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	res, err := e.Read(ctx, req(`SELECT 1::int2 AS i2, 2::int4 AS i4, 3::int8 AS i8, 12.50::numeric(10,2) AS n, 0.5::float8 AS f,
		'NaN'::float8 AS nan, true AS b, NULL::text AS nul, 'x'::text AS t, '2024-03-01'::date AS d,
		'2024-03-01 10:00:00+00'::timestamptz AT TIME ZONE 'UTC' AS ts, '{"a": [1, 2.5]}'::jsonb AS j,
		'\xdeadbeef'::bytea AS by, ARRAY[1, 2] AS arr, interval '1 day 2 hours' AS iv`, contracts.ProfileAgentReadOnly))
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows.Rows[0]
	want := map[int]any{0: int64(1), 1: int64(2), 2: int64(3), 4: 0.5, 5: "NaN", 6: true, 7: nil, 8: "x",
		9: "2024-03-01", 10: "2024-03-01 10:00:00", 13: "{1,2}", 14: "1 day 02:00:00"}
	for i, w := range want {
		if row[i] != w {
			t.Errorf("column %s = %#v, want %#v", res.Rows.Columns[i].Name, row[i], w)
		}
	}
	if n, ok := row[3].(interface{ String() string }); !ok || n.String() != "12.50" {
		t.Errorf("numeric = %#v, want exact 12.50", row[3])
	}
	if b, ok := row[12].(rowset.Blob); !ok || b.Hex != "deadbeef" {
		t.Errorf("bytea = %#v", row[12])
	}
	if res.Rows.Columns[3].Type != "numeric" || res.Rows.Columns[9].Type != "date" {
		t.Errorf("column types %+v", res.Rows.Columns)
	}

	// Agent profiles refuse an oversize result; inspect truncates it.
	_, err = e.Read(ctx, req("SELECT * FROM orders", contracts.ProfileAgentReadOnly))
	var tooLarge *rowset.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.By != rowset.ByRows {
		t.Fatalf("500 rows under agent-read-only: %v, want TooLargeError by rows", err)
	}
	r := req("SELECT * FROM orders", contracts.ProfileInspect)
	r.Limits.MaxRows = 100
	res, err = e.Read(ctx, r)
	if err != nil || len(res.Rows.Rows) != 100 || !res.Rows.Truncated {
		t.Fatalf("inspect: %d rows, truncated %v, err %v", len(res.Rows.Rows), res.Rows != nil && res.Rows.Truncated, err)
	}
	// The connection the truncation cut short was not reused in a bad state.
	if _, err := e.Read(ctx, req("SELECT 1", contracts.ProfileInspect)); err != nil {
		t.Fatal(err)
	}
	// Parameters are bound, not spliced.
	r = req("SELECT name FROM customers WHERE id = $1", contracts.ProfileAgentReadOnly)
	r.Params = []any{3}
	if res, err = e.Read(ctx, r); err != nil || res.Rows.Rows[0][0] != "customer 3" {
		t.Fatalf("bound parameter: %v %v", res.Rows, err)
	}
}

func TestValidAnalyticsRun(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	for _, q := range postgrestest.Valid {
		if _, err := e.Read(context.Background(), req(q, contracts.ProfileInspect)); err != nil {
			t.Errorf("%v\n%s", err, q)
		}
	}
}

func TestErrorsClassified(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	cases := []struct {
		sql   string
		class contracts.DBErrorClass
		raw   bool // below the guard
	}{
		{"SELECT nope FROM orders", contracts.DBMissingObject, false},
		{"SELECT * FROM public.missing", contracts.DBMissingObject, true},
		{"SELEC 1", contracts.DBSyntax, true},
		{"SELECT 1 / 0", contracts.DBOther, false},
		{"SELECT repeat('x', 1 << 30)", contracts.DBResource, false},
	}
	for _, c := range cases {
		var err error
		if c.raw {
			_, err = s.ownerEngine(t).run(ctx, c.sql, nil, req("", contracts.ProfileInspect))
		} else {
			_, err = e.Read(ctx, req(c.sql, contracts.ProfileInspect))
		}
		if d := dbErr(t, err); d.Class != c.class || !strings.Contains(d.Message, "SQLSTATE") {
			t.Errorf("%s: %+v, want %s with the engine's text", c.sql, d, c.class)
		}
	}
	// A server that is not there is unavailable.
	_, err := New(ctx, connections.Connection{ID: "x", Engine: contracts.EnginePostgres,
		DSN: "postgres://postgres@127.0.0.1:1/postgres?sslmode=disable&connect_timeout=2"}, engine.Options{})
	if d := dbErr(t, err); d.Class != contracts.DBUnavailable {
		t.Fatalf("unreachable server: %+v", d)
	}
}
