package postgres

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// Each read-only layer must hold with the others removed. Here the layer is
// the transaction: BEGIN READ ONLY, which the engine sends before every
// statement. The other layers are taken away: no guard (the statements go
// straight to run), a session whose default is read-write (the startup
// parameter the engine sets is turned off), and a role that may write (the
// fixture's superuser, and a role granted writes whose own default is
// read-write).

// readWriteEngine opens an engine on dsn with everything Config sets except
// the read-only session default: its sessions start read-write.
func readWriteEngine(t *testing.T, dsn string) *Engine {
	t.Helper()
	cfg, err := Config(dsn, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "off"
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return &Engine{pool: pool, policy: postgrestest.Policy(), opMem: DefaultOperationMemory}
}

// writerRole creates a login role on the fixture that may write every
// fixture table and create in public, whose own default is read-write, and
// returns a DSN for it.
func (s *server) writerRole(t *testing.T) (dsn, role string) {
	t.Helper()
	role = "sonde_writer_" + suffix()
	mustExec(t, s.admin, "CREATE ROLE "+role+" LOGIN")
	t.Cleanup(func() {
		ctx := context.Background()
		_, _ = s.admin.Exec(ctx, "DROP OWNED BY "+role)
		_, _ = s.admin.Exec(ctx, "DROP ROLE IF EXISTS "+role)
	})
	mustExec(t, s.admin, `GRANT CONNECT, TEMPORARY ON DATABASE CURRENT_DATABASE_PLACEHOLDER TO `+role+`;
		GRANT USAGE, CREATE ON SCHEMA public TO `+role+`;
		GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public TO `+role+`;
		GRANT USAGE, SELECT, UPDATE ON ALL SEQUENCES IN SCHEMA public TO `+role+`;
		ALTER ROLE `+role+` SET default_transaction_read_only = off`)
	u := strings.Replace(s.agentDSN, s.agentRole+"@", role+"@", 1)
	if u == s.agentDSN {
		t.Fatalf("cannot derive a DSN for %s from %s", role, s.agentDSN)
	}
	return u, role
}

// readOnlyTxWrites are writes PostgreSQL refuses in a read-only transaction
// with SQLSTATE 25006, whatever the role may do.
var readOnlyTxWrites = []string{
	"INSERT INTO public.orders (customer_id, amount, created_at) VALUES (1, 1, now())",
	"UPDATE public.orders SET amount = 0",
	"DELETE FROM public.events",
	"TRUNCATE public.events",
	"WITH d AS (DELETE FROM public.orders RETURNING 1) SELECT count(*) FROM d",
	"SELECT * FROM public.orders FOR UPDATE",
	"SELECT * INTO public.stolen FROM public.customers",
	"CREATE TABLE public.stolen (a int)",
	"CREATE TEMP TABLE stolen_tmp (a int)",
	"CREATE SEQUENCE public.stolen_seq",
	"ALTER TABLE public.orders ADD COLUMN stolen int",
	"COMMENT ON TABLE public.orders IS 'stolen'",
	"SELECT nextval('public.orders_id_seq')",
	"SELECT setval('public.orders_id_seq', 1)",
}

// TestReadOnlyTransactionAlone sends writes below the guard, through the
// engine's transaction layer, on sessions whose default is read-write, as
// roles that may write, under both profiles: BEGIN READ ONLY alone refuses
// each with 25006, and the database does not change. First it proves the
// premise: the session's default is read-write, and the same write inside a
// plain BEGIN on that pool succeeds (and is rolled back), so the refusal is
// the transaction's.
func TestReadOnlyTransactionAlone(t *testing.T) {
	s := testServer(t)
	ctx := context.Background()
	writerDSN, writer := s.writerRole(t)
	before := s.state(t)
	for _, who := range []struct{ name, dsn, role string }{
		{"superuser", s.ownerDSN, ""},
		{"writer role", writerDSN, writer},
	} {
		e := readWriteEngine(t, who.dsn)
		for _, p := range []contracts.Profile{contracts.ProfileAgentReadOnly, contracts.ProfileInspect} {
			res, err := e.run(ctx, `SELECT current_setting('default_transaction_read_only'),
				current_setting('transaction_read_only'), current_user::text`, nil, req("", p))
			if err != nil {
				t.Fatal(err)
			}
			got := res.Rows.Rows[0]
			if got[0] != "off" || got[1] != "on" || who.role != "" && got[2] != who.role {
				t.Fatalf("%s, %s: session default %v, transaction read-only %v, user %v; want off, on, %s",
					who.name, p, got[0], got[1], got[2], who.role)
			}
			for _, q := range readOnlyTxWrites {
				_, err := e.run(ctx, q, nil, req("", p))
				if d := dbErr(t, err); d.Class != contracts.DBPermission || !strings.Contains(d.Message, "25006") {
					t.Errorf("%s, %s: %s: %+v, want 25006 (read-only transaction)", who.name, p, q, d)
				}
			}
			// The transaction cannot be turned read-write from inside.
			_, err = e.run(ctx, "SET TRANSACTION READ WRITE", nil, req("", p))
			if d := dbErr(t, err); !strings.Contains(d.Message, "25001") {
				t.Errorf("%s, %s: SET TRANSACTION READ WRITE: %+v, want 25001", who.name, p, d)
			}
		}
		// The control: the same pool's session writes inside a plain BEGIN
		// (an UPDATE: a rolled-back INSERT would still move the sequence).
		werr := func() error {
			c, err := e.pool.Acquire(ctx)
			if err != nil {
				t.Fatal(err)
			}
			// Released on every path: a pool closed with a connection still
			// out waits for it, and a failure would hang the suite.
			defer c.Release()
			pc := c.Conn().PgConn()
			if err := control(ctx, pc, "BEGIN"); err != nil {
				t.Fatal(err)
			}
			_, werr := query(ctx, c.Conn(), readOnlyTxWrites[1], nil, rowset.Limits{MaxRows: 10, MaxBytes: 1 << 10})
			if err := control(ctx, pc, "ROLLBACK"); err != nil {
				t.Fatal(err)
			}
			return werr
		}()
		if werr != nil {
			t.Fatalf("%s: the control write in a plain BEGIN failed (%v): the session is not read-write, so the test proves nothing", who.name, werr)
		}
	}
	if after := s.state(t); after != before {
		t.Fatalf("the database changed:\n before %s\n after  %s", before, after)
	}
}

// TestStateSeesFilesOnTheDatabaseHost holds state — the "database
// unchanged" check of every hostile test here — to what it promises: a file
// written on the database host — by COPY … TO an absolute path, or by
// COPY … TO PROGRAM into /tmp or into the data directory (where a program
// runs; COPY itself refuses a relative path) — changes it, and removing the
// file restores it. The files are written on purpose, by the superuser
// fixture connection.
func TestStateSeesFilesOnTheDatabaseHost(t *testing.T) {
	s := testServer(t)
	name := "sonde-state-" + suffix()
	// The program reads all it is sent before it removes the file: rm
	// alone exits without reading COPY's row, and COPY then fails writing
	// to the closed pipe (EPIPE), or not, as the race goes.
	removal := func(path string) string {
		return "COPY (SELECT 1) TO PROGRAM 'cat > /dev/null && rm -f " + path + "'"
	}
	remove := func(path string) {
		t.Helper()
		mustExec(t, s.admin, removal(path))
	}
	t.Cleanup(func() {
		for _, p := range []string{"/tmp/" + name, "/tmp/" + name + "-program", name} {
			_, _ = s.admin.Exec(context.Background(), removal(p))
		}
	})
	for _, c := range []struct{ write, path string }{
		{"COPY (SELECT 1) TO '/tmp/" + name + "'", "/tmp/" + name},
		{"COPY (SELECT 1) TO PROGRAM 'cat > " + name + "'", name}, // a program runs in the data directory
		{"COPY (SELECT 1) TO PROGRAM 'cat > /tmp/" + name + "-program'", "/tmp/" + name + "-program"},
	} {
		before := s.state(t)
		mustExec(t, s.admin, c.write)
		if after := s.state(t); after == before {
			t.Errorf("%s: the state did not change:\n %s", c.write, after)
		}
		remove(c.path)
		if after := s.state(t); after != before {
			t.Errorf("%s, removed again: the state did not come back:\n before %s\n after  %s", c.write, before, after)
		}
	}
	// A file already there, written over, changes it too.
	mustExec(t, s.admin, "COPY (SELECT 1) TO '/tmp/"+name+"'")
	before := s.state(t)
	mustExec(t, s.admin, "COPY (SELECT 'longer than before') TO '/tmp/"+name+"'")
	if after := s.state(t); after == before {
		t.Errorf("overwriting /tmp/%s did not change the state", name)
	}
	remove("/tmp/" + name)
}
