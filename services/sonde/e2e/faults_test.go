package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/modelturn"
	"github.com/sondehq/sonde/services/orchestrator"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// The fault-injection suite: whole runs through every service in one process
// (embedded NATS, the real SQLite executor, modelturn on the real openai-go
// SDK against a replay server, the orchestrator, the gateway over HTTP) while
// a part crashes, drains, saturates or runs out of storage. Each case counts
// its runs, the faults it injected, the runs that ended as they should
// despite them, and the runs that did anything twice (a step settled twice, a
// second ending, anything after the end); the last must stay 0. The figures
// are logged at the end and written to $SONDE_FAULT_FIGURES when it is set;
// docs/faults.md quotes them.

// tally is the suite's figures.
type tally struct {
	mu                              sync.Mutex
	runs, faults, recovered, double int
}

var figures tally

// fault counts injected faults.
func (f *tally) fault(n int) {
	f.mu.Lock()
	f.faults += n
	f.mu.Unlock()
}

// run counts one run: whether it ended as it should, and whether its ledger
// shows anything done twice.
func (f *tally) run(t *testing.T, es []contracts.Entry, recovered bool) {
	t.Helper()
	twice := doubled(es)
	if twice != "" {
		t.Errorf("run %s did something twice: %s", runOf(es), twice)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	if recovered {
		f.recovered++
	}
	if twice != "" {
		f.double++
	}
}

func runOf(es []contracts.Entry) string {
	if len(es) == 0 {
		return "?"
	}
	return es[0].RunID
}

// doubled says what a ledger did twice, or "": a step settled twice, more
// than one ending, an entry after the end, or one turn recorded by two
// drives' attempts.
func doubled(es []contracts.Entry) string {
	settled := map[string]int{}
	finished := 0
	for i, e := range es {
		if finished > 0 {
			return fmt.Sprintf("entry %d (%s) after run-finished", i+1, e.Kind)
		}
		switch e.Kind {
		case contracts.KindToolCompleted:
			var p contracts.ToolCompleted
			if json.Unmarshal(e.Data, &p) == nil && p.StepID != "" && !strings.HasPrefix(p.Content, "(Replayed") {
				if p.Outcome == contracts.OutcomeOK || p.Outcome == contracts.OutcomeError {
					settled[p.StepID]++
					if settled[p.StepID] > 1 {
						return "step " + p.StepID + " ran twice"
					}
				}
			}
		case contracts.KindRunFinished:
			finished++
		case contracts.KindReportComposed:
			if hasKindBefore(es[:i], contracts.KindReportComposed) {
				return "two reports"
			}
		}
	}
	return ""
}

func hasKindBefore(es []contracts.Entry, k contracts.EventKind) bool {
	for _, e := range es {
		if e.Kind == k {
			return true
		}
	}
	return false
}

// answered reports a run that composed its report and was judged answered.
func answered(es []contracts.Entry) bool {
	rec := ledger.Fold(runOf(es), es)
	return rec.Status == contracts.StatusSucceeded && rec.GoalVerdict != nil && rec.GoalVerdict.Outcome == contracts.VerdictAnswered
}

// readThenReport reads q on the first turn and reports on the result.
func readThenReport(q string) modeltest.ScriptFunc {
	return func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if req.AssistantTurns() == 0 {
			return readCall("call_read", q), nil
		}
		return reportOnLast(req), nil
	}
}

// reportOnLast composes a report citing the last result's artifact.
func reportOnLast(req modeltest.ChatRequest) modeltest.Reply {
	var ids []string
	for _, r := range req.ToolMessages() {
		ids = append(ids, modeltest.CitedIDs(r.Content)...)
	}
	if len(ids) == 0 {
		return modeltest.Reply{Text: "nothing to cite"}
	}
	return reportCall("call_report", ids[len(ids)-1])
}

func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("fault-injection suite")
	}
	t.Run("ModelturnCrashMidTurn", faultModelturnCrashMidTurn)
	t.Run("CrashAfterReportComposed", faultCrashAfterReportComposed)
	t.Run("ExecutorBusyRefusedThenRetried", faultExecutorBusyRefused)
	t.Run("ExecutorBusyWaitedOut", faultExecutorBusyWaitedOut)
	t.Run("ModelturnDrainsAndRestarts", faultModelturnDrainsAndRestarts)
	t.Run("ExecutorRestarts", faultExecutorRestarts)
	t.Run("ModelturnGoneForGood", faultModelturnGoneForGood)
	t.Run("StoreFull", faultStoreFull)
	t.Run("StartsAreConcurrent", faultStartsAreConcurrent)
	t.Run("StartBurst", faultStartBurst)
	t.Run("IdempotencyKey", faultIdempotencyKey)
	t.Run("IdempotencyKeyIsPerActor", faultIdempotencyKeyIsPerActor)
	t.Run("StartAnsweredLateIsSettled", faultStartAnsweredLateIsSettled)
	t.Run("LeaseGoneAfterFinish", faultLeaseGoneAfterFinish)
	t.Run("CancelStopsTheStatement", faultCancelStopsTheStatement)

	figures.mu.Lock()
	line := fmt.Sprintf("runs=%d faults=%d recovered=%d doubled=%d", figures.runs, figures.faults, figures.recovered, figures.double)
	figures.mu.Unlock()
	t.Log("fault suite: " + line)
	if path := os.Getenv("SONDE_FAULT_FIGURES"); path != "" {
		_ = os.WriteFile(path, []byte(line+"\n"), 0o644)
	}
}

// Item 11: modelturn dies while the model is thinking. The orchestrator
// notices the silence (no heartbeat) within TurnSilence, asks the turn
// again of a restarted replica, and the run answers long before its deadline.
func faultModelturnCrashMidTurn(t *testing.T) {
	const q = "SELECT COUNT(*) AS n FROM orders"
	var asks atomic.Int32
	lost := make(chan struct{})
	hold := make(chan struct{})
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if req.AssistantTurns() == 0 && asks.Add(1) == 1 {
			close(lost)
			<-hold // the replica dies while it waits here
			return modeltest.Reply{Text: "an answer nobody receives"}, nil
		}
		return readThenReport(q)(req)
	})
	s := stacktest.Start(t, stacktest.Options{Script: script,
		Orchestrator: orchestrator.Config{TurnSilence: 500 * time.Millisecond},
		ModelTurn:    func(c *modelturn.Config) { c.HeartbeatInterval = 50 * time.Millisecond },
	})
	t.Cleanup(func() { close(hold) })
	c := s.Client("")
	began := time.Now()
	started := startRun(t, c, "How many orders are there?")
	await(t, lost, "the first turn")
	s.ModelConn.Close() // kill -9: no reply, no heartbeat
	figures.fault(1)
	s.StartModelTurn(t, s.NATS.Connect())

	es := stacktest.Follow(t, c, started.RunID)
	ok := answered(es)
	figures.run(t, es, ok)
	if !ok {
		t.Fatalf("the run did not recover from a lost turn: %v", kinds(es))
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Fatalf("the lost turn was noticed after %s", took)
	}
	if got := asks.Load(); got < 2 {
		t.Fatalf("the first turn was asked %d times", got)
	}
}

// Item 12: the process dies between report-composed and run-finished. The
// resumed drive finishes the run as answered and never asks the model.
func faultCrashAfterReportComposed(t *testing.T) {
	var asks atomic.Int32
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		asks.Add(1)
		return readThenReport("SELECT COUNT(*) AS n FROM customers")(req)
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	c := s.Client("")
	first := startRun(t, c, "How many customers are there?")
	es := stacktest.Follow(t, c, first.RunID)
	if !answered(es) {
		t.Fatalf("the template run did not answer: %v", kinds(es))
	}

	// The crashed run: the same ledger up to and including report-composed.
	ctx := context.Background()
	l, err := ledger.Open(ctx, s.NATS.JetStream(), ledger.WithWriter("crashed-orchestrator"))
	if err != nil {
		t.Fatal(err)
	}
	runID := "rcrashed" + strings.TrimPrefix(first.RunID, "r")[:12]
	w := l.Writer(runID, 0, nil)
	for _, e := range es {
		if _, err := w.Append(ctx, e.Kind, json.RawMessage(e.Data)); err != nil {
			t.Fatal(err)
		}
		if e.Kind == contracts.KindReportComposed {
			break
		}
	}
	figures.fault(1)
	before := asks.Load()
	reply := s.Orch.StartRun(ctx, contracts.StartRun{RunID: runID, Actor: contracts.Actor{ID: "local", Role: contracts.RoleAdmin}})
	if reply.Error != nil || !reply.Resumed {
		t.Fatalf("resume: %+v", reply)
	}
	es = stacktest.Follow(t, c, runID)
	ok := answered(es)
	figures.run(t, es, ok)
	if !ok {
		rec := ledger.Fold(runID, es)
		t.Fatalf("the resumed run ended %s/%s (%s): %v", rec.Status, rec.StopReason, rec.Detail, kinds(es))
	}
	if asks.Load() != before {
		t.Fatalf("the resumed drive asked the model %d more times", asks.Load()-before)
	}
}

// saturate holds every slot of the stack's SQLite executor with reads that
// run for hold, and returns once a further read is refused executor_busy.
// The returned channel closes when the slots are free again.
func saturate(t *testing.T, nc *nats.Conn, hold time.Duration) <-chan struct{} {
	t.Helper()
	endless := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
	subject := contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead)
	freed := make(chan struct{})
	var wg sync.WaitGroup
	for i := range executor.MaxConcurrentReads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := json.Marshal(contracts.ExecRequest{RunID: "saturate", StepID: fmt.Sprintf("hold%d", i), ConnectionID: "demo",
				Profile: contracts.ProfileAgentReadOnly, SQL: endless, TimeoutMs: hold.Milliseconds()})
			for range 50 {
				msg, err := nc.Request(subject, b, hold+10*time.Second)
				var reply contracts.ExecReply
				// A probe below may have taken this hold's slot: take it again.
				if err != nil || json.Unmarshal(msg.Data, &reply) != nil || reply.Refusal == nil || reply.Refusal.Code != contracts.RefuseExecutorBusy {
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(freed) }()
	time.Sleep(100 * time.Millisecond) // let the holds take their slots first
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, _ := json.Marshal(contracts.ExecRequest{RunID: "saturate", StepID: "probe", ConnectionID: "demo",
			Profile: contracts.ProfileAgentReadOnly, SQL: "SELECT 1", TimeoutMs: 1000})
		msg, err := nc.Request(subject, b, 10*time.Second)
		var reply contracts.ExecReply
		if err == nil && json.Unmarshal(msg.Data, &reply) == nil && reply.Refusal != nil && reply.Refusal.Code == contracts.RefuseExecutorBusy {
			return freed
		}
		if time.Now().After(deadline) {
			t.Fatalf("the executor never got saturated: %v %+v", err, reply)
		}
	}
}

// countSteps counts the read requests each step id sent to the executor.
func countSteps(t *testing.T, nc *nats.Conn) func(step string) int {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	sub, err := nc.Subscribe(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func(m *nats.Msg) {
		var req contracts.ExecRequest
		if json.Unmarshal(m.Data, &req) == nil {
			mu.Lock()
			seen[req.StepID]++
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	_ = nc.Flush()
	return func(step string) int {
		mu.Lock()
		defer mu.Unlock()
		return seen[step]
	}
}

// Item 13: a saturated executor refuses executor_busy. With no grace left
// the refusal reaches the model; it costs no statement and no repair, and
// the identical call asked again reaches the executor (not replayed).
func faultExecutorBusyRefused(t *testing.T) {
	const q = "SELECT COUNT(*) AS n FROM payments"
	var freed <-chan struct{}
	var freedMu sync.Mutex
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		switch req.AssistantTurns() {
		case 0:
			return readCall("call_busy", q), nil
		case 1:
			freedMu.Lock()
			ch := freed
			freedMu.Unlock()
			<-ch // ask again once the executor has room
			return readCall("call_again", q), nil
		}
		return reportOnLast(req), nil
	})
	s := stacktest.Start(t, stacktest.Options{Script: script,
		Executor:     func(c *executor.Config) { c.BusyWait = 100 * time.Millisecond },
		Orchestrator: orchestrator.Config{AbsenceGrace: time.Nanosecond},
	})
	seen := countSteps(t, s.NATS.Connect())
	c := s.Client("")
	freedMu.Lock()
	freed = saturate(t, s.NATS.Connect(), 3*time.Second)
	freedMu.Unlock()
	figures.fault(1)
	began := time.Now()
	started := startRun(t, c, "How many payments are there?")
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	t.Logf("after %s: %v", time.Since(began), kinds(es))
	ok := answered(es)
	figures.run(t, es, ok)
	if !ok {
		t.Fatalf("the run ended %s: %v", rec.Status, kinds(es))
	}
	var busy, ran *contracts.Step
	for i, st := range rec.Steps {
		switch {
		case st.Status == contracts.StepRefused && st.Refusal != nil && st.Refusal.Code == contracts.RefuseExecutorBusy:
			busy = &rec.Steps[i]
		case st.Status == contracts.StepCompleted && st.Tool == "run_read_query":
			ran = &rec.Steps[i]
		}
	}
	if busy == nil || ran == nil || busy.StepID != ran.StepID {
		t.Fatalf("want a busy refusal and the same step run after it: %+v", rec.Steps)
	}
	if n := seen(ran.StepID); n < 2 {
		t.Fatalf("the step reached the executor %d times; the retry was replayed", n)
	}
	if rec.Spent.Repairs != 0 {
		t.Fatalf("a busy refusal cost %d repairs", rec.Spent.Repairs)
	}
	if want := contextStatements(es) + 1; rec.Spent.Statements != want {
		t.Fatalf("statements spent %d, want %d: a busy refusal is no statement", rec.Spent.Statements, want)
	}
}

// contextStatements is what the run's context capture cost.
func contextStatements(es []contracts.Entry) int {
	for _, e := range es {
		if e.Kind == contracts.KindContextCaptured {
			var p contracts.ContextCaptured
			_ = json.Unmarshal(e.Data, &p)
			return p.Statements
		}
	}
	return 0
}

// Item 13, with grace: the orchestrator waits out a saturated executor
// itself, and the model never sees the refusal.
func faultExecutorBusyWaitedOut(t *testing.T) {
	const q = "SELECT COUNT(*) AS n FROM products"
	script, inTurn, proceed := heldFirstTurn(q)
	s := stacktest.Start(t, stacktest.Options{Script: script,
		Executor:     func(c *executor.Config) { c.BusyWait = 100 * time.Millisecond },
		Orchestrator: orchestrator.Config{AbsenceGrace: 20 * time.Second},
	})
	seen := countSteps(t, s.NATS.Connect())
	c := s.Client("")
	started := startRun(t, c, "How many products are there?")
	// Saturate after the context capture, before the first read.
	await(t, inTurn, "the first turn")
	saturate(t, s.NATS.Connect(), time.Second)
	figures.fault(1)
	close(proceed)
	es := stacktest.Follow(t, c, started.RunID)
	ok := answered(es)
	figures.run(t, es, ok)
	if !ok {
		t.Fatalf("the run ended: %v", kinds(es))
	}
	for _, st := range ledger.Fold(started.RunID, es).Steps {
		if st.Status == contracts.StepRefused {
			t.Fatalf("a refusal reached the model: %+v", st)
		}
		if st.Tool == "run_read_query" && seen(st.StepID) < 2 {
			t.Fatalf("the read reached the executor %d times; it was never refused busy", seen(st.StepID))
		}
	}
}

// Item 14: SIGTERM to modelturn mid-turn drains it (the turn in flight
// finishes), and the run waits out the absence until a new replica is up.
func faultModelturnDrainsAndRestarts(t *testing.T) {
	const q = "SELECT COUNT(*) AS n FROM order_items"
	script, inTurn, proceed := heldFirstTurn(q)
	s := stacktest.Start(t, stacktest.Options{Script: script,
		Orchestrator: orchestrator.Config{AbsenceGrace: 20 * time.Second}})
	c := s.Client("")
	started := startRun(t, c, "How many order items are there?")
	await(t, inTurn, "the first turn")
	stopped := make(chan struct{})
	go func() { _ = s.ModelTurn.Stop(context.Background()); close(stopped) }() // SIGTERM
	figures.fault(1)
	time.Sleep(100 * time.Millisecond)
	close(proceed) // the turn in flight finishes during the drain
	await(t, stopped, "the drain")
	time.Sleep(time.Second) // nobody serves turns for a while
	s.StartModelTurn(t, s.NATS.Connect())

	requireAnswered(t, c, started.RunID)
}

// Item 14: an executor restarts while a run needs it; the run waits it out.
func faultExecutorRestarts(t *testing.T) {
	const q = "SELECT COUNT(*) AS n FROM customers"
	script, inTurn, proceed := heldFirstTurn(q)
	s := stacktest.Start(t, stacktest.Options{Script: script,
		Orchestrator: orchestrator.Config{AbsenceGrace: 20 * time.Second}})
	c := s.Client("")
	started := startRun(t, c, "How many customers are there?")
	await(t, inTurn, "the first turn")
	if err := s.Executor.Stop(context.Background()); err != nil { // SIGTERM: it drains and leaves
		t.Fatal(err)
	}
	figures.fault(1)
	close(proceed)
	time.Sleep(time.Second) // the read finds no executor for a while
	s.StartExecutor(t, s.NATS.Connect())

	requireAnswered(t, c, started.RunID)
}

// Item 14: a modelturn that stays away past the grace fails the run with
// model-unavailable and a sentence that names the absence, not the LLM_*
// settings.
func faultModelturnGoneForGood(t *testing.T) {
	script, inTurn, proceed := heldFirstTurn("SELECT 1 AS one")
	s := stacktest.Start(t, stacktest.Options{Script: script,
		Orchestrator: orchestrator.Config{AbsenceGrace: 300 * time.Millisecond}})
	c := s.Client("")
	started := startRun(t, c, "Anything?")
	await(t, inTurn, "the first turn")
	stopped := make(chan struct{})
	go func() { _ = s.ModelTurn.Stop(context.Background()); close(stopped) }()
	figures.fault(1)
	time.Sleep(100 * time.Millisecond)
	close(proceed)
	await(t, stopped, "the drain")

	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	ok := rec.Status == contracts.StatusFailed && rec.Reason == contracts.ReasonModelUnavailable &&
		strings.Contains(rec.Detail, "No model-turn service answered") && !strings.Contains(rec.Detail, "LLM_")
	figures.run(t, es, ok)
	if !ok {
		t.Fatalf("the run ended %s/%s: %q", rec.Status, rec.Reason, rec.Detail)
	}
}

// Item 16: the JetStream store fills up mid-run. The run is not lost or
// failed: its append waits and retries, /readyz says not ready and why,
// and when room is made the run carries on and answers.
func faultStoreFull(t *testing.T) {
	srv, err := server.NewServer(&server.Options{JetStream: true, StoreDir: t.TempDir(), DontListen: true, NoSigs: true, NoLog: true,
		JetStreamMaxStore: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server did not start")
	}
	t.Cleanup(srv.Shutdown)
	connect := func(tb testing.TB, name string) *nats.Conn {
		nc, err := nats.Connect("", nats.InProcessServer(srv), nats.Name(name))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(nc.Close)
		return nc
	}
	admin := connect(t, "admin")
	js, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := (natsx.Resources{Admin: true}).Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}

	full := make(chan struct{})
	filled := make(chan struct{})
	var once sync.Once
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if req.AssistantTurns() == 1 {
			once.Do(func() { close(full); <-filled })
		}
		return readThenReport("SELECT COUNT(*) AS n FROM orders")(req)
	})
	s := stacktest.Start(t, stacktest.Options{Script: script, Connect: connect})
	c := s.Client("")
	waitReady(t, s.URL)
	started := startRun(t, c, "How many orders are there?")
	await(t, full, "the second turn")

	// Fill the store with another stream's messages.
	filler, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "FILLER", Subjects: []string{"filler.>"}})
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("x"), 256<<10)
	for i := 0; ; i++ {
		_, err := js.Publish(ctx, "filler.x", chunk)
		if ledger.IsStorageFull(err) {
			break
		}
		if err != nil || i > 200 {
			t.Fatalf("filling the store: %v after %d chunks", err, i)
		}
	}
	figures.fault(1)
	close(filled)

	// The report cannot be recorded: /readyz says why, the run waits.
	waitFor(t, func() bool {
		status, body := get(t, s.URL+api.PathReady)
		return status == http.StatusServiceUnavailable && strings.Contains(body, "lack of storage")
	})
	if rec, err := c.Run(ctx, started.RunID); err != nil || rec.Status != contracts.StatusRunning {
		t.Fatalf("while the store is full the run is %s (%v)", rec.Status, err)
	}

	// Room again: ready, and the run ends answered.
	if err := js.DeleteStream(ctx, filler.CachedInfo().Config.Name); err != nil {
		t.Fatal(err)
	}
	waitReady(t, s.URL)
	es := stacktest.Follow(t, c, started.RunID)
	ok := answered(es)
	figures.run(t, es, ok)
	if !ok {
		t.Fatalf("after the store had room the run ended: %v", kinds(es))
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func waitReady(t *testing.T, base string) {
	t.Helper()
	waitFor(t, func() bool {
		status, _ := get(t, base+api.PathReady)
		return status == http.StatusOK
	})
}

// textOnly is a model that answers in prose: its runs end quickly
// (model-stopped) without touching the database beyond the context.
var textOnly = modeltest.ScriptFunc(func(modeltest.ChatRequest) (modeltest.Reply, error) {
	return modeltest.Reply{Text: "no tools today"}, nil
})

// Item 17: starts are handled concurrently. A start that takes its time
// (its id is being started elsewhere, so it waits for that ledger) does not
// hold up another caller's start.
func faultStartsAreConcurrent(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Script: textOnly})
	ctx := context.Background()
	// A first start warms the gateway's probes, so the one measured below
	// costs only its own round trips.
	warm := startRun(t, s.Client(""), "warm up")
	figures.run(t, stacktest.Follow(t, s.Client(""), warm.RunID), true)
	js := s.NATS.JetStream()
	kv, err := js.KeyValue(ctx, contracts.LeasesBucket)
	if err != nil {
		t.Fatal(err)
	}
	held, _ := json.Marshal(map[string]any{"owner": "elsewhere", "expires": time.Now().Add(time.Hour)})
	if _, err := kv.Put(ctx, "rstartedelsewhere", held); err != nil {
		t.Fatal(err)
	}
	slow := make(chan error, 1)
	go func() {
		b, _ := json.Marshal(contracts.StartRun{RunID: "rstartedelsewhere", Objective: "x", ConnectionID: "demo",
			Actor: contracts.Actor{ID: "local", Role: contracts.RoleAdmin}})
		_, err := s.NATS.Connect().Request(contracts.SubjectRunStart, b, 20*time.Second)
		slow <- err
	}()
	time.Sleep(100 * time.Millisecond) // the slow start is in the orchestrator
	began := time.Now()
	started := startRun(t, s.Client(""), "Who is first?")
	// The slow start waits about 3 s for a ledger that never comes.
	if took := time.Since(began); took > 2500*time.Millisecond {
		t.Fatalf("a start waited %s behind another", took)
	}
	if err := <-slow; err != nil {
		t.Fatal(err)
	}
	es := stacktest.Follow(t, s.Client(""), started.RunID)
	figures.run(t, es, true)
}

// Item 17: a burst of starts all land: no 503, every run distinct.
func faultStartBurst(t *testing.T) {
	const n = 150
	s := stacktest.Start(t, stacktest.Options{Script: textOnly})
	c := s.Client("")
	waitReady(t, s.URL)
	var wg sync.WaitGroup
	ids := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := c.StartRun(context.Background(), api.StartRunRequest{Objective: "burst", ConnectionID: "demo"})
			if err != nil {
				errs <- err
				return
			}
			ids <- r.RunID
		}()
	}
	wg.Wait()
	close(ids)
	close(errs)
	figures.fault(1)
	for err := range errs {
		t.Errorf("start in a burst: %v", err)
	}
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("run %s started twice", id)
		}
		seen[id] = true
	}
	if len(seen) != n {
		t.Fatalf("%d of %d starts landed", len(seen), n)
	}
	for id := range seen {
		es := stacktest.Follow(t, c, id)
		rec := ledger.Fold(id, es)
		figures.run(t, es, rec.Status.Terminal())
	}
}

// postStart sends POST /api/agent/runs with an Idempotency-Key.
func postStart(t *testing.T, base, key string, req api.StartRunRequest) (int, http.Header, []byte) {
	t.Helper()
	b, _ := json.Marshal(req)
	hr, _ := http.NewRequest(http.MethodPost, base+api.PathRuns, bytes.NewReader(b))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set(api.HeaderIdempotencyKey, key)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, body
}

// Item 17: a retried start with the same Idempotency-Key returns the same
// run, concurrent retries included; the key with another request is refused.
func faultIdempotencyKey(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Script: textOnly})
	req := api.StartRunRequest{Objective: "Why did orders fall?", ConnectionID: "demo"}
	status, _, body := postStart(t, s.URL, "key-1", req)
	var first api.StartRunResponse
	if status != http.StatusAccepted || json.Unmarshal(body, &first) != nil || first.RunID == "" {
		t.Fatalf("first start: %d %s", status, body)
	}
	status, hdr, body := postStart(t, s.URL, "key-1", req)
	var again api.StartRunResponse
	if status != http.StatusAccepted || json.Unmarshal(body, &again) != nil || again.RunID != first.RunID ||
		hdr.Get(api.HeaderIdempotentReplayed) != "true" {
		t.Fatalf("retried start: %d %s %v, want run %s", status, body, hdr, first.RunID)
	}
	other := req
	other.Objective = "something else"
	status, _, body = postStart(t, s.URL, "key-1", other)
	if status != http.StatusUnprocessableEntity || !strings.Contains(string(body), string(contracts.CodeIdempotencyConflict)) {
		t.Fatalf("key reused for another request: %d %s", status, body)
	}
	if status, _, body := postStart(t, s.URL, "bad key", req); status != http.StatusBadRequest {
		t.Fatalf("a key with a space: %d %s", status, body)
	}

	// Eight clients retry one start at once: one run.
	figures.fault(1)
	var wg sync.WaitGroup
	got := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, _, body := postStart(t, s.URL, "key-2", req)
			var r api.StartRunResponse
			if status != http.StatusAccepted || json.Unmarshal(body, &r) != nil {
				t.Errorf("concurrent retry: %d %s", status, body)
				return
			}
			got <- r.RunID
		}()
	}
	wg.Wait()
	close(got)
	var id string
	for r := range got {
		if id != "" && r != id {
			t.Fatalf("concurrent retries started %s and %s", id, r)
		}
		id = r
	}
	c := s.Client("")
	for _, run := range []string{first.RunID, id} {
		es := stacktest.Follow(t, c, run)
		starts := 0
		for _, e := range es {
			if e.Kind == contracts.KindRunStarted {
				starts++
			}
		}
		figures.run(t, es, starts == 1)
		if starts != 1 {
			t.Fatalf("run %s has %d run-started entries", run, starts)
		}
	}
}

// Item 18: a finished run's lease is gone as soon as it finishes, even after
// renewals moved its revision on, and no sweep resumes it.
func faultLeaseGoneAfterFinish(t *testing.T) {
	const ttl = 300 * time.Millisecond
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		time.Sleep(ttl) // long enough for renewals
		return readThenReport("SELECT COUNT(*) AS n FROM orders")(req)
	})
	s := stacktest.Start(t, stacktest.Options{Script: script,
		Orchestrator: orchestrator.Config{LeaseTTL: ttl, SweepInterval: 50 * time.Millisecond}})
	c := s.Client("")
	started := startRun(t, c, "How many orders?")
	es := stacktest.Follow(t, c, started.RunID)
	ctx := context.Background()
	kv, err := s.NATS.JetStream().KeyValue(ctx, contracts.LeasesBucket)
	if err != nil {
		t.Fatal(err)
	}
	gone := func() bool {
		_, err := kv.Get(ctx, started.RunID)
		return errors.Is(err, jetstream.ErrKeyNotFound)
	}
	deadline := time.Now().Add(ttl)
	for !gone() {
		if time.Now().After(deadline) {
			t.Fatal("the finished run's lease outlived it")
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(3 * ttl) // a sweep would have found a lapsed lease by now
	l, err := ledger.Open(ctx, s.NATS.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	after, err := l.Read(ctx, started.RunID)
	if err != nil {
		t.Fatal(err)
	}
	ok := len(after) == len(es) && gone() && answered(after)
	figures.run(t, after, ok)
	if !ok {
		t.Fatalf("after finishing: lease gone %v, %d entries then %d", gone(), len(es), len(after))
	}
}

// Item 7 (the orchestrator's part): cancelling a run stops the statement it
// has in flight at the executor, not only the drive: the executor answers
// the interrupted read long before the statement's own 10 s timeout.
func faultCancelStopsTheStatement(t *testing.T) {
	endless := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) AS n FROM c"
	s := stacktest.Start(t, stacktest.Options{Script: readThenReport(endless)})
	monitor := s.NATS.Connect()
	answered := make(chan time.Time, 1)
	inflight := make(chan struct{})
	var once sync.Once
	sub, err := monitor.Subscribe(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func(m *nats.Msg) {
		once.Do(func() {
			// Hear the executor's answer on the requester's inbox too.
			if _, err := monitor.Subscribe(m.Reply, func(*nats.Msg) { answered <- time.Now() }); err != nil {
				t.Error(err)
			}
			_ = monitor.Flush()
			close(inflight)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = monitor.Flush()
	c := s.Client("")
	started := startRun(t, c, "Count forever")
	await(t, inflight, "the endless read")
	time.Sleep(200 * time.Millisecond) // it is running at the database
	figures.fault(1)
	cancelled := time.Now()
	if _, err := c.Cancel(context.Background(), started.RunID); err != nil {
		t.Fatal(err)
	}
	var took time.Duration
	select {
	case at := <-answered:
		took = at.Sub(cancelled)
	case <-time.After(8 * time.Second):
		took = time.Hour
	}
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	ok := rec.Status == contracts.StatusCancelled && took < 3*time.Second
	figures.run(t, es, ok)
	if !ok {
		t.Fatalf("run %s; the statement answered %s after the cancel", rec.Status, took)
	}
}

// heldFirstTurn scripts a run that reads q and reports. Its first turn says
// so on inTurn and then waits until proceed is closed, so a test can stop a
// service while a turn is in flight.
func heldFirstTurn(q string) (script modeltest.Script, inTurn, proceed chan struct{}) {
	inTurn, proceed = make(chan struct{}), make(chan struct{})
	var once sync.Once
	script = modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		once.Do(func() { close(inTurn); <-proceed })
		return readThenReport(q)(req)
	})
	return script, inTurn, proceed
}

// requireAnswered follows a run to its end, counts it in the suite's
// figures, and fails the test unless it answered.
func requireAnswered(t *testing.T, c *client.Client, runID string) {
	t.Helper()
	es := stacktest.Follow(t, c, runID)
	ok := answered(es)
	figures.run(t, es, ok)
	if !ok {
		rec := ledger.Fold(runID, es)
		t.Fatalf("the run ended %s/%s (%s): %v", rec.Status, rec.Reason, rec.Detail, kinds(es))
	}
}

// postStartAs is postStart with a bearer token.
func postStartAs(t *testing.T, base, token, key string, req api.StartRunRequest) (int, []byte) {
	t.Helper()
	b, _ := json.Marshal(req)
	hr, _ := http.NewRequest(http.MethodPost, base+api.PathRuns, bytes.NewReader(b))
	hr.Header.Set("Content-Type", "application/json")
	hr.Header.Set("Authorization", "Bearer "+token)
	hr.Header.Set(api.HeaderIdempotencyKey, key)
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, body
}

// Issue 17, item 10: two actors who happen to send one Idempotency-Key
// never meet: each gets a run of their own (before, the second got 404 on
// the first's run, which blocked it and revealed that the key was in use),
// and each one's retry finds their own run.
func faultIdempotencyKeyIsPerActor(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Script: textOnly, Tokens: map[string]contracts.Actor{
		"tok-ann": {ID: "ann", Role: contracts.RoleMember}, "tok-ben": {ID: "ben", Role: contracts.RoleMember}}})
	req := api.StartRunRequest{Objective: "Why did orders fall?", ConnectionID: "demo"}
	runs := map[string]string{}
	for _, tok := range []string{"tok-ann", "tok-ben", "tok-ann", "tok-ben"} {
		status, body := postStartAs(t, s.URL, tok, "shared-key", req)
		var r api.StartRunResponse
		if status != http.StatusAccepted || json.Unmarshal(body, &r) != nil || r.RunID == "" {
			t.Fatalf("%s's start with the shared key: %d %s", tok, status, body)
		}
		if prev, ok := runs[tok]; ok && prev != r.RunID {
			t.Fatalf("%s's retry started %s, not their run %s", tok, r.RunID, prev)
		}
		runs[tok] = r.RunID
	}
	if runs["tok-ann"] == runs["tok-ben"] {
		t.Fatalf("two actors' starts with one key named one run %s", runs["tok-ann"])
	}
	figures.fault(1)
	for tok, id := range runs {
		es := stacktest.Follow(t, s.Client(tok), id)
		figures.run(t, es, ledger.Fold(id, es).Status.Terminal())
	}
}

// runIDIn finds a run id ("r" and a lowercase ULID, or "k" and 26 base32
// characters of an idempotency key) in an answer's text.
var runIDIn = regexp.MustCompile(`\b[rk][0-9a-z]{26}\b`)

// Issue 17, item 15: a start the orchestrator answers too late for the
// gateway (it is busy with others) is never a 503 for a run that then
// runs: the gateway tells the orchestrator when it stops waiting, the
// orchestrator creates nothing after that, and the gateway's answer, once
// that instant has passed, says what is true. Here the start is queued
// behind others that hold the orchestrator's one command slot past the
// gateway's 10 s: 503, and the run never appears.
func faultStartAnsweredLateIsSettled(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Script: textOnly, Orchestrator: orchestrator.Config{StartConcurrency: 1}})
	warm := startRun(t, s.Client(""), "warm up") // the gateway's probes are memoised from here
	figures.run(t, stacktest.Follow(t, s.Client(""), warm.RunID), true)
	ctx := context.Background()
	kv, err := s.NATS.JetStream().KeyValue(ctx, contracts.LeasesBucket)
	if err != nil {
		t.Fatal(err)
	}
	// Four starts of runs being started elsewhere each hold the slot about
	// 3 s, waiting for a ledger that never comes.
	held, _ := json.Marshal(map[string]any{"owner": "elsewhere", "expires": time.Now().Add(time.Hour)})
	nc := s.NATS.Connect()
	var blockers sync.WaitGroup
	for i := range 4 {
		id := fmt.Sprintf("rblocker%d", i)
		if _, err := kv.Put(ctx, id, held); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(contracts.StartRun{RunID: id, Objective: "x", ConnectionID: "demo",
			Actor: contracts.Actor{ID: "local", Role: contracts.RoleAdmin}})
		blockers.Add(1)
		go func() {
			defer blockers.Done()
			_, _ = nc.Request(contracts.SubjectRunStart, b, 60*time.Second)
		}()
	}
	_ = nc.Flush()
	time.Sleep(200 * time.Millisecond) // the blockers are queued first
	figures.fault(1)
	status, _, body := postStart(t, s.URL, "late-key", api.StartRunRequest{Objective: "late", ConnectionID: "demo"})
	blockers.Wait()
	id := runIDIn.FindString(string(body))
	if status != http.StatusServiceUnavailable || id == "" {
		t.Fatalf("a start queued past the gateway's wait answered %d %s, want 503 naming the run", status, body)
	}
	// Whatever the orchestrator does with the start now, it must not create
	// the run the caller was told does not exist.
	time.Sleep(3 * time.Second)
	l, err := ledger.Open(ctx, s.NATS.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	es, err := l.Read(ctx, id)
	figures.run(t, es, errors.Is(err, ledger.ErrNotFound))
	if !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("the start answered 503 (%s), and run %s was created after all (%d entries, %v)", body, id, len(es), err)
	}
}
