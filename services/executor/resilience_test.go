package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
)

// endless is a read that runs until it is stopped: a recursive CTE with no
// end, counted.
const endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

// counting is a read that takes a while and then ends: about a second here.
func counting(n int) string {
	return fmt.Sprintf("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < %d) SELECT count(*) AS n FROM c", n)
}

// serveNATS builds a service of cfg on an embedded server, starts it and
// returns a client connection.
func serveNATS(t *testing.T, cfg Config) (*Service, *natstest.Server, *nats.Conn) {
	t.Helper()
	srv := natstest.Start(t)
	cfg.NATS = srv.Connect()
	s := newService(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return s, srv, srv.Connect()
}

func request(ctx context.Context, nc *nats.Conn, req contracts.ExecRequest) (contracts.ExecReply, error) {
	var reply contracts.ExecReply
	data, _ := json.Marshal(req)
	msg, err := nc.RequestWithContext(ctx, contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), data)
	if err != nil {
		return reply, err
	}
	return reply, json.Unmarshal(msg.Data, &reply)
}

// descriptor reads connection id's published descriptor.
func descriptor(t *testing.T, srv *natstest.Server, id string) contracts.ConnectionDescriptor {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	kv, err := srv.JetStream().KeyValue(ctx, contracts.ConnectionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(ctx, id)
	if err != nil {
		t.Fatalf("descriptor %s: %v", id, err)
	}
	var d contracts.ConnectionDescriptor
	if err := json.Unmarshal(e.Value(), &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// TestCancelStopsTheStatement: an ExecCancel naming a run and step stops
// that operation at the database at once, on every replica that hears it,
// and one that arrives before its operation stops it when it arrives.
func TestCancelStopsTheStatement(t *testing.T) {
	s, _, client := serveNATS(t, Config{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	req := read(endless)
	req.RunID, req.StepID, req.TimeoutMs = "run-cancel", "s7", 10_000
	start := time.Now()
	time.AfterFunc(300*time.Millisecond, func() {
		data, _ := json.Marshal(contracts.ExecCancel{RunID: "run-cancel", StepID: "s7"})
		_ = client.Publish(contracts.ExecCancelSubject(contracts.EngineSQLite), data)
	})
	reply, err := request(ctx, client, req)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBCancelled {
		t.Fatalf("cancelled read: %+v", reply)
	}
	if took > 3*time.Second {
		t.Fatalf("the statement ran %s after a cancel at 300ms", took)
	}

	// Another step of the same run is not touched.
	other := read(counting(1000))
	other.RunID, other.StepID = "run-cancel", "s8"
	if reply, err := request(ctx, client, other); err != nil || reply.Status != contracts.ExecOK {
		t.Fatalf("another step: %+v %v", reply, err)
	}

	// A cancel that overtakes its request.
	if n := s.Cancel("run-cancel", "s9"); n != 0 {
		t.Fatalf("cancel with nothing in flight stopped %d", n)
	}
	early := read(endless)
	early.RunID, early.StepID = "run-cancel", "s9"
	start = time.Now()
	if reply := s.Exec(ctx, contracts.OpRead, early); reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBCancelled ||
		time.Since(start) > 3*time.Second {
		t.Fatalf("read cancelled before it arrived: %+v after %s", reply, time.Since(start))
	}
}

// TestBusyPastTheLimit: more slow operations than slots at once. Those that
// find no slot within the bounded wait are refused executor_busy, none is
// reported as a database failure, and the others run.
func TestBusyPastTheLimit(t *testing.T) {
	s := newService(t, Config{BusyWait: 200 * time.Millisecond})
	const n = MaxConcurrentReads + 4
	replies := make([]contracts.ExecReply, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			req := read(endless)
			req.StepID, req.TimeoutMs = fmt.Sprintf("s%d", i), 2000
			replies[i] = s.Exec(context.Background(), contracts.OpRead, req)
		})
	}
	wg.Wait()
	busy, timedOut := 0, 0
	for i, r := range replies {
		switch {
		case r.Status == contracts.ExecRefused && r.Refusal.Code == contracts.RefuseExecutorBusy:
			busy++
			if !strings.Contains(r.Refusal.Fix, "retry") || r.Statements != 0 {
				t.Errorf("reply %d: %+v", i, r)
			}
		case r.Status == contracts.ExecError && r.Error.Class == contracts.DBTimeout:
			timedOut++
		default:
			t.Errorf("reply %d: %+v", i, r)
		}
	}
	if busy != n-MaxConcurrentReads || timedOut != MaxConcurrentReads {
		t.Fatalf("%d busy, %d timed out; want %d and %d", busy, timedOut, n-MaxConcurrentReads, MaxConcurrentReads)
	}
}

// TestBusyWaitStaysWithinTheTimeout: the wait for a slot never takes more
// than half of what the caller granted the statement.
func TestBusyWaitStaysWithinTheTimeout(t *testing.T) {
	s := newService(t, Config{BusyWait: 10 * time.Second})
	for range MaxConcurrentReads {
		s.sem <- struct{}{}
	}
	req := read("select 1")
	req.TimeoutMs = 400
	start := time.Now()
	reply := s.Exec(context.Background(), contracts.OpRead, req)
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseExecutorBusy || time.Since(start) > 2*time.Second {
		t.Fatalf("%+v after %s", reply, time.Since(start))
	}
}

// TestUnavailableFileAppears: a SQLite file that does not exist at start
// leaves its connection unavailable, published with the reason; when the
// file appears the executor opens it and publishes it available.
func TestUnavailableFileAppears(t *testing.T) {
	path := filepath.Join(t.TempDir(), "later.db")
	_, srv, client := serveNATS(t, Config{RetryOpen: 50 * time.Millisecond, Connections: []connections.Connection{
		{ID: "later", Engine: contracts.EngineSQLite, Path: path},
	}})
	d := descriptor(t, srv, "later")
	if d.Status != contracts.ConnectionUnavailable || d.Reason != "the database file does not exist" {
		t.Fatalf("at start: %+v", d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := read("select 1")
	req.ConnectionID = "later"
	if reply, err := request(ctx, client, req); err != nil || reply.Status != contracts.ExecRefused ||
		reply.Refusal.Code != contracts.RefuseConnectionUnavailable || !strings.Contains(reply.Refusal.Message, "does not exist") {
		t.Fatalf("read while unavailable: %+v %v", reply, err)
	}

	if err := demodb.Ensure(path); err != nil {
		t.Fatal(err)
	}
	for d.Status != contracts.ConnectionAvailable {
		if ctx.Err() != nil {
			t.Fatalf("still %+v", d)
		}
		time.Sleep(50 * time.Millisecond)
		d = descriptor(t, srv, "later")
	}
	if d.Reason != "" {
		t.Errorf("available with a reason: %+v", d)
	}
	if reply, err := request(ctx, client, req); err != nil || reply.Status != contracts.ExecOK {
		t.Fatalf("read once available: %+v %v", reply, err)
	}
}

// TestUnreachableServerDoesNotStopTheExecutor: a PostgreSQL DSN at a closed
// port neither fails New nor holds it up; the connection is unavailable with
// a reason that names no host, and the executor keeps serving.
func TestUnreachableServerDoesNotStopTheExecutor(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	start := time.Now()
	s := newService(t, Config{Engine: contracts.EnginePostgres, RetryOpen: time.Hour, Connections: []connections.Connection{
		{ID: "down", Engine: contracts.EnginePostgres, DSN: "postgres://reader:secret@" + addr + "/shop?sslmode=disable"},
	}})
	if time.Since(start) > 10*time.Second {
		t.Errorf("New took %s", time.Since(start))
	}
	ds := s.Descriptors()
	if len(ds) != 1 || ds[0].Status != contracts.ConnectionUnavailable || !strings.Contains(ds[0].Reason, "refused the connection") {
		t.Fatalf("descriptors: %+v", ds)
	}
	for _, secret := range []string{"127.0.0.1", addr, "secret", "reader"} {
		if strings.Contains(ds[0].Reason, secret) {
			t.Errorf("reason %q names %q", ds[0].Reason, secret)
		}
	}
	req := read("select 1")
	req.ConnectionID = "down"
	if reply := s.Exec(context.Background(), contracts.OpRead, req); reply.Status != contracts.ExecRefused ||
		reply.Refusal.Code != contracts.RefuseConnectionUnavailable {
		t.Fatalf("read: %+v", reply)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestStopDrains: Stop stops taking requests at once, lets the operation in
// flight finish within the grace, and only then returns.
func TestStopDrains(t *testing.T) {
	s, _, client := serveNATS(t, Config{DrainGrace: 20 * time.Second})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	req := read(counting(100_000))
	req.TimeoutMs = 10_000
	done := make(chan contracts.ExecReply, 1)
	go func() {
		reply, err := request(ctx, client, req)
		if err != nil {
			reply = failed(&contracts.DBError{Class: contracts.DBOther, Message: err.Error()})
		}
		done <- reply
	}()
	waitRunning(t, s)
	stopped := make(chan error, 1)
	go func() { stopped <- s.Stop(context.Background()) }()
	waitStopping(t, s)

	// No new request is taken while it drains.
	if _, err := request(ctx, client, read("select 1")); err == nil {
		t.Error("a request sent while draining was answered")
	}
	if reply := s.Exec(ctx, contracts.OpRead, read("select 1")); reply.Status != contracts.ExecError ||
		reply.Error.Class != contracts.DBUnavailable {
		t.Errorf("in-process request while draining: %+v", reply)
	}
	reply := <-done
	if reply.Status != contracts.ExecOK {
		t.Fatalf("the read in flight did not finish: %+v", reply)
	}
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// TestStopCancelsAfterTheGrace: what is still running when the grace is
// over is cancelled, and Stop returns.
func TestStopCancelsAfterTheGrace(t *testing.T) {
	s := newService(t, Config{DrainGrace: 200 * time.Millisecond})
	done := make(chan contracts.ExecReply, 1)
	go func() {
		req := read(endless)
		req.TimeoutMs = 10_000
		done <- s.Exec(context.Background(), contracts.OpRead, req)
	}()
	waitRunning(t, s)
	start := time.Now()
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("Stop took %s with a 200ms grace", took)
	}
	if reply := <-done; reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBCancelled {
		t.Fatalf("after the grace: %+v", reply)
	}
}

// TestStopContextCutsTheDrain: over NATS, an operation in flight when Stop
// begins is cancelled once Stop's context ends, even with a grace that has
// not passed; it is answered (cancelled), and a second Stop is a no-op.
func TestStopContextCutsTheDrain(t *testing.T) {
	s, _, client := serveNATS(t, Config{DrainGrace: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	done := make(chan contracts.ExecReply, 1)
	go func() {
		req := read(endless)
		req.TimeoutMs = 30_000
		reply, err := request(ctx, client, req)
		if err != nil {
			reply = failed(&contracts.DBError{Class: contracts.DBOther, Message: err.Error()})
		}
		done <- reply
	}()
	waitRunning(t, s)
	stopCtx, stop := context.WithCancel(context.Background())
	stop()
	if err := s.Stop(stopCtx); err != nil {
		t.Fatal(err)
	}
	if reply := <-done; reply.Status != contracts.ExecError || reply.Error.Class != contracts.DBCancelled {
		t.Fatalf("the read cut by Stop's context: %+v", reply)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestStartNeedsNATS: Start without Config.NATS says so.
func TestStartNeedsNATS(t *testing.T) {
	s := newService(t, Config{})
	if err := s.Start(context.Background()); !errors.Is(err, ErrNoConn) {
		t.Fatalf("Start without NATS: %v, want ErrNoConn", err)
	}
}

func waitRunning(t *testing.T, s *Service) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(s.sem) == 0; {
		if time.Now().After(deadline) {
			t.Fatal("the read never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func waitStopping(t *testing.T, s *Service) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		s.mu.Lock()
		stopped := s.stopped
		s.mu.Unlock()
		if stopped {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Stop never began")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // the endpoints' interest ends
}

// TestWriteCapableRoleIsWarned: a PostgreSQL connection whose read role can
// write (the test server's superuser) is served, with warnings in its
// descriptor and the start-up log.
func TestWriteCapableRoleIsWarned(t *testing.T) {
	dsn := pgtest.URL(t)
	var logs syncBuffer
	s := newService(t, Config{Engine: contracts.EnginePostgres, Logger: slog.New(slog.NewTextHandler(&logs, nil)),
		Connections: []connections.Connection{{ID: "super", Engine: contracts.EnginePostgres, DSN: dsn}}})
	d := s.Descriptors()[0]
	t.Logf("warnings: %q", d.Warnings)
	if d.Status != contracts.ConnectionAvailable || len(d.Warnings) == 0 ||
		!strings.Contains(strings.Join(d.Warnings, "\n"), "superuser") {
		t.Fatalf("descriptor: %+v", d)
	}
	for _, w := range d.Warnings {
		if strings.Contains(w, dsn) {
			t.Errorf("warning names the DSN: %q", w)
		}
	}
	if !strings.Contains(logs.String(), "the role that runs reads can write") || !strings.Contains(logs.String(), "connection=super") {
		t.Errorf("no start-up warning in the log:\n%s", logs.String())
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
