package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/contracts"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

func suffix() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// TestCatalogListsCoverServer holds the guard's embedded lists to the
// server's own catalog: every pg_catalog relation resolves to pg_catalog
// when written unqualified, and every built-in that attribute notation can
// call is either allowlisted or refused in attribute position.
func TestCatalogListsCoverServer(t *testing.T) {
	s := testServer(t)
	ctx := context.Background()
	rows, err := s.admin.Query(ctx, `SELECT relname::text, relkind::text FROM pg_catalog.pg_class WHERE relnamespace = 'pg_catalog'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	listed := pgguard.CatalogRelations()
	n := 0
	for rows.Next() {
		var name, kind string
		if err := rows.Scan(&name, &kind); err != nil {
			t.Fatal(err)
		}
		n++
		if !pgguard.CatalogRelation(name) {
			t.Errorf("pg_catalog.%s is not read as pg_catalog's when unqualified", name)
		}
		if strings.Contains("rvmpfS", kind) && !slices.Contains(listed, name) {
			t.Errorf("pg_catalog.%s (relkind %s) is missing from the embedded list (catalog.go)", name, kind)
		}
	}
	if rows.Err() != nil || n < 100 {
		t.Fatalf("read %d pg_catalog relations: %v", n, rows.Err())
	}

	var version int
	if err := s.admin.QueryRow(ctx, "SELECT current_setting('server_version_num')::int").Scan(&version); err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(mustQuery(t, s.admin, `SELECT DISTINCT proname::text FROM pg_catalog.pg_proc
		WHERE oid < 16384 AND prokind IN ('f', 'a', 'w')
		  AND (provariadic <> 0 OR pronargs >= 1 AND pronargs - pronargdefaults <= 1 AND proargtypes[0] <> 'internal'::regtype)`), pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var missing []string
	for _, name := range names {
		if !pgguard.FunctionAllowed(name) && pgguard.AttributeAllowed(name) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		// The list was read from PostgreSQL 15; the executor's catalog check
		// covers a newer server's additions.
		if version < 160000 {
			t.Errorf("built-ins callable through attribute notation that the guard lets through: %v", missing)
		} else {
			t.Logf("server %d has built-ins the embedded list lacks (the catalog check covers them): %v", version, missing)
		}
	}
}

func mustQuery(t *testing.T, c *pgx.Conn, sql string) pgx.Rows {
	t.Helper()
	rows, err := c.Query(context.Background(), sql)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// TestUserCodeRefused creates what issue 7 used against a real server — a
// user function that writes a file, one of an allowlisted name, one reached
// through attribute notation, user operators — and sends issue 7's own
// statements: each is refused, and nothing is written.
func TestUserCodeRefused(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	file := "/tmp/sonde-a2-" + suffix()
	mustExec(t, s.admin, `CREATE FUNCTION public.sonde_mark() RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN EXECUTE format('COPY (SELECT 1) TO %L', '`+file+`'); RETURN 1; END $$;
	CREATE FUNCTION public.lower(int) RETURNS text LANGUAGE sql SECURITY DEFINER AS 'SELECT public.sonde_mark()::text';
	CREATE FUNCTION public.sonde_leak(public.customers) RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT public.sonde_mark()';
	CREATE FUNCTION public.kind(public.events) RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT public.sonde_mark()';
	CREATE FUNCTION public.sonde_op(int, int) RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT public.sonde_mark()';
	CREATE FUNCTION public.sonde_op_text(int, text) RETURNS int LANGUAGE sql SECURITY DEFINER AS 'SELECT public.sonde_mark()';
	CREATE OPERATOR public.### (LEFTARG = int, RIGHTARG = int, FUNCTION = public.sonde_op);
	CREATE OPERATOR public.+ (LEFTARG = int, RIGHTARG = text, FUNCTION = public.sonde_op_text);`)
	before := s.state(t)
	written := func() bool {
		var missing bool
		if err := s.admin.QueryRow(ctx, "SELECT pg_stat_file($1, true) IS NULL", file).Scan(&missing); err != nil {
			t.Fatal(err)
		}
		return !missing
	}
	t.Cleanup(func() { _ = os.Remove(file) })

	for _, q := range []string{
		// Issue 7's statements.
		"SELECT (NULL::int).pg_stat_get_activity",
		"SELECT ('employee').pg_relation_filepath",
		"SELECT (oid).pg_get_functiondef FROM pg_proc",
		"SELECT ('orders_pkey').brin_summarize_new_values",
		"SELECT 1 ### 2",
		// Past the guard's own lists, caught in the catalog: a user function
		// of an allowlisted name, one reached as an attribute, a user
		// operator with a built-in symbol.
		"SELECT lower(1)",
		"SELECT c.sonde_leak FROM customers c",
		"SELECT (c).sonde_leak FROM customers c",
		"SELECT 1 + 'x'::text",
	} {
		for _, p := range []contracts.Profile{contracts.ProfileAgentReadOnly, contracts.ProfileInspect} {
			_, err := e.Read(ctx, req(q, p))
			var ref *contracts.Refusal
			if !errors.As(err, &ref) || ref.Code != contracts.RefuseFunctionDenied {
				t.Errorf("%s under %s: %v, want function_denied", q, p, err)
			}
		}
	}
	// Objects of an installed extension are the database's own: citext's
	// = operators and replace() overloads do not refuse every = or replace.
	mustExec(t, s.admin, "CREATE EXTENSION citext")
	if _, err := e.Read(ctx, req("SELECT count(*) FROM orders WHERE customer_id = 1 AND replace('a', 'b', 'c') = 'a'", contracts.ProfileAgentReadOnly)); err != nil {
		t.Fatalf("with citext installed: %v", err)
	}
	// A column of the name of a user function is read as the column.
	res, err := e.Read(ctx, req("SELECT e.kind FROM events e WHERE e.event_date >= current_date - 1 LIMIT 1", contracts.ProfileAgentReadOnly))
	if err != nil || len(res.Rows.Rows) != 1 {
		t.Fatalf("e.kind, a column: %v %v", res.Rows, err)
	}
	if written() {
		t.Fatalf("a refused statement ran the user function: %s was written", file)
	}
	if after := s.state(t); after != before {
		t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
	}
	// The function does write when it runs: the check above meant something.
	if _, err := s.admin.Exec(ctx, "SELECT public.sonde_mark()"); err != nil || !written() {
		t.Fatalf("the fixture function did not write %s: %v", file, err)
	}
}

// TestUserCastRefused: CREATE CAST … WITH FUNCTION makes a plain c::int, or
// (an implicit cast) any coercion, call a user function — outside testing
// one wrote a file on the database host through the agent role. A cast into
// a type with a user cast is refused, an implicit user cast refuses every
// read, and nothing is written.
func TestUserCastRefused(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	file := "/tmp/sonde-cast-" + suffix()
	t.Cleanup(func() { _ = os.Remove(file) })
	written := func() bool {
		var missing bool
		if err := s.admin.QueryRow(ctx, "SELECT pg_stat_file($1, true) IS NULL", file).Scan(&missing); err != nil {
			t.Fatal(err)
		}
		return !missing
	}
	refused := func(q string) {
		t.Helper()
		_, err := e.Read(ctx, req(q, contracts.ProfileAgentReadOnly))
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseFunctionDenied {
			t.Errorf("%s: %v, want function_denied", q, err)
		}
	}
	mustExec(t, s.admin, `CREATE FUNCTION public.sonde_cast_int(public.customers) RETURNS int LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN EXECUTE format('COPY (SELECT 1) TO %L', '`+file+`'); RETURN 1; END $$;
	CREATE CAST (public.customers AS int) WITH FUNCTION public.sonde_cast_int(public.customers);`)
	for _, q := range []string{
		"SELECT c::int FROM customers c",
		"SELECT CAST(c AS integer) FROM customers c",
		"SELECT c::int4 FROM customers c",
	} {
		refused(q)
	}
	// A cast into a type no user cast reaches still runs.
	if _, err := e.Read(ctx, req("SELECT c::text, c.id::text FROM customers c", contracts.ProfileAgentReadOnly)); err != nil {
		t.Fatalf("a built-in cast: %v", err)
	}

	mustExec(t, s.admin, `CREATE FUNCTION public.sonde_cast_text(public.customers) RETURNS text LANGUAGE plpgsql SECURITY DEFINER AS $$
		BEGIN EXECUTE format('COPY (SELECT 1) TO %L', '`+file+`'); RETURN 'x'; END $$;
	CREATE CAST (public.customers AS text) WITH FUNCTION public.sonde_cast_text(public.customers) AS IMPLICIT;`)
	for _, q := range []string{
		"SELECT lower(c) FROM customers c",                                // no cast written: the implicit one
		"SELECT CASE WHEN c.id > 0 THEN c ELSE NULL END FROM customers c", // and no function either
		"SELECT id FROM customers",
	} {
		refused(q)
	}
	if written() {
		t.Fatalf("a refused statement ran the cast's function: %s was written", file)
	}
	// The functions do write when they run: the check above meant something.
	if _, err := s.admin.Exec(ctx, "SELECT lower(c) FROM public.customers c"); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := s.admin.QueryRow(ctx, "SELECT count(*) FROM public.customers").Scan(&n); err != nil || n == 0 || !written() {
		t.Fatalf("the fixture cast did not write %s (customers: %d): %v", file, n, err)
	}
}

// TestWriteCapable asks the read role what it could write: the owner (a
// superuser here) could write anything; the agent role set up as the docs
// say cannot; granted INSERT on a table or CREATE on a schema, it can.
func TestWriteCapable(t *testing.T) {
	s := testServer(t)
	ctx := context.Background()
	reasons, err := s.ownerEngine(t).WriteCapable(ctx)
	if err != nil || !slices.Equal(reasons, []string{"superuser"}) {
		t.Fatalf("owner: %v %v, want [superuser]", reasons, err)
	}
	e := s.engine(t)
	if reasons, err := e.WriteCapable(ctx); err != nil || reasons != nil {
		t.Fatalf("least-privilege agent role: %q %v, want none", reasons, err)
	}
	mustExec(t, s.admin, "GRANT INSERT ON public.orders TO "+s.agentRole+"; GRANT CREATE ON SCHEMA public TO "+s.agentRole+
		"; GRANT USAGE ON SEQUENCE public.orders_id_seq TO "+s.agentRole)
	reasons, err = e.WriteCapable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"table public.orders: INSERT", "CREATE on schema public", "sequence public.orders_id_seq: nextval/setval"} {
		if !slices.Contains(reasons, want) {
			t.Errorf("reasons %q lack %q", reasons, want)
		}
	}
}

// TestLargeValueBoundedWhileReading reads a 200 MB value: it ends as too
// large (agent) or truncated (inspect) from the wire message's header,
// without the process ever holding the value.
func TestLargeValueBoundedWhileReading(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	const big = "SELECT repeat('x', 200000000) AS v"
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	slow := func(p contracts.Profile) engine.Request {
		r := req(big, p)
		r.Timeout = 2 * time.Minute // building the value is the server's slow part
		return r
	}
	_, err := e.Read(ctx, slow(contracts.ProfileAgentReadOnly))
	res, err2 := e.Read(ctx, slow(contracts.ProfileInspect))
	runtime.ReadMemStats(&after)
	var tooLarge *rowset.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.By != rowset.ByBytes {
		t.Fatalf("agent: %v (%T), want *rowset.TooLargeError by bytes", err, err)
	}
	if err2 != nil || !res.Rows.Truncated || len(res.Rows.Rows) != 0 || !slices.Equal(res.Rows.TruncatedBy, []string{rowset.ByBytes}) {
		t.Fatalf("inspect: %+v %v, want an empty result truncated by bytes", res.Rows, err2)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
		t.Fatalf("reading two 200 MB values allocated %d MB: the value was read before it was bounded", grew>>20)
	}
	// The connections that were cut off are gone; the pool serves.
	if _, err := e.Read(ctx, req("SELECT 1", contracts.ProfileAgentReadOnly)); err != nil {
		t.Fatal(err)
	}
}

// TestCancelStopsAtServer cancels a running statement: the call returns
// promptly as cancelled, and the server is no longer running it.
func TestCancelStopsAtServer(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	marker := "sonde-cancel-" + suffix()
	if _, err := e.Read(context.Background(), req("SELECT 1", contracts.ProfileAgentReadOnly)); err != nil {
		t.Fatal(err)
	}
	conns := e.pool.Stat().NewConnsCount()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	r := req("", contracts.ProfileAgentReadOnly)
	r.Timeout = 60 * time.Second
	start := time.Now()
	_, err := e.run(ctx, "SELECT pg_sleep(30), '"+marker+"'", nil, r)
	if d := dbErr(t, err); d.Class != contracts.DBCancelled {
		t.Fatalf("cancelled statement: %+v, want cancelled", d)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Fatalf("the cancelled call took %v", el)
	}
	running := -1
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if err := s.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_activity
			WHERE query LIKE '%' || $1 || '%' AND state = 'active' AND pid <> pg_backend_pid()`, marker).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			break
		}
	}
	if running != 0 {
		t.Fatalf("the server is still running the cancelled statement (%d backends)", running)
	}
	// The server stopped the statement and said so: the connection was
	// rolled back and reused, not closed.
	if _, err := e.Read(context.Background(), req("SELECT 1", contracts.ProfileAgentReadOnly)); err != nil {
		t.Fatal(err)
	}
	if n := e.pool.Stat().NewConnsCount(); n != conns {
		t.Fatalf("the cancel cost a connection (%d opened, then %d)", conns, n)
	}
}

// TestEachReadNarrowsTheWireBound pins the per-read bound on its own: with
// a connection-level bound far above the value (1 GiB of OperationMemory), a
// 32 MB value under the agent profile is still stopped from its message
// header, because each read narrows the wire's bound to what its result
// limits could use.
func TestEachReadNarrowsTheWireBound(t *testing.T) {
	s := testServer(t)
	p := postgrestest.Policy()
	e, err := New(context.Background(), connections.Connection{
		ID: "pg-wide", Engine: contracts.EnginePostgres, DSN: s.ownerDSN, AgentDSN: s.agentDSN,
		Readable: p.Readable, LargeTables: p.LargeTables,
	}, engine.Options{OperationMemory: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = e.Read(context.Background(), req("SELECT repeat('x', 32000000) AS v", contracts.ProfileAgentReadOnly))
	runtime.ReadMemStats(&after)
	var tooLarge *rowset.TooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.By != rowset.ByBytes {
		t.Fatalf("agent: %v (%T), want *rowset.TooLargeError by bytes", err, err)
	}
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 16<<20 {
		t.Fatalf("reading one 32 MB value allocated %d MB: the read's own bound did not apply on the wire", grew>>20)
	}
}
