package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/policy"
)

// The run loop's rules, tested in fast unit tests: the model and the
// executors are scripted through the drive's seams, while the ledger and the
// lease bucket are the real ones on an embedded NATS server.

// scriptedModel answers turn n (0-based) with script(n, req); past the
// script's end it answers with text, which ends the run after two turns.
type scriptedModel struct {
	mu     sync.Mutex
	calls  int
	script func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply
	// during, when set, runs inside every turn before it answers.
	during func(n int)
	// wait, when set, runs inside every turn with the turn's context; an
	// error it returns is the turn's (a real call ends with its context).
	wait func(ctx context.Context, n int) error
}

func (m *scriptedModel) Probe(context.Context) (contracts.ModelProbeReply, error) {
	return contracts.ModelProbeReply{Provider: "test", Model: "scripted"}, nil
}

func (m *scriptedModel) Turn(ctx context.Context, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, error) {
	m.mu.Lock()
	n := m.calls
	m.calls++
	m.mu.Unlock()
	if m.during != nil {
		m.during(n)
	}
	if m.wait != nil {
		if err := m.wait(ctx, n); err != nil {
			return contracts.ModelTurnReply{}, err
		}
	}
	reply := contracts.ModelTurnReply{Provider: "test", Model: "scripted", Text: "nothing more to read"}
	if m.script != nil {
		if r := m.script(n, req); r.Text != "" || len(r.ToolCalls) > 0 {
			reply = r
		}
	}
	return reply, nil
}

// reads is a script that sends one run_read_query per turn, then stops.
func reads(sqls ...string) func(int, contracts.ModelTurnRequest) contracts.ModelTurnReply {
	return func(n int, _ contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n >= len(sqls) {
			return contracts.ModelTurnReply{}
		}
		args, _ := json.Marshal(readArgs{SQL: sqls[n]})
		return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{
			ID: fmt.Sprintf("call_%d", n), Name: policy.ToolRunReadQuery, Arguments: string(args),
		}}}
	}
}

// execCall is one request the fake executor received, with what the ledger
// held at that moment.
type execCall struct {
	op  contracts.ExecOp
	req contracts.ExecRequest
	// intent: the ledger already held this step's tool-invoked, and nothing
	// settled it yet.
	intent bool
	// ledgerLen is the number of entries the ledger held.
	ledgerLen int
}

// fakeExecutors counts requests and records their order against the
// ledger's appends, reading the real ledger at each request.
type fakeExecutors struct {
	l *ledger.Ledger
	// answer, when set, answers reads (nil reply: OK with one row).
	answer func(n int, req contracts.ExecRequest) (contracts.ExecReply, error)

	mu    sync.Mutex
	calls []execCall
	reads int
}

func (x *fakeExecutors) Exec(ctx context.Context, _ contracts.Engine, op contracts.ExecOp, req contracts.ExecRequest) (contracts.ExecReply, error) {
	entries, err := x.l.Read(ctx, req.RunID)
	if err != nil {
		return contracts.ExecReply{}, err
	}
	intent := false
	for _, e := range entries {
		switch e.Kind {
		case contracts.KindToolInvoked, contracts.KindToolCompleted, contracts.KindToolRefused:
			var p struct {
				StepID string `json:"stepId"`
			}
			if json.Unmarshal(e.Data, &p) == nil && p.StepID == req.StepID {
				intent = e.Kind == contracts.KindToolInvoked
			}
		}
	}
	x.mu.Lock()
	x.calls = append(x.calls, execCall{op: op, req: req, intent: intent, ledgerLen: len(entries)})
	n := -1
	if req.StepID != "context" {
		n = x.reads
		x.reads++
	}
	x.mu.Unlock()
	if n >= 0 && x.answer != nil {
		return x.answer(n, req)
	}
	if op == contracts.OpInventory {
		r := okReply(req, 0)
		r.Statements = 1
		r.Inventory = &contracts.Inventory{Engine: contracts.EngineSQLite, Total: 1, Limit: contracts.DefaultInventoryObjects,
			Relations: []contracts.Relation{{Schema: "main", Name: "t", Kind: contracts.RelationTable,
				Columns: []contracts.RelationColumn{{Name: "n", Type: "INTEGER", Nullable: true}}}}}
		return r, nil
	}
	return okReply(req, 5), nil
}

func okReply(req contracts.ExecRequest, ms int64) contracts.ExecReply {
	return contracts.ExecReply{
		Status:     contracts.ExecOK,
		Artifact:   &contracts.ArtifactSummary{CorrelationID: req.CorrelationID, Rows: 1, Columns: []contracts.Column{{Name: "n"}}},
		Cells:      [][]string{{"1"}},
		DurationMs: ms,
	}
}

func failReply(ms int64) contracts.ExecReply {
	return contracts.ExecReply{Status: contracts.ExecError, DurationMs: ms,
		Error: &contracts.DBError{Class: contracts.DBOther, Message: "no such column: x"}}
}

// stepCalls lists the reads the executor received for step.
func (x *fakeExecutors) stepCalls(step string) []execCall {
	x.mu.Lock()
	defer x.mu.Unlock()
	var out []execCall
	for _, c := range x.calls {
		if c.req.StepID == step {
			out = append(out, c)
		}
	}
	return out
}

func (x *fakeExecutors) readCount() int {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.reads
}

// harness is an orchestrator on a real embedded NATS server whose model and
// executors are scripted.
type harness struct {
	s     *Service
	model *scriptedModel
	exec  *fakeExecutors
	js    jetstream.JetStream
}

func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	srv := natstest.Start(t)
	cfg.Logger = discard()
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = time.Hour // these tests drive runs themselves
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

// drive writes a run-started header with the investigation budget, changed
// by tune, drives the run to its end in this goroutine, and returns the
// ledger and its fold.
func (h *harness) drive(t *testing.T, runID string, tune func(*contracts.Budget)) ([]contracts.Entry, contracts.Record, error) {
	t.Helper()
	ctx := context.Background()
	budget, _ := policy.Budget(contracts.WorkflowInvestigation)
	if tune != nil {
		tune(&budget)
	}
	header := contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation, Objective: "test",
		ConnectionID: "demo", Engine: contracts.EngineSQLite, Actor: contracts.Actor{ID: "tester"}, Budget: budget,
		Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowInvestigation)}
	if _, err := h.s.ledger.Writer(runID, 0, nil).Append(ctx, contracts.KindRunStarted, header); err != nil {
		t.Fatal(err)
	}
	derr := h.s.driveHere(runID)
	entries, err := h.s.ledger.Read(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	return entries, ledger.Fold(runID, entries), derr
}

// stepOf is the step id the drive gives a run_read_query of sql.
func stepOf(sql string) string {
	return "s_" + stepKey(policy.ToolRunReadQuery, readArgs{SQL: sql})
}

// completions lists the tool-completed payloads of step, in ledger order.
func completions(t *testing.T, entries []contracts.Entry, step string) []contracts.ToolCompleted {
	t.Helper()
	var out []contracts.ToolCompleted
	for _, e := range entries {
		if e.Kind != contracts.KindToolCompleted {
			continue
		}
		var p contracts.ToolCompleted
		if err := json.Unmarshal(e.Data, &p); err != nil {
			t.Fatal(err)
		}
		if p.StepID == step {
			out = append(out, p)
		}
	}
	return out
}

// refusals lists the refusal codes the run recorded, in order.
func refusals(rec contracts.Record) []contracts.Code {
	var out []contracts.Code
	for _, st := range rec.Steps {
		if st.Status == contracts.StepRefused && st.Refusal != nil {
			out = append(out, st.Refusal.Code)
		}
	}
	return out
}

func kindsOf(entries []contracts.Entry) []contracts.EventKind {
	out := make([]contracts.EventKind, len(entries))
	for i, e := range entries {
		out[i] = e.Kind
	}
	return out
}

// TestDriveRecordsTheIntentBeforeAskingTheExecutor: when the executor is
// asked for a step, the ledger already holds that step's tool-invoked, and
// nothing settled it; the outcome is appended after.
func TestDriveRecordsTheIntentBeforeAskingTheExecutor(t *testing.T) {
	h := newHarness(t, Config{})
	const q = "SELECT COUNT(*) AS n FROM orders"
	h.model.script = reads(q)
	entries, rec, err := h.drive(t, "intent-first", nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := h.exec.stepCalls(stepOf(q))
	if len(calls) != 1 {
		t.Fatalf("the executor was asked %d times for the step, want 1", len(calls))
	}
	if !calls[0].intent {
		t.Fatalf("the executor was asked before the step's tool-invoked was in the ledger (ledger: %v)", kindsOf(entries[:calls[0].ledgerLen]))
	}
	if got := entries[calls[0].ledgerLen-1].Kind; got != contracts.KindToolInvoked {
		t.Fatalf("the entry before the request is %s, want tool-invoked", got)
	}
	if got := entries[calls[0].ledgerLen].Kind; got != contracts.KindToolCompleted {
		t.Fatalf("the entry after the request is %s, want tool-completed", got)
	}
	if rec.Spent.Statements != 2 {
		t.Fatalf("statements spent %d, want 2 (context and the read)", rec.Spent.Statements)
	}
}

// TestDriveReplaysASettledStepInsteadOfRunningItAgain: the same call asked
// again after it settled (completed or failed) is answered from the ledger;
// one that is indeterminate is refused. The executor sees each once.
func TestDriveReplaysASettledStepInsteadOfRunningItAgain(t *testing.T) {
	h := newHarness(t, Config{})
	const ok, bad, lost = "SELECT 1 AS n", "SELECT x FROM orders", "SELECT 2 AS n"
	h.model.script = reads(ok, bad, lost, ok, bad, lost)
	h.exec.answer = func(_ int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		switch req.SQL {
		case bad:
			return failReply(3), nil
		case lost:
			return contracts.ExecReply{}, fmt.Errorf("%w: the reply never came", errNoReply)
		}
		return okReply(req, 5), nil
	}
	entries, rec, err := h.drive(t, "replay", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{ok, bad, lost} {
		if n := len(h.exec.stepCalls(stepOf(q))); n != 1 {
			t.Errorf("the executor saw %q %d times, want once", q, n)
		}
	}
	for _, q := range []string{ok, bad} {
		cs := completions(t, entries, stepOf(q))
		if len(cs) != 2 {
			t.Fatalf("%q settled %d times, want the run and the replay", q, len(cs))
		}
		if !strings.HasPrefix(cs[1].Content, "(Replayed from this run's ledger") || cs[1].Outcome != cs[0].Outcome || cs[1].DurationMs != 0 {
			t.Errorf("the second answer to %q is not a replay: %+v", q, cs[1])
		}
	}
	if got := refusals(rec); len(got) != 1 || got[0] != refuseIndeterminateStep {
		t.Fatalf("refusals %v, want the indeterminate step refused once", got)
	}
	if rec.Spent.Statements != 4 || rec.Spent.Repairs != 1 || rec.Spent.DBTimeMs != 8 {
		t.Fatalf("spent %+v: a replay costs nothing", rec.Spent)
	}
}

// TestDriveRefusesPastTheStatementBudget: once the run has used its
// statements (the context capture counts one), a read is refused before the
// executor is asked.
func TestDriveRefusesPastTheStatementBudget(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = reads("SELECT 1", "SELECT 2", "SELECT 3")
	_, rec, err := h.drive(t, "statements", func(b *contracts.Budget) { b.MaxStatements = 3 })
	if err != nil {
		t.Fatal(err)
	}
	if n := h.exec.readCount(); n != 2 {
		t.Fatalf("the executor ran %d reads, want 2 of a 3-statement budget", n)
	}
	if got := refusals(rec); len(got) != 1 || got[0] != refuseStatementBudget {
		t.Fatalf("refusals %v, want %s", got, refuseStatementBudget)
	}
	if rec.Spent.Statements != 3 {
		t.Fatalf("statements spent %d, want 3", rec.Spent.Statements)
	}
}

// TestDriveRefusesPastTheDatabaseTimeBudget: once the reads have used the
// run's database time, the next is refused before the executor is asked.
func TestDriveRefusesPastTheDatabaseTimeBudget(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = reads("SELECT 1", "SELECT 2", "SELECT 3")
	h.exec.answer = func(_ int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		return okReply(req, 30), nil
	}
	_, rec, err := h.drive(t, "dbtime", func(b *contracts.Budget) { b.DBTimeMs = 50 })
	if err != nil {
		t.Fatal(err)
	}
	if n := h.exec.readCount(); n != 2 {
		t.Fatalf("the executor ran %d reads, want 2 (30 ms each of 50 ms)", n)
	}
	if got := refusals(rec); len(got) != 1 || got[0] != refuseDBTimeBudget {
		t.Fatalf("refusals %v, want %s", got, refuseDBTimeBudget)
	}
	// The second read was given only what was left of the database time.
	if calls := h.exec.stepCalls(stepOf("SELECT 2")); len(calls) != 1 || calls[0].req.TimeoutMs != 20 {
		t.Fatalf("the second read's timeout is not the 20 ms left: %+v", calls)
	}
}

// TestDriveRefusesPastTheRepairBudget: a run has MaxRepairs (3) statements
// that may fail at the database; the fourth read is refused before the
// executor, and the "repairs left" the model reads after each failure counts
// down to exactly that: 2, 1, 0.
func TestDriveRefusesPastTheRepairBudget(t *testing.T) {
	if policy.MaxRepairs != 3 {
		t.Fatalf("MaxRepairs is %d; docs/architecture.md documents 3", policy.MaxRepairs)
	}
	h := newHarness(t, Config{})
	qs := []string{"SELECT a", "SELECT b", "SELECT c", "SELECT d", "SELECT e"}
	h.model.script = func(n int, _ contracts.ModelTurnRequest) contracts.ModelTurnReply {
		switch {
		case n < len(qs):
			return reads(qs...)(n, contracts.ModelTurnRequest{})
		case n == len(qs):
			return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: "i", Name: policy.ToolInspectSchema, Arguments: `{"table":"t"}`}}}
		}
		return contracts.ModelTurnReply{}
	}
	h.exec.answer = func(_ int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		if req.SQL == "" {
			return okReply(req, 1), nil // the schema read
		}
		return failReply(1), nil
	}
	entries, rec, err := h.drive(t, "repairs", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Three failures may each be repaired; the fourth failure may not.
	if n := h.exec.readCount(); n != policy.MaxRepairs+2 {
		t.Fatalf("the executor was asked %d times, want %d failing reads and one schema read", n, policy.MaxRepairs+1)
	}
	says := []string{"Repairs left: 3.", "Repairs left: 2.", "Repairs left: 1.", "No repairs are left"}
	for i, q := range qs[:4] {
		cs := completions(t, entries, stepOf(q))
		if len(cs) != 1 || !strings.Contains(cs[0].Content, says[i]) {
			t.Fatalf("failure %d does not say %q: %+v", i+1, says[i], cs)
		}
	}
	if got := refusals(rec); len(got) != 1 || got[0] != refuseRepairBudget {
		t.Fatalf("refusals %v, want one %s (the fifth statement; the schema read still answers)", got, refuseRepairBudget)
	}
	if rec.Spent.Repairs != policy.MaxRepairs+1 {
		t.Fatalf("failed statements %d, want %d", rec.Spent.Repairs, policy.MaxRepairs+1)
	}
}

// TestDriveFailsExecutorUnavailableWhenNobodyServes: a read nobody receives
// (no responders) certainly did not run: after the absence grace the step is
// refused executor_unavailable and the run fails with that reason; it is
// never recorded indeterminate.
func TestDriveFailsExecutorUnavailableWhenNobodyServes(t *testing.T) {
	h := newHarness(t, Config{AbsenceGrace: 300 * time.Millisecond})
	const q = "SELECT 1"
	h.model.script = reads(q, q)
	h.exec.answer = func(int, contracts.ExecRequest) (contracts.ExecReply, error) {
		return contracts.ExecReply{}, &executorError{err: errors.New("no responders")}
	}
	start := time.Now()
	_, rec, err := h.drive(t, "absent", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusFailed || rec.Reason != contracts.ReasonExecutorUnavailable {
		t.Fatalf("run ended %s / %q, want failed / executor-unavailable", rec.Status, rec.Reason)
	}
	for _, st := range rec.Steps {
		if st.Status == contracts.StepIndeterminate {
			t.Fatalf("an unreceived read was recorded indeterminate: %+v", st)
		}
	}
	if got := refusals(rec); len(got) != 1 || got[0] != refuseExecutor {
		t.Fatalf("refusals %v, want %s", got, refuseExecutor)
	}
	// The absence was waited out, asking again, before the run failed.
	if n := h.exec.readCount(); n < 2 {
		t.Fatalf("the executor was asked %d times within the grace", n)
	}
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Fatalf("the run failed after %s, inside its 300 ms grace", took)
	}
}

// TestDriveRetriesABusyExecutorAtNoCost: an executor_busy refusal is asked
// again, identically; once it answers the step completes, costing one
// statement and no repair.
func TestDriveRetriesABusyExecutorAtNoCost(t *testing.T) {
	h := newHarness(t, Config{AbsenceGrace: 5 * time.Second})
	const q = "SELECT 1"
	h.model.script = reads(q)
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		if n < 2 {
			return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: contracts.RefuseExecutorBusy, Message: "busy"}}, nil
		}
		return okReply(req, 5), nil
	}
	_, rec, err := h.drive(t, "busy", nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := h.exec.stepCalls(stepOf(q))
	if len(calls) != 3 {
		t.Fatalf("the executor was asked %d times, want 3 (busy, busy, answered)", len(calls))
	}
	if got := refusals(rec); len(got) != 0 {
		t.Fatalf("refusals %v, want none", got)
	}
	if rec.Spent.Statements != 2 || rec.Spent.Repairs != 0 {
		t.Fatalf("spent %+v: busy costs nothing", rec.Spent)
	}
}

// TestDriveBusyPastTheGraceCostsNothingAndMayBeAskedAgain: an executor still
// busy after the grace is a refusal the model reads; it costs no statement
// and no repair, and the identical call asked again reaches the executor
// (it is neither replayed nor refused as indeterminate).
func TestDriveBusyPastTheGraceCostsNothingAndMayBeAskedAgain(t *testing.T) {
	h := newHarness(t, Config{AbsenceGrace: 150 * time.Millisecond})
	const q = "SELECT 1"
	h.model.script = reads(q, q)
	busyUntil := time.Now().Add(time.Hour)
	var mu sync.Mutex
	h.exec.answer = func(_ int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		mu.Lock()
		defer mu.Unlock()
		if time.Now().Before(busyUntil) {
			return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: contracts.RefuseExecutorBusy, Message: "busy"}}, nil
		}
		return okReply(req, 5), nil
	}
	h.model.during = func(n int) {
		if n == 1 { // the model asks again: the executor has room now
			mu.Lock()
			busyUntil = time.Now()
			mu.Unlock()
		}
	}
	entries, rec, err := h.drive(t, "busy-past-grace", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := refusals(rec); len(got) != 1 || got[0] != contracts.RefuseExecutorBusy {
		t.Fatalf("refusals %v, want one executor_busy", got)
	}
	cs := completions(t, entries, stepOf(q))
	if len(cs) != 1 || cs[0].Outcome != contracts.OutcomeOK || strings.HasPrefix(cs[0].Content, "(Replayed") {
		t.Fatalf("the call asked again did not run: %+v", cs)
	}
	if rec.Spent.Statements != 2 || rec.Spent.Repairs != 0 {
		t.Fatalf("spent %+v: the busy refusal costs nothing", rec.Spent)
	}
}

// TestDriveRenewsItsLeaseAndReleasesIt: a drive longer than the lease's TTL
// keeps it (renewed, so nobody else may claim the run), and at the end drops
// it at the revision the last renewal left.
func TestDriveRenewsItsLeaseAndReleasesIt(t *testing.T) {
	// Renewed every third of the TTL: a loaded machine would have to miss
	// three renewals in a row to lose it.
	const ttl = 750 * time.Millisecond
	h := newHarness(t, Config{LeaseTTL: ttl})
	other := &leases{kv: h.s.leases.kv, owner: "other", ttl: ttl, now: time.Now}
	claimed := make(chan error, 1)
	h.model.during = func(n int) {
		if n != 0 {
			return
		}
		time.Sleep(3 * ttl) // a slow turn: the lease must outlive its TTL
		_, err := other.claim(context.Background(), "lease")
		claimed <- err
	}
	_, rec, err := h.drive(t, "lease", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := <-claimed; !errors.Is(err, errLeaseHeld) {
		t.Fatalf("another orchestrator's claim during a long drive: %v, want errLeaseHeld (the lease was not renewed)", err)
	}
	if !rec.Status.Terminal() {
		t.Fatalf("the drive ended %s: it lost its lease", rec.Status)
	}
	if _, err := h.s.leases.kv.Get(context.Background(), "lease"); !errors.Is(err, jetstream.ErrKeyNotFound) {
		t.Fatalf("the lease is still there after the drive (%v): released at a stale revision?", err)
	}
}

// TestExecWithoutRespondersIsAbsent: on NATS, a request no executor
// subscribes to is an executorError (it certainly did not run); one that is
// delivered and never answered is errNoReply (it may have).
func TestExecWithoutRespondersIsAbsent(t *testing.T) {
	srv := natstest.Start(t)
	s, _ := New(Config{Logger: discard(), SweepInterval: time.Hour, ExecReplyGrace: 100 * time.Millisecond, NATS: srv.Connect()})
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	ctx := context.Background()
	req := contracts.ExecRequest{RunID: "r", StepID: "s", TimeoutMs: 50}
	_, err := s.execs.Exec(ctx, contracts.EngineDuckDB, contracts.OpRead, req)
	var ee *executorError
	if !errors.As(err, &ee) {
		t.Fatalf("no responders gave %v, want an executorError", err)
	}
	silent := srv.Connect()
	sub, err := silent.SubscribeSync(contracts.ExecSubject(contracts.EngineDuckDB, contracts.OpRead))
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	_ = silent.Flush()
	_, err = s.execs.Exec(ctx, contracts.EngineDuckDB, contracts.OpRead, req)
	if errors.As(err, &ee) || !errors.Is(err, errNoReply) {
		t.Fatalf("an unanswered request gave %v, want errNoReply", err)
	}
}

// TestDriveLostDatabaseCostsNothing (issue 17, item 13): a database that
// stops answering after the run started is a state of the connection, not
// a failure of the statement: whether the executor refuses the read as
// connection_unavailable or fails it as unavailable, the step is asked again
// within the grace, then refused as connection_unavailable at no statement
// and no repair, and the model reads that the database is unreachable in
// the orchestrator's words, never the engine's (which name host, port and
// role). Before, each failed read cost a statement and a repair.
func TestDriveLostDatabaseCostsNothing(t *testing.T) {
	const engineText = `failed to connect to user=sonde_agent database=shop host=127.0.0.1 port=22051: dial error`
	for name, lost := range map[string]contracts.ExecReply{
		"refused": {Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: contracts.RefuseConnectionUnavailable, Message: engineText}},
		"failed":  {Status: contracts.ExecError, Error: &contracts.DBError{Class: contracts.DBUnavailable, Message: engineText}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, Config{AbsenceGrace: 150 * time.Millisecond})
			h.model.script = reads("SELECT 1", "SELECT 2", "SELECT 3", "SELECT 4", "SELECT 5")
			h.exec.answer = func(int, contracts.ExecRequest) (contracts.ExecReply, error) { return lost, nil }
			entries, rec, err := h.drive(t, "lost-"+name, nil)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(h.exec.stepCalls(stepOf("SELECT 1"))); n < 2 {
				t.Errorf("the first read was asked %d times, want it asked again within the grace", n)
			}
			if rec.Spent.Statements != 1 || rec.Spent.Repairs != 0 {
				t.Errorf("spent %+v: a lost database costs no statement (only the context's) and no repair", rec.Spent)
			}
			got := refusals(rec)
			if len(got) != 5 {
				t.Fatalf("refusals %v, want five connection_unavailable", got)
			}
			for _, c := range got {
				if c != contracts.RefuseConnectionUnavailable {
					t.Fatalf("refusals %v, want connection_unavailable each", got)
				}
			}
			for _, e := range entries {
				if e.Kind != contracts.KindToolRefused {
					continue
				}
				var p contracts.ToolRefused
				_ = json.Unmarshal(e.Data, &p)
				if !strings.Contains(p.Content, "cannot be reached") || strings.Contains(p.Content, "127.0.0.1") || strings.Contains(p.Content, "sonde_agent") {
					t.Fatalf("the model reads %q", p.Content)
				}
			}
		})
	}
}
