package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/policy"
)

// The conversation a run belongs to: the context builder's bounds as a pure
// function, then StartRun on a real embedded NATS server deriving the thread
// from the previous run's ledger, or declining it.

// spineOf is the spine section of a rendered context.
func spineOf(t *testing.T, ctx string) string {
	t.Helper()
	i := strings.Index(ctx, "Earlier steps of this conversation")
	j := strings.Index(ctx, "Report of the newest step")
	if j < 0 {
		j = strings.Index(ctx, "The newest step")
	}
	if i < 0 || j < i {
		t.Fatalf("no spine then evidence in:\n%s", ctx)
	}
	return ctx[i:j]
}

func longChain(n, objChars int) []contracts.ThreadStep {
	chain := make([]contracts.ThreadStep, n)
	for i := range chain {
		obj := fmt.Sprintf("objective %02d ", i+1) + strings.Repeat("which customers churned and why ", objChars/32+1)
		chain[i] = contracts.ThreadStep{RunID: fmt.Sprintf("run%02d", i+1), Objective: obj[:objChars]}
	}
	return chain
}

func longReport(n, chars int) []contracts.Claim {
	claims := make([]contracts.Claim, n)
	for i := range claims {
		text := fmt.Sprintf("finding %02d: ", i+1) + strings.Repeat("the orders table holds 42 rows for that week ", chars/45+1)
		claims[i] = contracts.Claim{Text: text[:chars], Evidence: []contracts.EvidenceRef{
			{Source: contracts.EvidenceArtifact, CorrelationID: fmt.Sprintf("c_%02d", i+1)},
		}}
	}
	return claims
}

func TestThreadContextHoldsItsBoundsOnALongThread(t *testing.T) {
	chain := longChain(25, 5000)
	newest := contracts.Record{RunID: "run25", Status: contracts.StatusSucceeded, Report: longReport(50, 600)}
	ctx, omitted := threadContext(chain, 25, newest)

	if n := runes(ctx); n > contracts.ThreadContextMaxChars {
		t.Fatalf("context is %d characters, more than %d", n, contracts.ThreadContextMaxChars)
	}
	spine := spineOf(t, ctx)
	if n := runes(spine); n > threadSpineMax() {
		t.Fatalf("spine is %d characters, more than %d", n, threadSpineMax())
	}
	// The newest report is present, with its citation, however long the spine.
	if !strings.Contains(ctx, "finding 01: the orders table") || !strings.Contains(ctx, "artifact c_01") {
		t.Fatalf("the newest report's first finding is missing:\n%s", ctx)
	}
	// The newest objective is kept; the oldest are dropped, and both the
	// block and omitted say so.
	if !strings.Contains(spine, "objective 25") || strings.Contains(spine, "objective 01 ") {
		t.Fatalf("spine should keep the newest objectives and drop the oldest:\n%s", spine)
	}
	if !strings.Contains(spine, "older steps of this conversation are not listed here") {
		t.Fatalf("the spine does not say steps were left out:\n%s", spine)
	}
	if !strings.Contains(ctx, "findings are not shown in full") {
		t.Fatalf("the block does not say findings were left out:\n%s", ctx)
	}
	for _, want := range []string{"oldest of 25 earlier steps", "of 50 findings of the newest report", "the tail of 11 objectives longer than 200 characters"} {
		if !strings.Contains(omitted, want) {
			t.Errorf("omitted %q does not say %q", omitted, want)
		}
	}
	// Every carried objective is capped, visibly.
	for _, line := range strings.Split(spine, "\n") {
		if strings.HasPrefix(line, "2") && !strings.HasSuffix(line, "…") {
			t.Errorf("a 5,000-character objective is not cut with a mark: %q", line)
		}
	}
	// The sentence about asked-not-found stands outside the fence.
	if i, j := strings.Index(ctx, "not what was found"), strings.Index(ctx, fence.Open); i < 0 || j < i {
		t.Fatalf("the asked-not-found sentence is not before the fence:\n%s", ctx)
	}
	if err := fencetest.Check(ctx, 1); err != nil {
		t.Fatal(err)
	}
}

func TestThreadContextCutsOneHugeFindingToFit(t *testing.T) {
	newest := contracts.Record{RunID: "r2", Status: contracts.StatusSucceeded, Report: longReport(1, 9000)}
	ctx, omitted := threadContext(longChain(3, 100), 3, newest)
	if runes(ctx) > contracts.ThreadContextMaxChars {
		t.Fatalf("context is %d characters", runes(ctx))
	}
	if !strings.Contains(ctx, "finding 01: the orders") || !strings.Contains(ctx, "… [cites: artifact c_01]") || !strings.Contains(omitted, "1 of 1 findings") || !strings.Contains(omitted, "cut short") {
		t.Fatalf("a huge finding should be shown cut and said so; omitted %q:\n%s", omitted, ctx)
	}
}

func TestThreadContextOfAShortThreadLeavesNothingOut(t *testing.T) {
	chain := []contracts.ThreadStep{{RunID: "r1", Objective: "which customers churned last month"}}
	newest := contracts.Record{RunID: "r1", Status: contracts.StatusSucceeded, Report: []contracts.Claim{
		{Text: "12 customers churned", Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c_1"}}},
	}}
	ctx, omitted := threadContext(chain, 1, newest)
	if omitted != "" {
		t.Fatalf("omitted %q on a short thread", omitted)
	}
	for _, want := range []string{"1. (run r1) which customers churned last month", "- 12 customers churned [cites: artifact c_1]"} {
		if !strings.Contains(ctx, want) {
			t.Fatalf("context lacks %q:\n%s", want, ctx)
		}
	}
	if strings.Contains(ctx, "not shown") || strings.Contains(ctx, "not listed") {
		t.Fatalf("an omission notice on a thread that fits:\n%s", ctx)
	}
}

func TestThreadContextWithoutAReport(t *testing.T) {
	chain := []contracts.ThreadStep{{RunID: "r1", Objective: "count orders"}}
	rec := contracts.Record{RunID: "r1", Status: contracts.StatusFailed, StopReason: contracts.StopTurnLimit}
	rec.Closing = "There are 42 orders."
	ctx, _ := threadContext(chain, 1, rec)
	if !strings.Contains(ctx, "composed no report; its closing statement:\nThere are 42 orders.") {
		t.Fatalf("closing statement not carried:\n%s", ctx)
	}
	rec.Closing = ""
	ctx, _ = threadContext(chain, 1, rec)
	if !strings.Contains(ctx, "composed no report and wrote no closing statement; it ended failed (turn-limit)") {
		t.Fatalf("no-report line missing:\n%s", ctx)
	}
	rec.Closing = strings.Repeat("long closing words ", 400)
	ctx, omitted := threadContext(chain, 1, rec)
	if runes(ctx) > contracts.ThreadContextMaxChars || !strings.Contains(omitted, "closing statement") || !strings.Contains(ctx, "rest of this statement is not shown") {
		t.Fatalf("a long closing statement is not cut and said so (%d chars, omitted %q)", runes(ctx), omitted)
	}
}

// Earlier objectives and the report are untrusted: a forged marker in either
// never closes the fence.
func TestThreadContextHoldsTheFence(t *testing.T) {
	for _, h := range fencetest.Corpus() {
		chain := []contracts.ThreadStep{{RunID: "r1", Objective: "find " + h}, {RunID: "r2", Objective: h + " and more"}}
		rec := contracts.Record{RunID: "r2", Status: contracts.StatusSucceeded, Report: []contracts.Claim{
			{Text: "the table holds " + h, Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: h}}},
		}}
		ctx, _ := threadContext(chain, 2, rec)
		if err := fencetest.Check(ctx, 1); err != nil {
			t.Fatalf("%q: %v\n%s", h, err, ctx)
		}
		rec.Report, rec.Closing = nil, "I found "+h // a closing statement in place of a report
		ctx, _ = threadContext(chain, 2, rec)
		if err := fencetest.Check(ctx, 1); err != nil {
			t.Fatalf("%q: %v\n%s", h, err, ctx)
		}
		if runes(ctx) > contracts.ThreadContextMaxChars {
			t.Fatalf("%q: %d characters", h, runes(ctx))
		}
	}
}

// --- StartRun against the real ledger ---

const threadIdentity = "id-shop-primary"

// putConnection registers a connection descriptor as an executor would.
func putConnection(t *testing.T, h *harness, id, identity string) {
	t.Helper()
	kv, err := h.js.KeyValue(context.Background(), contracts.ConnectionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(contracts.ConnectionDescriptor{ID: id, Engine: contracts.EngineSQLite, Identity: identity})
	if _, err := kv.Put(context.Background(), id, b); err != nil {
		t.Fatal(err)
	}
}

// earlierRun writes a run's ledger directly: its header (changed by tune),
// and, when finished, a report of claims and its end.
func earlierRun(t *testing.T, h *harness, runID string, finished bool, claims []contracts.Claim, tune func(*contracts.RunStarted)) {
	t.Helper()
	ctx := context.Background()
	budget, _ := policy.Budget(contracts.WorkflowInvestigation)
	header := contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation,
		Objective: "which customers churned in " + runID, ConnectionID: "shop", Engine: contracts.EngineSQLite,
		Actor: contracts.Actor{ID: "alice"}, ConnectionIdentity: threadIdentity, Budget: budget,
		Thread: &contracts.Thread{RootRunID: runID, Position: 1}}
	if tune != nil {
		tune(&header)
	}
	w := h.s.ledger.Writer(runID, 0, nil)
	if _, err := w.Append(ctx, contracts.KindRunStarted, header); err != nil {
		t.Fatal(err)
	}
	if !finished {
		return
	}
	if len(claims) > 0 {
		if _, err := w.Append(ctx, contracts.KindReportComposed, contracts.ReportComposed{
			ToolCall: contracts.ToolCall{Turn: 1, CallID: "c1", Tool: policy.ToolComposeReport}, Claims: claims}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Append(ctx, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed}); err != nil {
		t.Fatal(err)
	}
}

// startFollowUp starts runID continuing previous as alice on "shop" and
// returns its header once written, after its drive has ended.
func startFollowUp(t *testing.T, h *harness, runID, previous string, change func(*contracts.StartRun)) contracts.RunStarted {
	t.Helper()
	cmd := contracts.StartRun{RunID: runID, Objective: "and which of those came back in " + runID, ConnectionID: "shop",
		Actor: contracts.Actor{ID: "alice"}, PreviousRunID: previous}
	if change != nil {
		change(&cmd)
	}
	reply := h.s.StartRun(context.Background(), cmd)
	if reply.Error != nil {
		t.Fatalf("start %s: %+v", runID, reply.Error)
	}
	return waitEnded(t, h, runID)
}

// waitEnded waits for the run's drive to end (the run proceeds whatever its
// thread) and returns its header.
func waitEnded(t *testing.T, h *harness, runID string) contracts.RunStarted {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		entries, err := h.s.ledger.Read(context.Background(), runID)
		if err == nil {
			if rec := ledger.Fold(runID, entries); rec.Status.Terminal() {
				var header contracts.RunStarted
				if err := json.Unmarshal(entries[0].Data, &header); err != nil {
					t.Fatal(err)
				}
				if rec.Thread == nil || rec.Thread.RootRunID != header.Thread.RootRunID {
					t.Fatalf("the record does not fold the header's thread: %+v", rec.Thread)
				}
				return header
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("run %s did not end", runID)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestFollowUpReceivesTheThread(t *testing.T) {
	h := newHarness(t, Config{})
	putConnection(t, h, "shop", threadIdentity)
	var mu sync.Mutex
	read := map[string]string{} // run -> what its model read on its first turn
	h.model.script = func(_ int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := read[req.RunID]; !ok {
			var b strings.Builder
			for _, m := range req.Messages {
				b.WriteString(m.Content + "\n")
			}
			read[req.RunID] = b.String()
		}
		return contracts.ModelTurnReply{}
	}
	earlierRun(t, h, "r1", true, []contracts.Claim{{Text: "12 customers churned in March",
		Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c_r1_1"}}}}, nil)

	header := startFollowUp(t, h, "r2", "r1", nil)
	th := header.Thread
	if th == nil || th.Declined != "" {
		t.Fatalf("thread declined or missing: %+v", th)
	}
	if th.RootRunID != "r1" || th.Position != 2 || len(th.Chain) != 1 || th.Chain[0] != (contracts.ThreadStep{RunID: "r1", Objective: "which customers churned in r1"}) {
		t.Fatalf("thread %+v", th)
	}
	for _, want := range []string{"which customers churned in r1", "12 customers churned in March [cites: artifact c_r1_1]", fence.Open, "not what was found"} {
		if !strings.Contains(th.Context, want) {
			t.Fatalf("context lacks %q:\n%s", want, th.Context)
		}
	}
	if header.ConnectionIdentity != threadIdentity {
		t.Fatalf("header identity %q", header.ConnectionIdentity)
	}
	// The model reads the conversation, fenced, before its first turn.
	mu.Lock()
	got := read["r2"]
	mu.Unlock()
	if !strings.Contains(got, "which customers churned in r1") || !strings.Contains(got, "12 customers churned in March") || !strings.Contains(got, "not what was found") {
		t.Fatalf("the model of r2 did not read the conversation:\n%s", got)
	}

	// A third step carries the whole spine, oldest first, and the newest
	// report only: r2 composed none.
	header = startFollowUp(t, h, "r3", "r2", nil)
	th = header.Thread
	if th.RootRunID != "r1" || th.Position != 3 || len(th.Chain) != 2 || th.Chain[1].RunID != "r2" {
		t.Fatalf("thread %+v", th)
	}
	i, j := strings.Index(th.Context, "which customers churned in r1"), strings.Index(th.Context, "and which of those came back in r2")
	if i < 0 || j < i {
		t.Fatalf("spine not oldest first:\n%s", th.Context)
	}
	if strings.Contains(th.Context, "12 customers churned") {
		t.Fatalf("an older step's report was carried:\n%s", th.Context)
	}
}

func TestARunOfItsOwnIsAThreadOfOne(t *testing.T) {
	h := newHarness(t, Config{})
	putConnection(t, h, "shop", threadIdentity)
	header := startFollowUp(t, h, "solo", "", nil)
	if th := header.Thread; th == nil || th.RootRunID != "solo" || th.Position != 1 || th.Declined != "" || th.Context != "" {
		t.Fatalf("thread %+v", th)
	}
}

func TestThreadIsDeclinedAndTheRunProceeds(t *testing.T) {
	h := newHarness(t, Config{})
	putConnection(t, h, "shop", threadIdentity)
	putConnection(t, h, "other", threadIdentity+"-x")
	earlierRun(t, h, "bobs", true, nil, func(r *contracts.RunStarted) { r.Actor = contracts.Actor{ID: "bob"} })
	earlierRun(t, h, "elsewhere", true, nil, func(r *contracts.RunStarted) { r.ConnectionID = "other" })
	earlierRun(t, h, "olddb", true, nil, func(r *contracts.RunStarted) { r.ConnectionIdentity = "id-of-the-old-database" })
	earlierRun(t, h, "going", false, nil, nil)

	cases := []struct {
		previous, reason string
	}{
		{"bobs", "is not one of your runs"},
		{"nosuch", "is not one of your runs"},
		{"elsewhere", "ran on another connection"},
		{"olddb", "reaches another database"},
		{"going", "has not ended yet"},
	}
	for i, c := range cases {
		t.Run(c.previous, func(t *testing.T) {
			runID := fmt.Sprintf("d%d", i)
			header := startFollowUp(t, h, runID, c.previous, nil)
			th := header.Thread
			if th == nil || th.Declined != contracts.ThreadUnavailable || !strings.Contains(th.DeclinedReason, c.reason) {
				t.Fatalf("thread %+v, want declined unavailable with %q", th, c.reason)
			}
			if th.RootRunID != runID || th.Position != 1 || len(th.Chain) != 0 || th.Context != "" {
				t.Fatalf("a declined thread carries something: %+v", th)
			}
			if strings.Contains(th.DeclinedReason, "bob") && c.previous != "bobs" {
				t.Fatalf("reason names another actor: %q", th.DeclinedReason)
			}
		})
	}
	// A foreign run and a missing one read the same, so existence is not revealed.
	a := startFollowUp(t, h, "same1", "bobs", nil).Thread.DeclinedReason
	b := startFollowUp(t, h, "same2", "nosuch", nil).Thread.DeclinedReason
	if strings.Replace(a, `"bobs"`, "X", 1) != strings.Replace(b, `"nosuch"`, "X", 1) {
		t.Fatalf("foreign %q and missing %q differ", a, b)
	}
}

func TestThreadOfARunThatRecordedNoIdentityIsCarried(t *testing.T) {
	h := newHarness(t, Config{})
	putConnection(t, h, "shop", threadIdentity)
	earlierRun(t, h, "old", true, nil, func(r *contracts.RunStarted) { r.ConnectionIdentity, r.Thread = "", nil })
	th := startFollowUp(t, h, "new", "old", nil).Thread
	if th.Declined != "" || th.RootRunID != "old" || th.Position != 2 {
		t.Fatalf("thread %+v", th)
	}
	if !strings.Contains(th.Context, "composed no report and wrote no closing statement") {
		t.Fatalf("context:\n%s", th.Context)
	}
}

func TestThreadContextSwitchedOff(t *testing.T) {
	h := newHarness(t, Config{NoThreadContext: true})
	putConnection(t, h, "shop", threadIdentity)
	earlierRun(t, h, "r1", true, nil, nil)
	th := startFollowUp(t, h, "r2", "r1", nil).Thread
	if th.Declined != contracts.ThreadDisabled || !strings.Contains(th.DeclinedReason, "turned off") || th.Context != "" || th.Position != 1 {
		t.Fatalf("thread %+v", th)
	}
}

func TestThreadBoundsHoldOnAChainOf22Runs(t *testing.T) {
	if testing.Short() {
		t.Skip("drives 22 runs")
	}
	h := newHarness(t, Config{})
	putConnection(t, h, "shop", threadIdentity)
	long := strings.Repeat("and then tell me about the returns ", 20)
	prev := ""
	var header contracts.RunStarted
	for i := range 22 {
		runID := fmt.Sprintf("c%02d", i)
		header = startFollowUp(t, h, runID, prev, func(c *contracts.StartRun) { c.Objective = runID + " " + long })
		prev = runID
	}
	th := header.Thread
	if th.Declined != "" || th.RootRunID != "c00" || th.Position != 22 {
		t.Fatalf("thread root %q position %d declined %q", th.RootRunID, th.Position, th.Declined)
	}
	if len(th.Chain) != contracts.MaxThreadSteps || th.Chain[0].RunID != "c01" || th.Chain[19].RunID != "c20" {
		t.Fatalf("chain of %d from %s", len(th.Chain), th.Chain[0].RunID)
	}
	for _, st := range th.Chain {
		if runes(st.Objective) > contracts.ThreadObjectiveMaxChars {
			t.Fatalf("a chain objective of %d characters", runes(st.Objective))
		}
	}
	if runes(th.Context) > contracts.ThreadContextMaxChars || runes(spineOf(t, th.Context)) > threadSpineMax() {
		t.Fatalf("context %d characters, spine %d", runes(th.Context), runes(spineOf(t, th.Context)))
	}
	if !strings.Contains(th.Omitted, "oldest of 21 earlier steps") || !strings.Contains(th.Context, "not listed here") {
		t.Fatalf("omission not stated: %q\n%s", th.Omitted, th.Context)
	}
	if !strings.Contains(th.Context, "(run c20) c20 and then") {
		t.Fatalf("the newest step is missing:\n%s", th.Context)
	}
}

func TestThreadErrorWhenThePreviousLedgerCannotBeRead(t *testing.T) {
	h := newHarness(t, Config{})
	putConnection(t, h, "shop", threadIdentity)
	// A ledger whose first entry is no header cannot be continued.
	if _, err := h.s.ledger.Writer("headless", 0, nil).Append(context.Background(), contracts.KindDriverResolved,
		contracts.DriverResolved{Provider: "test", Model: "m", Drive: 1}); err != nil {
		t.Fatal(err)
	}
	th := startFollowUp(t, h, "r2", "headless", nil).Thread
	if th.Declined != contracts.ThreadError || th.Position != 1 || th.Context != "" {
		t.Fatalf("thread %+v", th)
	}
}
