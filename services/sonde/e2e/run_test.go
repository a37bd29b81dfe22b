package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/orchestrator"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

func kinds(es []contracts.Entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = string(e.Kind)
	}
	return out
}

func startRun(t *testing.T, c *client.Client, objective string) api.StartRunResponse {
	t.Helper()
	r, err := c.StartRun(context.Background(), api.StartRunRequest{Objective: objective, ConnectionID: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestInvestigationOverHTTP drives one run of the demo investigation through
// every service and checks the ledger's shape, the citations and the verdict.
func TestInvestigationOverHTTP(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	c := s.Client("")
	started := startRun(t, c, "Why did orders fall in March 2025?")
	if started.Mode != contracts.ModeAgent || started.WorkflowType != contracts.WorkflowInvestigation {
		t.Fatalf("persisted mode/workflow: %+v", started)
	}
	es := stacktest.Follow(t, c, started.RunID)
	k := kinds(es)
	t.Logf("ledger: %v", k)

	if len(k) < 7 || k[0] != "run-started" || k[1] != "driver-resolved" || k[2] != "context-captured" {
		t.Fatalf("ledger does not open with run-started, driver-resolved, context-captured: %v", k)
	}
	if k[len(k)-2] != "report-composed" || k[len(k)-1] != "run-finished" {
		t.Fatalf("ledger does not close with report-composed, run-finished: %v", k)
	}
	pairs := 0
	for i := 3; i < len(k)-2; i += 2 {
		if k[i] != "tool-invoked" || k[i+1] != "tool-completed" {
			t.Fatalf("entries %d-%d are %s, %s; want an invoked/completed pair: %v", i, i+1, k[i], k[i+1], k)
		}
		pairs++
	}
	if pairs < 2 {
		t.Fatalf("only %d tool pairs", pairs)
	}
	for i, e := range es {
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d has seq %d", i, e.Seq)
		}
	}

	rec, err := c.Run(context.Background(), started.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusSucceeded || rec.StopReason != contracts.StopReportComposed {
		t.Fatalf("status %s stop %s", rec.Status, rec.StopReason)
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered || v.Rule != "agent-investigation.2" || len(v.Unmet) != 0 {
		t.Fatalf("verdict %+v", rec.GoalVerdict)
	}
	if !rec.Demo || rec.Actor.ID != "local" || rec.Drives != 1 {
		t.Fatalf("record %+v", rec)
	}
	// Every citation names a real artifact of this run, readable over HTTP
	// with the rows the step recorded.
	cited := 0
	for _, claim := range rec.Report {
		for _, ref := range claim.Evidence {
			if ref.Source != contracts.EvidenceArtifact {
				continue
			}
			art, err := c.Artifact(context.Background(), started.RunID, ref.CorrelationID)
			if err != nil {
				t.Fatalf("cited artifact %s: %v", ref.CorrelationID, err)
			}
			if art.Rows == 0 || len(art.Data) != art.Rows || art.RunID != started.RunID {
				t.Fatalf("artifact %s: rows %d data %d run %s", ref.CorrelationID, art.Rows, len(art.Data), art.RunID)
			}
			cited++
		}
	}
	if cited == 0 {
		t.Fatal("the report cites no artifact")
	}
	// Every read carries the guard's canonical fingerprint.
	for _, st := range rec.Steps {
		if st.Tool == "run_read_query" && !strings.HasPrefix(st.Fingerprint, "fp_") {
			t.Fatalf("read step %s has fingerprint %q", st.StepID, st.Fingerprint)
		}
	}
	// The record is a fold of the stream's entries.
	if folded := ledger.Fold(started.RunID, es); folded.Status != rec.Status || folded.Spent != rec.Spent {
		t.Fatalf("fold of the stream %+v differs from the record %+v", folded.Spent, rec.Spent)
	}
}

// readCall is a scripted model call of run_read_query.
func readCall(id, sql string) modeltest.Reply {
	args, _ := json.Marshal(map[string]string{"sql": sql})
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "run_read_query", Arguments: string(args)}}}
}

func reportCall(id string, ids ...string) modeltest.Reply {
	var ev []contracts.EvidenceRef
	for _, cid := range ids {
		ev = append(ev, contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: cid})
	}
	args, _ := json.Marshal(map[string]any{"claims": []contracts.Claim{{Text: "scripted finding", Evidence: ev}}})
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: id, Name: "compose_report", Arguments: string(args)}}}
}

// TestResumeAfterOrchestratorStopsMidStep stops an orchestrator after
// tool-invoked is acknowledged and before the executor answers; a fresh
// orchestrator resumes the run, records the step indeterminate, never runs it
// again, and the run still ends.
func TestResumeAfterOrchestratorStopsMidStep(t *testing.T) {
	const q1 = "SELECT COUNT(*) AS n FROM orders"
	const q2 = "SELECT COUNT(*) AS n FROM customers"
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		switch req.AssistantTurns() {
		case 0:
			return readCall("call_q1", q1), nil
		case 1:
			return readCall("call_q1_again", q1), nil // the indeterminate step asked again
		case 2:
			return readCall("call_q2", q2), nil
		default:
			last := req.LastToolResults()
			if len(last) == 0 {
				return modeltest.Reply{Text: "no result"}, nil
			}
			return reportCall("call_report", modeltest.CitedIDs(last[0].Content)...), nil
		}
	})
	s := stacktest.Start(t, stacktest.Options{Script: script, NoOrchestrator: true})

	// Count every executor request the database could have seen, per step.
	monitor := s.NATS.Connect()
	var mu sync.Mutex
	seen := map[string]int{}
	sub, err := monitor.Subscribe(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func(m *nats.Msg) {
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
	defer sub.Unsubscribe()
	_ = monitor.Flush()

	// Orchestrator A dies inside the window: its connection closes right after
	// the invocation is acknowledged.
	ncA := s.NATS.Connect()
	var invoked atomic.Value
	died := make(chan struct{})
	var once sync.Once
	s.StartOrchestrator(t, ncA, orchestrator.Config{
		Name: "orch-a", LeaseTTL: 600 * time.Millisecond, SweepInterval: time.Hour,
	}, orchestrator.WithAfterInvoke(func(_ string, inv contracts.ToolInvoked) {
		once.Do(func() {
			invoked.Store(inv.StepID)
			ncA.Close()
			close(died)
		})
	}))
	c := s.Client("")
	started := startRun(t, c, "How many orders are there?")
	select {
	case <-died:
	case <-time.After(20 * time.Second):
		t.Fatal("orchestrator A never invoked a step")
	}
	step := invoked.Load().(string)

	// The ledger ends at the invocation: no outcome was recorded.
	l, err := ledger.Open(context.Background(), s.NATS.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		es, err := l.Read(context.Background(), started.RunID)
		return err == nil && es[len(es)-1].Kind == contracts.KindToolInvoked
	})

	// Orchestrator B finds the lapsed lease and resumes the run.
	s.StartOrchestrator(t, s.NATS.Connect(), orchestrator.Config{Name: "orch-b", LeaseTTL: 600 * time.Millisecond, SweepInterval: 100 * time.Millisecond})
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	t.Logf("ledger: %v", kinds(es))

	if rec.Status != contracts.StatusSucceeded || rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Fatalf("resumed run ended %s / %+v", rec.Status, rec.GoalVerdict)
	}
	if rec.Drives != 2 {
		t.Fatalf("drives %d, want 2", rec.Drives)
	}
	var first *contracts.Step
	refusedAgain := false
	for i, st := range rec.Steps {
		if st.StepID == step && first == nil {
			first = &rec.Steps[i]
		}
		if st.Status == contracts.StepRefused && st.Refusal.Code == "step_indeterminate" {
			refusedAgain = true
		}
	}
	if first == nil || first.Status != contracts.StepIndeterminate {
		t.Fatalf("the interrupted step is %+v, want indeterminate", first)
	}
	if !refusedAgain {
		t.Fatal("asking for the indeterminate step again was not refused")
	}
	mu.Lock()
	defer mu.Unlock()
	// Orchestrator A died after recording the intent and before asking, and
	// B never runs an indeterminate step: no executor ever received it. A
	// count of one would mean it was asked before (or without) its intent.
	if seen[step] != 0 {
		t.Fatalf("the executor received the interrupted statement %d times, want never", seen[step])
	}
	// What the model read is fenced: as many closing markers as openings,
	// and at least one of each once a tool result is in the transcript (so
	// the check cannot pass as 0 == 0 with fencing gone).
	results := 0
	for _, req := range modelRequests(s) {
		all := ""
		for _, m := range req.Messages {
			all += m.Content
			if m.Role == "tool" {
				results++
			}
		}
		if o, cl := strings.Count(all, fence.Open), fence.CountClosers(all); o != cl {
			t.Fatalf("transcript opens %d fences and closes %d", o, cl)
		}
		if results > 0 && strings.Count(all, fence.Open) == 0 {
			t.Fatal("a transcript with tool results opens no fence: database text reaches the model unfenced")
		}
	}
	if results == 0 {
		t.Fatal("no transcript carried a tool result: the fence check above checked nothing")
	}
}

// TestCancelStopsARunAtItsNextCheckpoint cancels a run that would read forever.
func TestCancelStopsARunAtItsNextCheckpoint(t *testing.T) {
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		n := req.AssistantTurns() + 1
		return readCall("call_"+itoa(n), "SELECT "+itoa(n)+" AS n"), nil
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	c := s.Client("")
	started := startRun(t, c, "read forever")
	ctx, cancelStream := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelStream()
	completed := 0
	var es []contracts.Entry
	var cancelErr error
	err := c.Stream(ctx, started.RunID, 0, func(e contracts.Entry) error {
		es = append(es, e)
		if e.Kind == contracts.KindToolCompleted {
			completed++
			if completed == 2 {
				_, cancelErr = c.Cancel(context.Background(), started.RunID)
			}
		}
		return nil
	})
	if err != nil || cancelErr != nil {
		t.Fatalf("stream %v cancel %v", err, cancelErr)
	}
	rec := ledger.Fold(started.RunID, es)
	if rec.Status != contracts.StatusCancelled || rec.StopReason != contracts.StopCancelled {
		t.Fatalf("status %s stop %s", rec.Status, rec.StopReason)
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictCancelled {
		t.Fatalf("verdict %+v", rec.GoalVerdict)
	}
	// A second cancel of a finished run is a clear conflict.
	_, err = c.Cancel(context.Background(), started.RunID)
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != contracts.CodeRunFinished {
		t.Fatalf("second cancel: %v", err)
	}
	// Nothing is appended after the end: the drive stopped.
	l, _ := ledger.Open(context.Background(), s.NATS.JetStream())
	time.Sleep(300 * time.Millisecond) // give a runaway drive the chance to show itself
	after, err := l.Read(context.Background(), started.RunID)
	if err != nil {
		t.Fatal(err)
	}
	if last := after[len(after)-1]; last.Kind != contracts.KindRunFinished {
		t.Fatalf("the ledger moved on after run-finished: %v", kinds(after))
	}
}

// TestBadRequestsAndForeignActors checks the refusals a caller can drive.
func TestBadRequestsAndForeignActors(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{Tokens: map[string]contracts.Actor{
		"tok-alice": {ID: "alice", Role: contracts.RoleMember},
		"tok-bob":   {ID: "bob", Role: contracts.RoleMember},
	}})
	alice, bob := s.Client("tok-alice"), s.Client("tok-bob")
	ctx := context.Background()
	bad := []struct {
		req  api.StartRunRequest
		code string
	}{
		{api.StartRunRequest{Objective: "x", ConnectionID: "demo", WorkflowType: "world-domination"}, string(contracts.CodeUnknownWorkflow)},
		{api.StartRunRequest{Objective: "  ", ConnectionID: "demo"}, string(contracts.CodeMissingObjective)},
		{api.StartRunRequest{Objective: "x", ConnectionID: "prod-primary"}, string(contracts.CodeUnknownConnection)},
		{api.StartRunRequest{Objective: "x", ConnectionID: "demo", Mode: "root"}, string(contracts.CodeUnknownMode)},
		// A hand-over is data-analysis's alone: asked elsewhere it is refused, not dropped.
		{api.StartRunRequest{Objective: "x", ConnectionID: "demo", WorkflowType: contracts.WorkflowOperations, AutoExecute: true}, string(contracts.CodeBadRequest)},
		{api.StartRunRequest{Objective: "x", ConnectionID: "demo", WorkflowType: contracts.WorkflowDataAnalysis, Mode: contracts.ModePlanning, AutoExecute: true}, string(contracts.CodeBadRequest)},
	}
	direct := s.NATS.Connect()
	for i, b := range bad {
		_, err := alice.StartRun(ctx, b.req)
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 400 || apiErr.Code != contracts.Code(b.code) {
			t.Errorf("%+v: got %v, want 400 %s", b.req, err, b.code)
			continue
		}
		if apiErr.Message == "" {
			t.Errorf("%+v: refusal without a message", b.req)
		}
		if string(apiErr.Code) == string(contracts.CodeUnknownConnection) {
			continue // the gateway reads the connection from what the executors published
		}
		// The same start sent to the orchestrator, as the gateway would have
		// sent it, is refused the same way: the start rule has one owner.
		cmd := contracts.StartRun{RunID: fmt.Sprintf("bad-start-%d", i), Mode: b.req.Mode, WorkflowType: b.req.WorkflowType,
			Objective: b.req.Objective, ConnectionID: b.req.ConnectionID, AutoExecute: b.req.AutoExecute,
			Actor: contracts.Actor{ID: "alice", Role: contracts.RoleMember}}
		body, _ := json.Marshal(cmd)
		msg, err := direct.Request(contracts.SubjectRunStart, body, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var reply contracts.StartRunReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Error == nil || reply.Error.Code != apiErr.Code || reply.Error.Message != apiErr.Message || reply.Error.Fix != apiErr.Fix {
			t.Errorf("%+v: the orchestrator answered %+v, the gateway %s %q %q", b.req, reply.Error, apiErr.Code, apiErr.Message, apiErr.Fix)
		}
	}
	if _, err := client.New(s.URL, "").Connections(ctx); !isStatus(err, 401) {
		t.Fatalf("no token: %v", err)
	}

	started := startRun(t, alice, "Why did orders fall in March 2025?")
	es := stacktest.Follow(t, alice, started.RunID)
	if len(es) == 0 || ledger.Fold(started.RunID, es).Actor.ID != "alice" {
		t.Fatal("the run header does not name its actor")
	}
	var cid string
	for _, st := range ledger.Fold(started.RunID, es).Steps {
		if st.Artifact != nil {
			cid = st.Artifact.CorrelationID
		}
	}
	if _, err := bob.Run(ctx, started.RunID); !isStatus(err, 404) {
		t.Errorf("bob reads alice's run: %v", err)
	}
	if _, err := bob.Cancel(ctx, started.RunID); !isStatus(err, 404) {
		t.Errorf("bob cancels alice's run: %v", err)
	}
	if err := bob.Stream(ctx, started.RunID, 0, func(contracts.Entry) error { return nil }); !isStatus(err, 404) {
		t.Errorf("bob streams alice's run: %v", err)
	}
	if _, err := bob.Artifact(ctx, started.RunID, cid); !isStatus(err, 404) {
		t.Errorf("bob reads alice's artifact: %v", err)
	}
	if _, err := alice.Artifact(ctx, started.RunID, cid); err != nil {
		t.Errorf("alice reads her own artifact: %v", err)
	}
}

func isStatus(err error, status int) bool {
	var apiErr *client.APIError
	return errors.As(err, &apiErr) && apiErr.Status == status
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 20s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
