package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/policy"
)

// Loops (issue 18, item 7): a replay says once that it is one, a model that
// repeats itself is told after the second identical call or refusal and
// stopped at the third, and a result refused for its size is replayed, not
// run and charged again.

// statusLine matches the status line every tool result ends with.
var statusLine = regexp.MustCompile(`\n\[turn \d+/\d+ · [^\]]*\]$`)

// TestAReplayOfAReplayCarriesOneNote: a settled failing statement asked
// again and again through the step (the loop rule aside) is answered from
// the ledger each time with the note that it is a replay once, and each
// replay is the same text as the one before: nothing stacks, so the
// request does not grow by more than the replayed result. Before the fix
// each replay of a replay stacked another note (34 by turn 35).
func TestAReplayOfAReplayCarriesOneNote(t *testing.T) {
	h := newHarness(t, Config{})
	h.exec.answer = func(int, contracts.ExecRequest) (contracts.ExecReply, error) { return failReply(3), nil }
	ctx := context.Background()
	budget, _ := policy.Budget(contracts.WorkflowInvestigation)
	header := contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation, Objective: "test",
		ConnectionID: "demo", Engine: contracts.EngineSQLite, Actor: contracts.Actor{ID: "tester"}, Budget: budget,
		Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowInvestigation)}
	w := h.s.ledger.Writer("replays", 0, nil)
	e, err := w.Append(ctx, contracts.KindRunStarted, header)
	if err != nil {
		t.Fatal(err)
	}
	d := &drive{s: h.s, runID: "replays", entries: []contracts.Entry{e}, w: w, header: header}
	const bad = "SELECT x FROM orders"
	var contents []string
	for i := range 35 {
		tc := contracts.ToolCall{Turn: i + 1, CallID: fmt.Sprint("c", i), Tool: policy.ToolRunReadQuery, Arguments: []byte(`{"sql":"` + bad + `"}`)}
		if _, err := d.statement(ctx, tc, contracts.OpRead, readArgs{SQL: bad}, nil, contracts.ExecRequest{SQL: bad}); err != nil {
			t.Fatal(err)
		}
		var p contracts.ToolCompleted
		if err := json.Unmarshal(d.entries[len(d.entries)-1].Data, &p); err != nil {
			t.Fatal(err)
		}
		contents = append(contents, statusLine.ReplaceAllString(p.Content, ""))
	}
	if n := len(h.exec.stepCalls(stepOf(bad))); n != 1 {
		t.Fatalf("the executor saw the statement %d times, want once", n)
	}
	for i, c := range contents[1:] {
		if n := strings.Count(c, "Replayed from this run's ledger"); n != 1 {
			t.Fatalf("replay %d carries the replay note %d times, want once:\n%s", i+1, n, c)
		}
		if c != contents[1] {
			t.Fatalf("replay %d differs from the first replay:\n%s\n---\n%s", i+1, c, contents[1])
		}
	}
	if !strings.HasSuffix(contents[1], contents[0]) {
		t.Fatalf("the replay does not carry the original result:\n%s\n---\n%s", contents[1], contents[0])
	}
}

// TestOneFailingStatementResentIsStoppedAtTheThird: a model that resends
// one failing statement (35 times, as a real one did) is answered once by
// the database and once from the ledger; the turn after the second is told
// it is in a loop, naming the call and what to do instead with the run's
// real ids; the third (spelled differently: another reason, a trailing
// semicolon) is recorded verbatim, refused as repeated_call, and ends the
// run: failed, repeated-call, judged, with a sentence naming the call.
// Before the fix the run went on to its turn limit, every request larger
// than the one before.
func TestOneFailingStatementResentIsStoppedAtTheThird(t *testing.T) {
	h := newHarness(t, Config{})
	const bad = "SELECT x FROM orders"
	var reqs []contracts.ModelTurnRequest
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		reqs = append(reqs, req)
		args := fmt.Sprintf(`{"sql":%q,"reason":"try %d"}`, bad, n)
		if n == 2 {
			args = fmt.Sprintf(`{"reason":"again", "sql":%q}`, bad+";")
		}
		return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: fmt.Sprint("call_", n), Name: policy.ToolRunReadQuery, Arguments: args}}}
	}
	h.exec.answer = func(int, contracts.ExecRequest) (contracts.ExecReply, error) { return failReply(3), nil }
	entries, rec, err := h.drive(t, "resend", func(b *contracts.Budget) { b.MaxTurns = 35 })
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 {
		t.Fatalf("the model was asked %d times, want 3 (the third call ends the run)", len(reqs))
	}
	if rec.Status != contracts.StatusFailed || rec.StopReason != contracts.StopRepeatedCall || rec.GoalVerdict == nil {
		t.Fatalf("ended %s/%s (verdict %v), want failed/repeated-call, judged", rec.Status, rec.StopReason, rec.GoalVerdict)
	}
	if !strings.Contains(rec.Detail, policy.ToolRunReadQuery) || !strings.Contains(rec.Detail, bad) || !strings.Contains(rec.Detail, "3 times") {
		t.Errorf("detail %q does not name the call", rec.Detail)
	}
	if n := len(h.exec.stepCalls(stepOf(bad))); n != 1 {
		t.Errorf("the executor saw the statement %d times, want once", n)
	}
	// Turn 2 has no notice; turn 3 names the loop.
	if strings.Contains(lastUser(reqs[1]), "loop") {
		t.Errorf("turn 2 was told of a loop after one call:\n%s", lastUser(reqs[1]))
	}
	notice := lastUser(reqs[2])
	for _, want := range []string{"You are in a loop", policy.ToolRunReadQuery, "2 times", bad, "third identical call ends the run",
		"compose_report", `"correlationId":"schema"`, "Citable in this run: schema"} {
		if !strings.Contains(notice, want) {
			t.Errorf("the notice lacks %q:\n%s", want, notice)
		}
	}
	last := entries[len(entries)-2]
	var p contracts.ToolRefused
	if last.Kind != contracts.KindToolRefused || json.Unmarshal(last.Data, &p) != nil || p.Code != refuseRepeatedCall ||
		!strings.Contains(string(p.Arguments), `"again"`) || p.Turn != 3 {
		t.Fatalf("the third call is recorded as %s %+v, want refused repeated_call with its arguments verbatim", last.Kind, p)
	}
}

// TestALoopNoticeThenAReportAnswers: a model told of its loop that then
// reports, citing the result it read, ends answered.
func TestALoopNoticeThenAReportAnswers(t *testing.T) {
	h := newHarness(t, Config{})
	const good, bad = "SELECT 1 AS n", "SELECT x FROM orders"
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		switch n {
		case 0:
			return reads(good)(0, req)
		case 1, 2:
			return reads(bad)(0, req)
		}
		if !strings.Contains(lastUser(req), "You are in a loop") || !strings.Contains(lastUser(req), `"correlationId":"r1"`) {
			return contracts.ModelTurnReply{Text: "no notice came"}
		}
		return toolCall(n, policy.ToolComposeReport, `{"claims":[{"text":"n is 1.","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`)
	}
	h.exec.answer = func(_ int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		if req.SQL == bad {
			return failReply(3), nil
		}
		return okReply(req, 5), nil
	}
	_, rec, err := h.drive(t, "noticed", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusSucceeded || rec.StopReason != contracts.StopReportComposed {
		t.Fatalf("ended %s/%s (%s), want succeeded by the report after the notice", rec.Status, rec.StopReason, rec.Closing)
	}
}

// TestTheSameRefusalThreeTimesEndsTheRun: three different calls refused
// the same way (the same code and reason) are a loop too: the turn after
// the second names the refusal, and the third ends the run before the
// model is asked again. Refusals that say where the service stands
// (connection_unavailable) are not a loop.
func TestTheSameRefusalThreeTimesEndsTheRun(t *testing.T) {
	h := newHarness(t, Config{})
	var reqs []contracts.ModelTurnRequest
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		reqs = append(reqs, req)
		return toolCall(n, "execute_sql", fmt.Sprintf(`{"sql":"SELECT %d"}`, n))
	}
	_, rec, err := h.drive(t, "refused-thrice", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(reqs) != 3 || rec.StopReason != contracts.StopRepeatedCall || rec.Status != contracts.StatusFailed {
		t.Fatalf("asked %d times, ended %s/%s, want 3 and failed/repeated-call", len(reqs), rec.Status, rec.StopReason)
	}
	if got := refusals(rec); joinCodes(got) != "unknown_tool,unknown_tool,unknown_tool" {
		t.Errorf("refusals %v", got)
	}
	notice := lastUser(reqs[2])
	for _, want := range []string{"You are in a loop", "2 of your calls were refused the same way", string(refuseUnknownTool), "execute_sql", "third such refusal"} {
		if !strings.Contains(notice, want) {
			t.Errorf("the notice lacks %q:\n%s", want, notice)
		}
	}
	if !strings.Contains(rec.Detail, string(refuseUnknownTool)) || !strings.Contains(rec.Detail, "3 times") {
		t.Errorf("detail %q does not name the refusal", rec.Detail)
	}

	// The connection's state is no loop: three refusals of it, then a report.
	h2 := newHarness(t, Config{AbsenceGrace: 10_000_000})
	h2.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n < 3 {
			return reads(fmt.Sprintf("SELECT %d AS n", n))(0, req)
		}
		return toolCall(n, policy.ToolComposeReport, `{"claims":[{"text":"The database could not be reached.","evidence":[{"source":"artifact","correlationId":"schema"}]}]}`)
	}
	h2.exec.answer = func(int, contracts.ExecRequest) (contracts.ExecReply, error) {
		return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: contracts.RefuseConnectionUnavailable, Message: "down"}}, nil
	}
	_, rec2, err := h2.drive(t, "unreachable", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec2.StopReason == contracts.StopRepeatedCall {
		t.Fatalf("three refusals of an unreachable database ended the run as a loop: %s", rec2.Detail)
	}
}

// TestATooLargeResultIsReplayedNotRunAgain: a statement whose result was
// refused for its size ran and was charged; sent again, the refusal is
// replayed from the ledger: the executor sees it once and the run is
// charged one statement for it. Before the fix it ran, and was charged,
// every time it was sent.
func TestATooLargeResultIsReplayedNotRunAgain(t *testing.T) {
	h := newHarness(t, Config{})
	const big = "SELECT * FROM orders"
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n < 2 {
			return reads(big)(0, req)
		}
		return contracts.ModelTurnReply{}
	}
	h.exec.answer = func(int, contracts.ExecRequest) (contracts.ExecReply, error) {
		return contracts.ExecReply{Status: contracts.ExecRefused, DurationMs: 40, Refusal: &contracts.Refusal{Code: contracts.RefuseResultTooLarge,
			Message: "the result has more than 200 rows", Fix: "add a LIMIT, or aggregate"}}, nil
	}
	entries, rec, err := h.drive(t, "too-large", nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.exec.stepCalls(stepOf(big))); n != 1 {
		t.Fatalf("the executor ran the too-large statement %d times, want once", n)
	}
	if rec.Spent.Statements != 2 {
		t.Errorf("statements spent %d, want 2 (the context and the one read that ran)", rec.Spent.Statements)
	}
	var replays []contracts.ToolRefused
	for _, e := range entries {
		var p contracts.ToolRefused
		if e.Kind == contracts.KindToolRefused && json.Unmarshal(e.Data, &p) == nil && p.Code == contracts.RefuseResultTooLarge {
			replays = append(replays, p)
		}
	}
	if len(replays) != 2 || !strings.HasPrefix(replays[1].Content, replayedTooLarge) || strings.Count(replays[1].Content, "Replayed") != 1 ||
		!strings.Contains(replays[1].Content, "add a LIMIT") {
		t.Fatalf("the second send was answered %+v, want the refusal replayed once-noted", replays)
	}
	if got := ledger.Fold("too-large", entries).Spent.Statements; got != 2 {
		t.Errorf("the fold charges %d statements", got)
	}
}

// TestCallKeyReadsTheCallNotItsSpelling: the same statement with another
// reason, other spacing, a trailing semicolon, the keys in another order
// or the tool named with a functions. prefix is the same call; another
// statement, or another tool, is not.
func TestCallKeyReadsTheCallNotItsSpelling(t *testing.T) {
	base := callKey(policy.ToolRunReadQuery, `{"sql":"SELECT 1","reason":"a"}`)
	for _, same := range [][2]string{
		{policy.ToolRunReadQuery, `{"reason":"b","sql":"  SELECT 1;"}`},
		{"functions." + policy.ToolRunReadQuery, `{"sql":"SELECT 1","reason":null}`},
	} {
		if k := callKey(same[0], same[1]); k != base {
			t.Errorf("%s %s is another call (%q vs %q)", same[0], same[1], k, base)
		}
	}
	for _, other := range [][2]string{
		{policy.ToolRunReadQuery, `{"sql":"SELECT 2","reason":"a"}`},
		{policy.ToolInspectPlan, `{"sql":"SELECT 1","reason":"a","hypotheticalIndex":null}`},
	} {
		if callKey(other[0], other[1]) == base {
			t.Errorf("%s %s is the same call as SELECT 1", other[0], other[1])
		}
	}
	a := callKey(policy.ToolComposeReport, `{"claims":[{"text":"x","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`)
	b := callKey(policy.ToolComposeReport, `{ "claims": [ {"evidence":[{"correlationId":"r1","source":"artifact"}], "text":"x"} ] }`)
	if a != b {
		t.Errorf("the same report spelled twice is two calls")
	}
}
