package executor

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// lostCase is one connection whose database goes away after the executor
// opened it: read is a statement that reads it, secrets the words no reply
// may hold (host, port, role, database, path).
type lostCase struct {
	engine  contracts.Engine
	conn    connections.Connection
	read    string
	secrets []string
}

// execOver asks the executor over NATS, as the orchestrator does.
func execOver(ctx context.Context, t *testing.T, nc *nats.Conn, e contracts.Engine, op contracts.ExecOp, req contracts.ExecRequest) contracts.ExecReply {
	t.Helper()
	data, _ := json.Marshal(req)
	msg, err := nc.RequestWithContext(ctx, contracts.ExecSubject(e, op), data)
	if err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	var reply contracts.ExecReply
	if err := json.Unmarshal(msg.Data, &reply); err != nil {
		t.Fatal(err)
	}
	return reply
}

// waitStatus polls the published descriptor of id until it has status want.
func waitStatus(ctx context.Context, t *testing.T, srv *natstest.Server, id string, want contracts.ConnectionStatus) contracts.ConnectionDescriptor {
	t.Helper()
	for {
		d := descriptor(t, srv, id)
		if d.Status == want || want == contracts.ConnectionAvailable && d.Status == "" {
			return d
		}
		if ctx.Err() != nil {
			t.Fatalf("descriptor of %s stayed %+v, want %s", id, d, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// assertConnectionUnavailable checks a reply to an operation on a lost
// database: the typed connection-unavailable refusal, and not a word of
// the engine's text about where the database is, in any field.
func assertConnectionUnavailable(t *testing.T, what string, reply contracts.ExecReply, secrets []string) {
	t.Helper()
	if !reply.ConnectionUnavailable() || reply.Status != contracts.ExecRefused || reply.Refusal == nil ||
		reply.Refusal.Code != contracts.RefuseConnectionUnavailable || reply.Error != nil {
		t.Errorf("%s: want the connection_unavailable refusal, got %+v (refusal %+v, error %+v)", what, reply, reply.Refusal, reply.Error)
	}
	whole, _ := json.Marshal(reply)
	for _, s := range secrets {
		if s != "" && bytes.Contains(whole, []byte(s)) {
			t.Errorf("%s: the reply names %q: %s", what, s, whole)
		}
	}
}

// assertNeutralDescriptor checks that a descriptor names nothing secret.
func assertNeutralDescriptor(t *testing.T, d contracts.ConnectionDescriptor, secrets []string) {
	t.Helper()
	whole, _ := json.Marshal(d)
	for _, s := range secrets {
		if s != "" && bytes.Contains(whole, []byte(s)) {
			t.Errorf("descriptor names %q: %s", s, whole)
		}
	}
}

// runLost starts an executor on c, reads once, takes the database away
// (gone), then checks every operation on it answers connection_unavailable
// with no engine text, that the descriptor goes unavailable with a neutral
// reason, and — once back restores the database — that it is available and
// reads again.
func runLost(t *testing.T, c lostCase, gone, back func(t *testing.T)) {
	s, srv, client := serveNATS(t, Config{Engine: c.engine, RetryOpen: 50 * time.Millisecond, Connections: []connections.Connection{c.conn}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id := c.conn.ID
	req := contracts.ExecRequest{RunID: "run-lost", StepID: "s1", ConnectionID: id, Profile: contracts.ProfileAgentReadOnly, SQL: c.read, TimeoutMs: 10_000}
	if reply := execOver(ctx, t, client, c.engine, contracts.OpRead, req); reply.Status != contracts.ExecOK {
		t.Fatalf("read before the loss: %+v %+v %+v", reply, reply.Refusal, reply.Error)
	}
	waitStatus(ctx, t, srv, id, contracts.ConnectionAvailable)

	gone(t)
	// The first read after the loss is the one that finds it.
	req.StepID = "s2"
	first := execOver(ctx, t, client, c.engine, contracts.OpRead, req)
	assertConnectionUnavailable(t, "first read after the loss", first, c.secrets)
	if first.Refusal == nil {
		t.FailNow()
	}
	d := waitStatus(ctx, t, srv, id, contracts.ConnectionUnavailable)
	if d.Reason == "" {
		t.Errorf("unavailable without a reason: %+v", d)
	}
	assertNeutralDescriptor(t, d, c.secrets)
	// The executor tries to open it again in the background: the reason
	// becomes why that attempt failed, as neutral.
	for strings.Contains(first.Refusal.Message, d.Reason) {
		if ctx.Err() != nil {
			t.Fatalf("no attempt to open the connection again: %+v", d)
		}
		time.Sleep(20 * time.Millisecond)
		d = descriptor(t, srv, id)
	}
	if d.Status != contracts.ConnectionUnavailable {
		t.Fatalf("available again while the database is gone: %+v", d)
	}
	assertNeutralDescriptor(t, d, c.secrets)
	// While it is gone, every operation answers the same, in process too.
	for i, op := range []contracts.ExecOp{contracts.OpRead, contracts.OpSchema, contracts.OpExplain} {
		r := req
		r.StepID = fmt.Sprintf("s%d", 3+i)
		assertConnectionUnavailable(t, string(op)+" while lost", execOver(ctx, t, client, c.engine, op, r), c.secrets)
	}
	assertConnectionUnavailable(t, "in-process read while lost", s.Exec(ctx, contracts.OpRead, req), c.secrets)
	for _, d := range s.Descriptors() {
		assertNeutralDescriptor(t, d, c.secrets)
	}

	back(t)
	waitStatus(ctx, t, srv, id, contracts.ConnectionAvailable)
	req.StepID = "s9"
	if reply := execOver(ctx, t, client, c.engine, contracts.OpRead, req); reply.Status != contracts.ExecOK {
		t.Fatalf("read once the database is back: %+v %+v %+v", reply, reply.Refusal, reply.Error)
	}
}

// copyFile copies src to dst.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// fileLossCases takes a file database away in each way a file can go: it
// is removed, or another file that is not a database is put in its place.
func fileLossCases(t *testing.T, c lostCase) {
	path := c.conn.Path
	keep := filepath.Join(t.TempDir(), "kept")
	copyFile(t, path, keep)
	restore := func(t *testing.T) { copyFile(t, keep, path) }
	t.Run("removed", func(t *testing.T) {
		restore(t)
		runLost(t, c, func(t *testing.T) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, restore)
	})
	t.Run("replaced by a non-database", func(t *testing.T) {
		restore(t)
		runLost(t, c, func(t *testing.T) {
			tmp := path + ".other"
			if err := os.WriteFile(tmp, bytes.Repeat([]byte("not a database\n"), 512), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		}, restore)
	})
}

// TestLostSQLiteFileIsAConnectionState: a SQLite file removed or replaced
// after the executor opened it makes the connection unavailable — a reply
// the orchestrator recognises, never a database failure charged to the
// statement, naming neither the directory nor the file — and available
// again once the file is back.
func TestLostSQLiteFileIsAConnectionState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "lostshop.db")
	if err := demodb.Ensure(path); err != nil {
		t.Fatal(err)
	}
	fileLossCases(t, lostCase{engine: contracts.EngineSQLite,
		conn: connections.Connection{ID: "lostlite", Engine: contracts.EngineSQLite, Path: path},
		read: "SELECT count(*) FROM orders", secrets: []string{dir, "lostshop", ".db"}})
}

// TestLostDuckDBFileIsAConnectionState: the same for a DuckDB file.
func TestLostDuckDBFileIsAConnectionState(t *testing.T) {
	path := duckdbFixture(t)
	fileLossCases(t, lostCase{engine: contracts.EngineDuckDB,
		conn: connections.Connection{ID: "lostduck", Engine: contracts.EngineDuckDB, Path: path},
		read: "SELECT count(*) FROM orders", secrets: []string{filepath.Dir(path), "shop.duckdb"}})
}

// ownPostgres is a PostgreSQL cluster of a test's own, started with
// scripts/postgres.sh, that the test stops and starts again.
type ownPostgres struct {
	url, dir, port string
}

// startOwnPostgres starts a cluster beside the suite's one (whose presence
// decides, as for every PostgreSQL test, whether the test runs); it is
// removed when the test ends.
func startOwnPostgres(t *testing.T) *ownPostgres {
	t.Helper()
	pgtest.URL(t)
	script, err := filepath.Abs("../../scripts/postgres.sh")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(script, "start")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/postgres.sh start: %v\n%s", err, stderr.String())
	}
	pg := &ownPostgres{}
	for _, line := range strings.Split(string(out), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		v = strings.Trim(v, "'")
		switch k {
		case "SONDE_TEST_PG_URL":
			pg.url = v
		case "SONDE_TEST_PG_DIR":
			pg.dir = v
		}
	}
	if pg.url == "" || pg.dir == "" {
		t.Fatalf("scripts/postgres.sh start printed %q", out)
	}
	t.Cleanup(func() { _ = exec.Command(script, "stop", pg.dir).Run() })
	u, err := url.Parse(pg.url)
	if err != nil {
		t.Fatal(err)
	}
	pg.port = u.Port()
	return pg
}

// pgCtl runs pg_ctl on the cluster as its owner.
func (pg *ownPostgres) pgCtl(t *testing.T, args ...string) {
	t.Helper()
	bin := "pg_ctl"
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		bin = filepath.Join(strings.TrimSpace(string(out)), "pg_ctl")
	}
	argv := append([]string{bin, "-D", filepath.Join(pg.dir, "data")}, args...)
	if os.Geteuid() == 0 {
		argv = append([]string{"runuser", "-u", "postgres", "--"}, argv...)
	}
	if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
}

// stop stops the server at once, as a crash or a lost host does.
func (pg *ownPostgres) stop(t *testing.T) { pg.pgCtl(t, "-m", "immediate", "-w", "stop") }

// start starts it again on the same port.
func (pg *ownPostgres) start(t *testing.T) {
	pg.pgCtl(t, "-l", filepath.Join(pg.dir, "server.log"), "-w", "-t", "60", "start", "-o",
		"-c listen_addresses=127.0.0.1 -c port="+pg.port+" -c unix_socket_directories="+pg.dir)
}

// TestLostPostgresIsAConnectionState: a PostgreSQL server stopped after the
// executor connected makes the connection unavailable — the typed reply,
// naming no host, port, role or database — and it is available again once
// the server is back.
func TestLostPostgresIsAConnectionState(t *testing.T) {
	pg := startOwnPostgres(t)
	db, err := sql.Open("pgx", pg.url)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE ROLE lostreader LOGIN",
		"CREATE DATABASE lostshopdb",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	dsn := fmt.Sprintf("postgres://lostreader@127.0.0.1:%s/lostshopdb?sslmode=disable", pg.port)
	runLost(t, lostCase{engine: contracts.EnginePostgres,
		conn:    connections.Connection{ID: "lostpg", Engine: contracts.EnginePostgres, DSN: dsn},
		read:    "SELECT 1 AS one",
		secrets: []string{"127.0.0.1", pg.port, "lostreader", "lostshopdb", pg.dir}},
		pg.stop, pg.start)
}

// TestStatementFailureLeavesTheConnectionAvailable: a statement's own
// failure that no class ties to the statement (class other) is not taken
// for a lost database: the executor asks the database once more, it
// answers, and the failure is the statement's — with the engine's text,
// fenced, for the model to repair it — while the connection stays
// available.
func TestStatementFailureLeavesTheConnectionAvailable(t *testing.T) {
	for _, c := range []struct {
		engine contracts.Engine
		conn   connections.Connection
		bad    string
	}{
		{contracts.EngineSQLite, connections.Connection{ID: "lite", Engine: contracts.EngineSQLite, Path: demoPath(t)}, "SELECT json('not json')"},
		{contracts.EngineDuckDB, connections.Connection{ID: "duck", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t)}, "SELECT CAST('x' AS INTEGER)"},
	} {
		t.Run(string(c.engine), func(t *testing.T) {
			s := newService(t, Config{Engine: c.engine, Connections: []connections.Connection{c.conn}})
			req := contracts.ExecRequest{RunID: "run-own", StepID: "s1", ConnectionID: c.conn.ID, Profile: contracts.ProfileAgentReadOnly, SQL: c.bad, TimeoutMs: 5000}
			reply := s.shownExec(context.Background(), contracts.OpRead, req)
			if reply.Status != contracts.ExecError || reply.Error == nil || reply.Error.Class != contracts.DBOther || reply.ConnectionUnavailable() {
				t.Fatalf("the statement's own failure: %+v (refusal %+v, error %+v)", reply, reply.Refusal, reply.Error)
			}
			if reply.Error.Message == "" || !strings.Contains(reply.Text, reply.Error.Message) {
				t.Errorf("the engine's text is not shown for the repair: %+v", reply.Error)
			}
			if d := s.Descriptors()[0]; d.Status != contracts.ConnectionAvailable {
				t.Errorf("a statement's failure made the connection %+v", d)
			}
			req.StepID, req.SQL = "s2", "SELECT 1 AS one"
			if r := s.shownExec(context.Background(), contracts.OpRead, req); r.Status != contracts.ExecOK {
				t.Errorf("the next read: %+v %+v %+v", r, r.Refusal, r.Error)
			}
		})
	}
}

// TestUntiedEngineTextStaysInTheLog: an engine's error classified
// unavailable, or not classified at all, on a database that still answers,
// is told in the executor's words; the driver's text (hosts, ports, roles,
// paths) reaches the log only.
func TestUntiedEngineTextStaysInTheLog(t *testing.T) {
	var logs syncBuffer
	s := newService(t, Config{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	eng, _ := s.conns["demo"].state()
	const secret = "user=reader database=shop 10.9.8.7:6543 /var/lib/secret/shop.db"
	req := read("SELECT 1")
	for _, err := range []error{
		&contracts.DBError{Class: contracts.DBUnavailable, Message: "cannot reach " + secret},
		fmt.Errorf("dial %s: %w", secret, os.ErrDeadlineExceeded),
		// An engine's own word that the connection was lost, on an error
		// whose class would show its text, when the probe finds the
		// database answering (it broke and came back).
		engine.Lost(&contracts.DBError{Class: contracts.DBPermission, Message: "authentication failed: " + secret}),
	} {
		reply, failed := s.failure(context.Background(), contracts.OpRead, eng, err, &req, contracts.ExecReply{})
		if !failed || reply.Status != contracts.ExecError || reply.Error == nil {
			t.Fatalf("%v: %+v", err, reply)
		}
		whole, _ := json.Marshal(reply)
		for _, w := range strings.Fields(secret) {
			if bytes.Contains(whole, []byte(w)) {
				t.Errorf("%v: the reply names %q: %s", err, w, whole)
			}
		}
		if d := s.Descriptors()[0]; d.Status != contracts.ConnectionAvailable {
			t.Errorf("%v: the connection, which answers, became %+v", err, d)
		}
	}
	if !strings.Contains(logs.String(), "10.9.8.7:6543") {
		t.Errorf("the driver's text is not in the log:\n%s", logs.String())
	}
}
