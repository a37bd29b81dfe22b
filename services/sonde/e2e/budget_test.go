package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/orchestrator"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// TestDeadlineReserveAndExpiry moves the orchestrator's clock: inside the
// report reserve the model is told to report now; past the deadline the run
// ends deadline-exceeded, unanswered.
func TestDeadlineReserveAndExpiry(t *testing.T) {
	var offset atomic.Int64
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	reserveSeen := make(chan string, 1)
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		switch req.AssistantTurns() {
		case 0:
			offset.Store(int64(435 * time.Second)) // 15 s left of 450 s: inside the 20 s reserve
			return readCall("a", "SELECT COUNT(*) AS n FROM orders"), nil
		default:
			reserveSeen <- req.LastUserText()
			offset.Store(int64(460 * time.Second)) // past the deadline
			return readCall("b", "SELECT COUNT(*) AS n FROM customers"), nil
		}
	})
	s := stacktest.Start(t, stacktest.Options{Script: script, Orchestrator: orchestrator.Config{Now: now}})
	c := s.Client("")
	started := startRun(t, c, "anything")
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	if rec.Status != contracts.StatusFailed || rec.StopReason != contracts.StopDeadlineExceeded {
		t.Fatalf("status %s stop %s: %v", rec.Status, rec.StopReason, kinds(es))
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered {
		t.Fatalf("verdict %+v", v)
	}
	select {
	case last := <-reserveSeen:
		if !strings.Contains(last, "s of the run's time are left") || !strings.Contains(last, "compose_report") {
			t.Fatalf("inside the reserve the model was last told %q", last)
		}
	default:
		t.Fatal("the model was never asked a second turn")
	}
	// Past the deadline the second statement was not admitted at all.
	if len(rec.Steps) != 2 || rec.Steps[0].Status != contracts.StepCompleted ||
		rec.Steps[1].Refusal == nil || rec.Steps[1].Refusal.Code != "run_deadline_exceeded" {
		t.Fatalf("steps %+v", rec.Steps)
	}
}

// TestHistoryPointerPerFinishedRun: the actor's history stream gets one
// pointer per finished run.
func TestHistoryPointerPerFinishedRun(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	c := s.Client("")
	started := startRun(t, c, "Why did orders fall in March 2025?")
	stacktest.Follow(t, c, started.RunID)
	js := s.NATS.JetStream()
	st, err := js.Stream(context.Background(), contracts.HistoryStream)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		m, err := st.GetLastMsgForSubject(context.Background(), contracts.HistorySubject("local"))
		if err != nil {
			return false
		}
		var p struct {
			RunID  string `json:"runId"`
			Status string `json:"status"`
		}
		return json.Unmarshal(m.Data, &p) == nil && p.RunID == started.RunID && p.Status == string(contracts.StatusSucceeded)
	})
}

// TestAReplyThatNeverComesMakesTheStepIndeterminate: the executor receives a
// statement and loses its connection before it can answer; the orchestrator
// records the step indeterminate once the statement's time and the grace have
// passed, never runs it again, and the run still ends.
func TestAReplyThatNeverComesMakesTheStepIndeterminate(t *testing.T) {
	// Slow enough to still be running when the executor is cut off.
	const slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 5000000) SELECT count(*) AS n FROM c"
	var offset atomic.Int64
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if req.AssistantTurns() == 0 {
			// 2 s left of the run: the statement may take 2 s, the wait 2 s + grace.
			offset.Store(int64(448 * time.Second))
			return readCall("a", slow), nil
		}
		return modeltest.Reply{Text: "nothing to report"}, nil
	})
	now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
	s := stacktest.Start(t, stacktest.Options{Script: script,
		Orchestrator: orchestrator.Config{Now: now, ExecReplyGrace: 200 * time.Millisecond}})

	// Cut the executor off the moment the statement reaches it.
	monitor := s.NATS.Connect()
	var once sync.Once
	sub, err := monitor.Subscribe(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func(*nats.Msg) {
		once.Do(s.ExecutorConn.Close)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := monitor.Flush(); err != nil {
		t.Fatal(err)
	}

	c := s.Client("")
	started := startRun(t, c, "anything")
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	if len(rec.Steps) == 0 || rec.Steps[0].Status != contracts.StepIndeterminate {
		t.Fatalf("steps %+v: %v", rec.Steps, kinds(es))
	}
	if !rec.Status.Terminal() {
		t.Fatalf("run did not end: %s", rec.Status)
	}
	for _, st := range rec.Steps[1:] {
		if st.StepID == rec.Steps[0].StepID && st.Status != contracts.StepRefused {
			t.Fatalf("the indeterminate step ran again: %+v", st)
		}
	}
}
