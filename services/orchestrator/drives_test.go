package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/pkg/policy"
)

// One drive per run, under any interleaving of starts, sweeps, drains and
// lost leases, against the real lease bucket and ledger.

// startable registers the demo connection, so StartRun accepts runs on it.
func startable(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	ctx := context.Background()
	kv, err := js.KeyValue(ctx, contracts.ConnectionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(contracts.ConnectionDescriptor{ID: "demo", Engine: contracts.EngineSQLite, Identity: "test"})
	if _, err := kv.Put(ctx, "demo", b); err != nil {
		t.Fatal(err)
	}
}

// startCmd is a start of runID by actor on the demo connection.
func startCmd(runID, actor string) contracts.StartRun {
	return contracts.StartRun{RunID: runID, Objective: "test", ConnectionID: "demo", Actor: contracts.Actor{ID: actor}}
}

// awaitEnded waits (generously) until every run's ledger has ended and
// returns the folded records; a run still going after the wait fails the
// test with where it stands.
func awaitEnded(t *testing.T, l *ledger.Ledger, ids []string, within time.Duration) map[string]contracts.Record {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(within)
	out := map[string]contracts.Record{}
	for {
		var going []string
		for _, id := range ids {
			if _, done := out[id]; done {
				continue
			}
			es, err := l.Read(ctx, id)
			if err != nil {
				going = append(going, id+" (no ledger)")
				continue
			}
			rec := ledger.Fold(id, es)
			if rec.Status.Terminal() {
				out[id] = rec
				continue
			}
			going = append(going, fmt.Sprintf("%s (%s at position %d)", id, rec.Status, len(es)))
		}
		if len(going) == 0 {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d runs never ended: %v", len(going), going)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestConcurrentKeyedStartsDriveEachRunOnce (issue 17, item 12): twenty runs
// each started four times at once (a client retrying one Idempotency-Key),
// beside plain starts, all held past several lease renewals by a slow
// model. Every run ends, with one header and one drive, and leaves no lease
// behind. Before the fix the second start of an id in the same process took
// the lease over and then deleted it, so the first drive lost its lease and
// the run stayed running for ever.
func TestConcurrentKeyedStartsDriveEachRunOnce(t *testing.T) {
	const ttl = 600 * time.Millisecond
	h := newHarness(t, Config{LeaseTTL: ttl, SweepInterval: 100 * time.Millisecond})
	startable(t, h.js)
	h.model.during = func(int) { time.Sleep(2 * ttl) } // six renewals a turn
	ctx := context.Background()
	var ids []string
	var wg sync.WaitGroup
	gate := make(chan struct{})
	errs := make(chan string, 200)
	for k := range 20 {
		id := fmt.Sprintf("keyed%02d", k)
		ids = append(ids, id)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-gate
				if r := h.s.StartRun(ctx, startCmd(id, "tester")); r.Error != nil {
					errs <- id + ": " + string(r.Error.Code) + " " + r.Error.Message
				}
			}()
		}
	}
	for k := range 10 {
		id := fmt.Sprintf("plain%02d", k)
		ids = append(ids, id)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			if r := h.s.StartRun(ctx, startCmd(id, "tester")); r.Error != nil {
				errs <- id + ": " + string(r.Error.Code) + " " + r.Error.Message
			}
		}()
	}
	close(gate)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("start refused: %s", e)
	}
	recs := awaitEnded(t, h.s.ledger, ids, 60*time.Second)
	for _, id := range ids {
		es, err := h.s.ledger.Read(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		headers := 0
		for _, e := range es {
			if e.Kind == contracts.KindRunStarted {
				headers++
			}
		}
		if headers != 1 || recs[id].Drives != 1 {
			t.Errorf("run %s: %d headers, %d drives (%v), want one of each", id, headers, recs[id].Drives, kindsOf(es))
		}
	}
	for _, id := range ids {
		awaitLeaseGone(t, h.s.leases.kv, id)
	}
}

// awaitLeaseGone waits (generously) for a finished run's lease to be dropped.
func awaitLeaseGone(t *testing.T, kv jetstream.KeyValue, id string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := kv.Get(context.Background(), id)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s ended and its lease is still there (%v)", id, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// writeRunning writes a run's header and a first drive's driver-resolved,
// as a drive that died (or lost its lease) leaves them.
func writeRunning(t *testing.T, l *ledger.Ledger, runID string) *ledger.Writer {
	t.Helper()
	ctx := context.Background()
	budget, _ := policy.Budget(contracts.WorkflowInvestigation)
	w := l.Writer(runID, 0, nil)
	if _, err := w.Append(ctx, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent,
		WorkflowType: contracts.WorkflowInvestigation, Objective: "test", ConnectionID: "demo",
		Engine: contracts.EngineSQLite, Actor: contracts.Actor{ID: "tester"}, Budget: budget,
		Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowInvestigation)}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Append(ctx, contracts.KindDriverResolved, contracts.DriverResolved{Provider: "test", Model: "gone", Drive: 1, Orchestrator: "gone"}); err != nil {
		t.Fatal(err)
	}
	return w
}

// TestSweepFindsARunningRunWithoutALease (item 12): a run that has not ended
// and holds no lease key at all (whatever removed it) is found by the sweep
// and driven to its end; a run that ended is left alone.
func TestSweepFindsARunningRunWithoutALease(t *testing.T) {
	srv := natstest.Start(t)
	l, err := ledger.Open(context.Background(), srv.JetStream(), ledger.WithWriter("gone"))
	if err != nil {
		t.Fatal(err)
	}
	writeRunning(t, l, "unleased")
	if _, err := writeRunning(t, l, "ended").Append(context.Background(), contracts.KindRunFinished,
		contracts.RunFinished{Status: contracts.StatusFailed, StopReason: contracts.StopFailed}); err != nil {
		t.Fatal(err)
	}
	h := newHarnessOn(t, srv, Config{SweepInterval: 50 * time.Millisecond})
	recs := awaitEnded(t, h.s.ledger, []string{"unleased"}, 30*time.Second)
	if recs["unleased"].Drives != 2 {
		t.Fatalf("the unleased run was driven %d times, want once more (2)", recs["unleased"].Drives)
	}
	es, err := l.Read(context.Background(), "ended")
	if err != nil || len(es) != 3 {
		t.Fatalf("the ended run was touched: %d entries (%v)", len(es), err)
	}
}

// newHarnessOn is newHarness on a server shared with other harnesses.
func newHarnessOn(t *testing.T, srv *natstest.Server, cfg Config) *harness {
	t.Helper()
	cfg.Logger = discard()
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = time.Hour
	}
	if cfg.AbsenceGrace == 0 {
		cfg.AbsenceGrace = 200 * time.Millisecond
	}
	cfg.NATS = srv.Connect()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	js := srv.JetStream()
	l, err := ledger.Open(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{s: s, model: &scriptedModel{}, exec: &fakeExecutors{l: l}, js: js}
	s.models, s.execs = h.model, h.exec
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return h
}

// TestStopHandsRunsToAnotherOrchestratorAtOnce (item 16): an orchestrator
// that stops gracefully hands its runs' leases off, and the orchestrator
// still serving resumes them at once — here it never sweeps and the lease's
// TTL is an hour, so waiting out the lease would never end the run.
func TestStopHandsRunsToAnotherOrchestratorAtOnce(t *testing.T) {
	srv := natstest.Start(t)
	startable(t, srv.JetStream())
	a := newHarnessOn(t, srv, Config{Name: "orch-a", LeaseTTL: time.Hour})
	b := newHarnessOn(t, srv, Config{Name: "orch-b", LeaseTTL: time.Hour})
	inTurn := make(chan struct{})
	var once sync.Once
	a.model.wait = func(ctx context.Context, _ int) error {
		once.Do(func() { close(inTurn) })
		<-ctx.Done() // a turn that outlasts A
		return ctx.Err()
	}
	// Only A serves starts until it stops.
	_ = b.s.svc.Stop()
	if r := a.s.StartRun(context.Background(), startCmd("handed", "tester")); r.Error != nil {
		t.Fatal(r.Error)
	}
	<-inTurn
	restartServing(t, b.s)
	_ = a.s.Stop(context.Background())
	recs := awaitEnded(t, b.s.ledger, []string{"handed"}, 30*time.Second)
	if recs["handed"].Drives != 2 {
		t.Fatalf("drives %d, want 2 (A's, then B's)", recs["handed"].Drives)
	}
	awaitLeaseGone(t, b.s.leases.kv, "handed")
}

// restartServing registers s's endpoints again after its service was stopped.
func restartServing(t *testing.T, s *Service) {
	t.Helper()
	if err := s.serve(s.nc); err != nil {
		t.Fatal(err)
	}
}

// restartable is a JetStream server whose store outlives restarts, and
// clients that follow it to whatever port it listens on next.
type restartable struct {
	t    *testing.T
	dir  string
	srv  *natstest.Server
	addr atomic.Value // host:port of the server now
}

func startRestartable(t *testing.T) *restartable {
	r := &restartable{t: t, dir: t.TempDir()}
	r.start()
	return r
}

func (r *restartable) start() {
	r.srv = natstest.StartIn(r.t, r.dir)
	u, err := url.Parse(r.srv.ClientURL())
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr.Store(u.Host)
}

// Dial dials the server's current address, whatever address nats.go asks.
func (r *restartable) Dial(network, _ string) (net.Conn, error) {
	return net.Dial(network, r.addr.Load().(string))
}

func (r *restartable) connect(opts ...nats.Option) *nats.Conn {
	nc, err := nats.Connect(r.srv.ClientURL(), append([]nats.Option{nats.SetCustomDialer(r), nats.MaxReconnects(-1),
		nats.ReconnectWait(20 * time.Millisecond), nats.ReconnectBufSize(8 << 20)}, opts...)...)
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(nc.Close)
	return nc
}

// TestDriveRidesOutAStreamThatStopsAnswering (issue 17, item 14): JetStream
// stops answering in the middle of a run (its server restarts, as a cluster
// node does while the ledger's stream elects a leader): the append made
// meanwhile is retried until it lands and the lease renewals that fail are
// tried again, so the same drive carries the run to its end — one drive,
// nothing recorded twice. Before, the append failed at once and the drive
// stopped, leaving the run to wait out its lease.
func TestDriveRidesOutAStreamThatStopsAnswering(t *testing.T) {
	r := startRestartable(t)
	// Nothing is buffered while the server is away: every request fails at
	// once, as during a leader election, so every renewal meanwhile fails.
	nc := r.connect(nats.ReconnectBufSize(-1))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	startable(t, js)
	s, err := New(Config{Logger: discard(), SweepInterval: time.Hour, NATS: nc})
	if err != nil {
		t.Fatal(err)
	}
	model := &scriptedModel{}
	l, err := ledger.Open(context.Background(), js)
	if err != nil {
		t.Fatal(err)
	}
	s.models, s.execs = model, &fakeExecutors{l: l}
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	model.wait = func(_ context.Context, n int) error {
		if n == 0 {
			// The turn answers while JetStream is gone for longer than a
			// renewal's interval (5 s), well inside the lease's 15 s.
			r.srv.Stop()
			time.AfterFunc(6*time.Second, r.start)
		}
		return nil
	}
	if reply := s.StartRun(context.Background(), startCmd("outage", "tester")); reply.Error != nil {
		t.Fatal(reply.Error)
	}
	recs := awaitEnded(t, l, []string{"outage"}, 60*time.Second)
	es, err := l.Read(context.Background(), "outage")
	if err != nil {
		t.Fatal(err)
	}
	closing := 0
	for _, e := range es {
		if e.Kind == contracts.KindClosingStatement {
			closing++
		}
	}
	if recs["outage"].Drives != 1 || closing != 2 {
		t.Fatalf("drives %d, closing statements %d (%v): want the one drive, each turn once", recs["outage"].Drives, closing, kindsOf(es))
	}
}

// TestStartPastItsCallersDeadlineCreatesNothing (issue 17, item 15): a start
// that reaches the orchestrator after the instant its caller stopped
// waiting (NotAfter) is refused and writes nothing, so the caller's "not
// created" is true; one inside its deadline is created; a resume is never
// refused for it.
func TestStartPastItsCallersDeadlineCreatesNothing(t *testing.T) {
	h := newHarness(t, Config{})
	startable(t, h.js)
	ctx := context.Background()
	late := startCmd("late", "tester")
	late.NotAfter = time.Now().Add(-time.Millisecond)
	if r := h.s.StartRun(ctx, late); r.Error == nil || r.Error.Code != contracts.CodeUnavailable {
		t.Fatalf("a start past its deadline answered %+v, want %s", r, contracts.CodeUnavailable)
	}
	if _, err := h.s.ledger.Read(ctx, "late"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("a start past its deadline wrote a ledger (%v)", err)
	}
	if _, err := h.s.leases.kv.Get(ctx, "late"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("a start past its deadline left a lease (%v)", err)
	}
	inTime := startCmd("intime", "tester")
	inTime.NotAfter = time.Now().Add(time.Minute)
	if r := h.s.StartRun(ctx, inTime); r.Error != nil {
		t.Fatal(r.Error)
	}
	again := inTime
	again.NotAfter = time.Now().Add(-time.Millisecond)
	if r := h.s.StartRun(ctx, again); r.Error != nil || !r.Resumed {
		t.Fatalf("a resume past its deadline answered %+v, want the run", r)
	}
	awaitEnded(t, h.s.ledger, []string{"intime"}, 30*time.Second)
}

// TestStartAndCancelAnswerOnlyTheRunsActor (issue 17, item 18): the
// orchestrator checks the actor itself, whatever the gateway did: a start
// (resume) or a cancel of another actor's run answers run-not-found and
// changes nothing; the run's own actor may cancel it.
func TestStartAndCancelAnswerOnlyTheRunsActor(t *testing.T) {
	h := newHarness(t, Config{})
	startable(t, h.js)
	h.model.wait = func(ctx context.Context, _ int) error { <-ctx.Done(); return ctx.Err() }
	ctx := context.Background()
	if r := h.s.StartRun(ctx, startCmd("owned", "ann")); r.Error != nil {
		t.Fatal(r.Error)
	}
	if r := h.s.StartRun(ctx, startCmd("owned", "ben")); r.Error == nil || r.Error.Code != contracts.CodeRunNotFound || r.Resumed {
		t.Fatalf("another actor's start of the run answered %+v, want %s", r, contracts.CodeRunNotFound)
	}
	if r := h.s.CancelRun(ctx, contracts.CancelRun{RunID: "owned", Actor: contracts.Actor{ID: "ben"}}); r.Error == nil || r.Error.Code != contracts.CodeRunNotFound {
		t.Fatalf("another actor's cancel answered %+v, want %s", r, contracts.CodeRunNotFound)
	}
	es, err := h.s.ledger.Read(ctx, "owned")
	if err != nil {
		t.Fatal(err)
	}
	if rec := ledger.Fold("owned", es); rec.Status.Terminal() {
		t.Fatalf("another actor's cancel ended the run: %s", rec.Status)
	}
	if r := h.s.CancelRun(ctx, contracts.CancelRun{RunID: "owned", Actor: contracts.Actor{ID: "ann"}}); r.Error != nil || r.Status != contracts.StatusCancelled {
		t.Fatalf("the actor's own cancel answered %+v", r)
	}
}

// TestCancelStopsTheStatementInFlight (issue 17, item 18): cancelling a run
// tells the engine's executors to stop the step it has in flight (an
// exec-cancel naming the run and the step), not only the drive.
func TestCancelStopsTheStatementInFlight(t *testing.T) {
	srv := natstest.Start(t)
	h := newHarnessOn(t, srv, Config{})
	startable(t, h.js)
	const q = "SELECT count(*) FROM forever"
	h.model.script = reads(q)
	asked := make(chan struct{})
	var once sync.Once
	h.exec.answer = func(int, contracts.ExecRequest) (contracts.ExecReply, error) {
		once.Do(func() { close(asked) })
		time.Sleep(time.Second) // the statement runs at the database
		return contracts.ExecReply{}, fmt.Errorf("%w: interrupted", errNoReply)
	}
	watch := srv.Connect()
	cancels, err := watch.SubscribeSync(contracts.ExecCancelSubject(contracts.EngineSQLite))
	if err != nil {
		t.Fatal(err)
	}
	if err := watch.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if r := h.s.StartRun(ctx, startCmd("stopped", "ann")); r.Error != nil {
		t.Fatal(r.Error)
	}
	<-asked
	if r := h.s.CancelRun(ctx, contracts.CancelRun{RunID: "stopped", Actor: contracts.Actor{ID: "ann"}}); r.Error != nil {
		t.Fatal(r.Error)
	}
	m, err := cancels.NextMsg(10 * time.Second)
	if err != nil {
		t.Fatalf("no exec-cancel reached the executors: %v", err)
	}
	var c contracts.ExecCancel
	if err := json.Unmarshal(m.Data, &c); err != nil || c.RunID != "stopped" || c.StepID != stepOf(q) {
		t.Fatalf("exec-cancel %s (%v), want run stopped step %s", m.Data, err, stepOf(q))
	}
}

// hookedKV is the real lease bucket with a hook run after each Get: a test
// puts another claimant's move between a claim's read and its write.
type hookedKV struct {
	jetstream.KeyValue
	afterGet func()
}

func (k *hookedKV) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	e, err := k.KeyValue.Get(ctx, key)
	if k.afterGet != nil {
		f := k.afterGet
		k.afterGet = nil
		f()
	}
	return e, err
}

// TestRetakingALapsedLeaseIsACompareAndSet (issue 17, item 18): two
// orchestrators that both see a lapsed lease and both try to take it: the
// one that writes second, at the revision it read, is refused, so only one
// of them drives the run.
func TestRetakingALapsedLeaseIsACompareAndSet(t *testing.T) {
	ctx := context.Background()
	kv, err := natstest.Start(t).JetStream().KeyValue(ctx, contracts.LeasesBucket) // no orchestrator sweeps it
	if err != nil {
		t.Fatal(err)
	}
	dead, _ := json.Marshal(leaseValue{Owner: "dead", Expires: time.Now().Add(-time.Minute)})
	if _, err := kv.Put(ctx, "lapsed", dead); err != nil {
		t.Fatal(err)
	}
	b := &leases{kv: kv, owner: "b", ttl: time.Minute, now: time.Now}
	hooked := &hookedKV{KeyValue: kv}
	a := &leases{kv: hooked, owner: "a", ttl: time.Minute, now: time.Now}
	var bErr error
	hooked.afterGet = func() { _, bErr = b.claim(ctx, "lapsed") } // B takes it between A's read and A's write
	_, aErr := a.claim(ctx, "lapsed")
	if bErr != nil {
		t.Fatal(bErr)
	}
	if !errors.Is(aErr, errLeaseHeld) {
		t.Fatalf("A's claim at a stale revision answered %v, want errLeaseHeld: both would drive the run", aErr)
	}
	e, err := kv.Get(ctx, "lapsed")
	if err != nil {
		t.Fatal(err)
	}
	var v leaseValue
	if json.Unmarshal(e.Value(), &v) != nil || v.Owner != "b" {
		t.Fatalf("the lease is %s, want B's", e.Value())
	}
}

// TestStartWaitsForABucketNotYetVisible (issue 17, item 16): an orchestrator
// started while the lease bucket does not exist yet (in a cluster, one
// another process just created may not be visible from this node) waits
// for it instead of exiting with "bucket sonde_leases not found".
func TestStartWaitsForABucketNotYetVisible(t *testing.T) {
	srv := natstest.Start(t)
	js := srv.JetStream()
	ctx := context.Background()
	if err := js.DeleteKeyValue(ctx, contracts.LeasesBucket); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(500*time.Millisecond, func() {
		_ = natsx.Resources{Only: []string{contracts.LeasesBucket}}.Ensure(ctx, js)
	})
	s, err := New(Config{Logger: discard(), SweepInterval: time.Hour, StartWait: 20 * time.Second, NATS: srv.Connect()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatalf("start before the bucket was visible: %v", err)
	}
	_ = s.Stop(context.Background())

	// One that never appears is reported once the wait is spent.
	if err := js.DeleteKeyValue(ctx, contracts.LeasesBucket); err != nil {
		t.Fatal(err)
	}
	s, _ = New(Config{Logger: discard(), SweepInterval: time.Hour, StartWait: 300 * time.Millisecond, NATS: srv.Connect()})
	if err := s.Start(ctx); !errors.Is(err, jetstream.ErrBucketNotFound) {
		t.Fatalf("start without the bucket: %v, want bucket not found", err)
	}
}
