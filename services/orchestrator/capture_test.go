package orchestrator

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/policy"
)

// runHeader drives a run with the given header to its end.
func (h *harness) runHeader(t *testing.T, runID string, header contracts.RunStarted) ([]contracts.Entry, contracts.Record) {
	t.Helper()
	ctx := context.Background()
	if header.Budget.MaxTurns == 0 {
		header.Budget, _ = policy.Budget(header.WorkflowType)
	}
	if _, err := h.s.ledger.Writer(runID, 0, nil).Append(ctx, contracts.KindRunStarted, header); err != nil {
		t.Fatal(err)
	}
	if err := h.s.driveHere(runID); err != nil {
		t.Fatal(err)
	}
	entries, err := h.s.ledger.Read(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	return entries, ledger.Fold(runID, entries)
}

// describe registers a connection descriptor, as an executor does.
func (h *harness) describe(t *testing.T, d contracts.ConnectionDescriptor) {
	t.Helper()
	kv, err := h.js.KeyValue(context.Background(), contracts.ConnectionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d)
	if _, err := kv.Put(context.Background(), d.ID, b); err != nil {
		t.Fatal(err)
	}
}

func agentHeader(objective string) contracts.RunStarted {
	return contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation, Objective: objective,
		ConnectionID: "demo", Engine: contracts.EngineSQLite, Actor: contracts.Actor{ID: "tester"},
		Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowInvestigation)}
}

func captured(t *testing.T, entries []contracts.Entry) contracts.ContextCaptured {
	t.Helper()
	for _, e := range entries {
		if e.Kind == contracts.KindContextCaptured {
			v, _ := e.Decode()
			return *v.(*contracts.ContextCaptured)
		}
	}
	t.Fatalf("no context-captured in %v", kindsOf(entries))
	return contracts.ContextCaptured{}
}

func (x *fakeExecutors) opCount(op contracts.ExecOp) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, c := range x.calls {
		if c.op == op {
			n++
		}
	}
	return n
}

// TestCaptureIsReusedForTheSameDatabaseOnly: a second run on the same
// connection identity and policy reuses the first run's inventory at no
// statement's cost; a changed identity or readable policy reads it again.
func TestCaptureIsReusedForTheSameDatabaseOnly(t *testing.T) {
	h := newHarness(t, Config{})
	h.describe(t, contracts.ConnectionDescriptor{ID: "demo", Engine: contracts.EngineSQLite, Identity: "db-1", Policy: "p-1"})

	e1, r1 := h.runHeader(t, "reuse-1", agentHeader("first"))
	c1 := captured(t, e1)
	if c1.InventoryRunID != "" || c1.Statements != 1 || r1.Spent.Statements != 1 {
		t.Fatalf("first capture %+v, spent %+v", c1, r1.Spent)
	}
	e2, r2 := h.runHeader(t, "reuse-2", agentHeader("second"))
	c2 := captured(t, e2)
	if c2.InventoryRunID != "reuse-1" || c2.CorrelationID != c1.CorrelationID || c2.Statements != 0 || r2.Spent.Statements != 0 {
		t.Fatalf("second capture %+v, spent %+v: want the first run's, at no cost", c2, r2.Spent)
	}
	if n := h.exec.opCount(contracts.OpInventory); n != 1 {
		t.Fatalf("%d inventory reads, want 1", n)
	}
	// Another database behind the same connection id: read again.
	h.describe(t, contracts.ConnectionDescriptor{ID: "demo", Engine: contracts.EngineSQLite, Identity: "db-2", Policy: "p-1"})
	e3, _ := h.runHeader(t, "reuse-3", agentHeader("third"))
	if c3 := captured(t, e3); c3.InventoryRunID != "" || h.exec.opCount(contracts.OpInventory) != 2 {
		t.Fatalf("after the identity changed the capture %+v was reused", c3)
	}
	// Other readable patterns: read again.
	h.describe(t, contracts.ConnectionDescriptor{ID: "demo", Engine: contracts.EngineSQLite, Identity: "db-2", Policy: "p-2"})
	e4, _ := h.runHeader(t, "reuse-4", agentHeader("fourth"))
	if c4 := captured(t, e4); c4.InventoryRunID != "" || h.exec.opCount(contracts.OpInventory) != 3 {
		t.Fatalf("after the policy changed the capture %+v was reused", c4)
	}
}

// TestSnapshotCitationFollowedLiterallyIsAccepted: a model that cites the
// snapshot exactly as its first message says composes an accepted report.
func TestSnapshotCitationFollowedLiterallyIsAccepted(t *testing.T) {
	h := newHarness(t, Config{})
	cite := regexp.MustCompile(`cite it as (\{[^}]*\})`)
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		m := cite.FindStringSubmatch(req.Messages[2].Content)
		if m == nil {
			return contracts.ModelTurnReply{Text: "no citation instruction found"}
		}
		var ref contracts.EvidenceRef
		if err := json.Unmarshal([]byte(m[1]), &ref); err != nil {
			return contracts.ModelTurnReply{Text: "unreadable citation " + m[1]}
		}
		args, _ := json.Marshal(map[string]any{"claims": []contracts.Claim{{Text: "the database holds table t", Evidence: []contracts.EvidenceRef{ref}}}})
		return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: "r", Name: policy.ToolComposeReport, Arguments: string(args)}}}
	}
	_, rec := h.runHeader(t, "cite-literal", agentHeader("what tables exist?"))
	if rec.Status != contracts.StatusSucceeded || rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Fatalf("status %s verdict %+v refusals %v", rec.Status, rec.GoalVerdict, refusals(rec))
	}
}

// TestPlanningRunIsToolless: no tool reaches the model, the deliverable is
// classified by the guard (asked of the executor, which runs nothing) and
// checked against the inventory, and the verdict is agent-planning.2.
func TestPlanningRunIsToolless(t *testing.T) {
	h := newHarness(t, Config{})
	var toolsSent []int
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		toolsSent = append(toolsSent, len(req.Tools))
		if strings.Contains(req.Messages[2].Content, "inspect_schema") || strings.Contains(req.Messages[0].Content, "compose_report") {
			return contracts.ModelTurnReply{Text: "the planning prompt named a tool"}
		}
		return contracts.ModelTurnReply{Text: "```sqlite\nSELECT n, missing FROM t JOIN nowhere ON 1=1\n```",
			// A tool call the model should not have made is ignored.
			ToolCalls: []contracts.ModelToolCall{{ID: "x", Name: policy.ToolRunReadQuery, Arguments: `{"sql":"SELECT 1"}`}}}
	}
	h.exec.answer = func(_ int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		if req.StepID != "plan" {
			t.Errorf("a planning run asked the executor for %+v", req)
		}
		return contracts.ExecReply{Status: contracts.ExecOK, Check: &contracts.StatementCheck{ReadOnly: true,
			Relations: []contracts.NameRef{{Schema: "main", Name: "t"}, {Schema: "main", Name: "nowhere"}},
			Columns:   []contracts.ColumnRef{{Relation: contracts.NameRef{Schema: "main", Name: "t"}, Column: "missing"}}, ColumnsRead: true, FoldCase: true}}, nil
	}
	header := agentHeader("how many rows?")
	header.Mode, header.Tools = contracts.ModePlanning, policy.Tools(contracts.ModePlanning, contracts.WorkflowInvestigation)
	entries, rec := h.runHeader(t, "plan-1", header)
	if len(toolsSent) != 2 || toolsSent[0]+toolsSent[1] != 0 { // the draft names unknown things: one repair turn
		t.Fatalf("tools sent per turn %v", toolsSent)
	}
	var plan *contracts.PlanStatementDrafted
	for _, e := range entries {
		if e.Kind == contracts.KindPlanStatementDrafted {
			v, _ := e.Decode()
			plan = v.(*contracts.PlanStatementDrafted)
		}
	}
	if plan == nil || !plan.ReadOnly || plan.Identifiers.Status != contracts.IdentifiersChecked ||
		strings.Join(plan.Identifiers.UnknownRelations, ",") != `"main"."nowhere"` ||
		strings.Join(plan.Identifiers.UnknownColumns, ",") != `"main"."t"."missing"` {
		t.Fatalf("plan %+v", plan)
	}
	if len(rec.Steps) != 0 || h.exec.opCount(contracts.OpRead) != 0 {
		t.Fatalf("a planning run ran something: steps %d", len(rec.Steps))
	}
	if v := rec.GoalVerdict; rec.Status != contracts.StatusSucceeded || v == nil || v.Rule != "agent-planning.2" || v.Outcome != contracts.VerdictUnanswered {
		t.Fatalf("status %s verdict %+v", rec.Status, v)
	}
}

func TestEveryWorkflowHasAPlanDeliverable(t *testing.T) {
	for _, w := range contracts.WorkflowTypes {
		h := agentHeader("x")
		h.Mode, h.WorkflowType = contracts.ModePlanning, w
		if p := planningPrompt(&h); !strings.Contains(p, policy.Workflows[w].PlanDeliverable) || policy.Workflows[w].PlanDeliverable == "" {
			t.Errorf("workflow %s: its planning rules do not state its deliverable", w)
		}
	}
}
