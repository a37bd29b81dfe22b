package orchestrator

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// skeletonIn is the compose_report call a nudge offers, its arguments as
// JSON, or "".
func skeletonIn(nudge string) string {
	for _, l := range strings.Split(nudge, "\n") {
		if a, ok := strings.CutPrefix(l, "compose_report "); ok && json.Valid([]byte(a)) {
			return a
		}
	}
	return ""
}

// TestProseAnswerIsOfferedAReadyReport (issue 18, item 10, reproduced): a
// model that answers in prose and, shown a ready compose_report call,
// sends it with its finding, answers the run. Before, it was told only
// "you wrote prose", wrote its answer again, and the run ended
// model-stopped with the answer discarded. The skeleton cites the run's
// real result id in the exact argument shape and lists what is citable,
// and the transcript rebuilt from the ledger shows the same nudge.
func TestProseAnswerIsOfferedAReadyReport(t *testing.T) {
	h := newHarness(t, Config{})
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		r := okReply(req, 0)
		r.Artifact.Columns, r.Cells = []contracts.Column{{Name: "genre"}, {Name: "revenue"}}, [][]string{{"Rock", "826.65"}}
		return r, nil
	}
	answer := "Rock is the best-selling genre, with 826.65 in revenue."
	var nudge string
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		switch n {
		case 0:
			return reads("SELECT genre, SUM(total) AS revenue FROM t GROUP BY genre")(0, req)
		case 1:
			return contracts.ModelTurnReply{Text: answer}
		}
		// The answer again — sent as the offered call when there is one.
		nudge = lastUser(req)
		sk := skeletonIn(nudge)
		if sk == "" {
			return contracts.ModelTurnReply{Text: answer}
		}
		return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: "rep", Name: policy.ToolComposeReport,
			Arguments: strings.Replace(sk, "<your finding>", answer, 1)}}}
	}
	entries, rec, err := h.drive(t, "prose", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.StopReason != contracts.StopReportComposed || rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Fatalf("stop %s verdict %+v (%v), want answered; the model was told %q", rec.StopReason, rec.GoalVerdict, kindsOf(entries), nudge)
	}
	if sk := skeletonIn(nudge); sk != `{"claims":[{"text":"<your finding>","evidence":[{"source":"artifact","correlationId":"r1"}]}]}` {
		t.Errorf("skeleton %q", sk)
	}
	if !strings.Contains(nudge, "Citable in this run: r1 (run_read_query, 1 row), schema (the schema snapshot: structure only).") {
		t.Errorf("the nudge does not list what is citable: %q", nudge)
	}
	// Pure: the nudge after the prose turn, rebuilt from the ledger, is
	// what the model was sent.
	msgs := transcript(entries, "")
	var rebuilt string
	for i, m := range msgs {
		if m.Role == contracts.RoleAssistant && m.Content == answer && i+1 < len(msgs) {
			rebuilt = msgs[i+1].Content
		}
	}
	if rebuilt != nudge {
		t.Fatalf("rebuilt nudge %q, sent %q", rebuilt, nudge)
	}
}

// TestProseBeforeAnyReadingIsAskedToRead: prose before any result was
// shown offers no skeleton (it would cite nothing real): the model is asked
// to read first, and given only the snapshot's real id.
func TestProseBeforeAnyReadingIsAskedToRead(t *testing.T) {
	h := newHarness(t, Config{})
	var told string
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n == 1 {
			told = lastUser(req)
		}
		return contracts.ModelTurnReply{Text: "Rock sells best."}
	}
	_, rec, err := h.drive(t, "proseearly", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.StopReason != contracts.StopModelStopped {
		t.Fatalf("stop %s, want model-stopped after two prose turns", rec.StopReason)
	}
	if skeletonIn(told) != "" || !strings.Contains(told, "This run has read no data yet") || !strings.Contains(told, "Citable now: schema") {
		t.Fatalf("told %q", told)
	}
}

// TestQuestionEndsTheRunAtOnce (item 10, reproduced): a clarifying question
// ends the run on its first asking, stopped question-asked with the
// question as the model wrote it, its verdict unanswered with the
// question-asked shortfall, folded into the record. Before, the model was
// nudged, asked again, and the run ended "the model stopped" with the
// question lost.
func TestQuestionEndsTheRunAtOnce(t *testing.T) {
	h := newHarness(t, Config{})
	q := "Do you mean invoice totals or units sold?\nAnd which year — 2012 or 2013?"
	turns := 0
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		turns++
		return contracts.ModelTurnReply{Text: q + "\n"}
	}
	entries, rec, err := h.drive(t, "question", nil)
	if err != nil {
		t.Fatal(err)
	}
	if turns != 1 || rec.StopReason != contracts.StopQuestion || rec.Question != q {
		t.Fatalf("after %d turns: stop %s question %q (%v)", turns, rec.StopReason, rec.Question, kindsOf(entries))
	}
	v := rec.GoalVerdict
	if v == nil || v.Outcome != contracts.VerdictUnanswered || !slices.Contains(v.Unmet, verdict.UnmetQuestion) {
		t.Fatalf("verdict %+v", v)
	}
	if rec.Detail != questionDetail {
		t.Errorf("detail %q", rec.Detail)
	}
}

// TestProseWithAQuestionMarkIsNoQuestion (item 10): prose that asks and
// answers ("Which genre sells best? Rock."), or holds a question mark
// anywhere but at its end, goes on to the prose nudge; only text that ends
// on a question stops the run.
func TestProseWithAQuestionMarkIsNoQuestion(t *testing.T) {
	for _, c := range []struct {
		text string
		is   bool
	}{
		{"Which genre sells best? Rock, with 826.65 in revenue.", false},
		{"Is `total` in cents? It is; the figures below are in dollars.", false},
		{"Rock sells best.", false},
		{"", false},
		{"Do you mean invoice totals or units? Which year?", true},
		{"Which year do you mean?**", true},
		{"I found two candidate tables.\n\nShould I use `invoices` or `orders`?\n", true},
		{"Which year（2012 or 2013）？", true},
	} {
		if got := question(c.text) != ""; got != c.is {
			t.Errorf("question(%q) = %v, want %v", c.text, got, c.is)
		}
	}
	h := newHarness(t, Config{})
	h.model.script = textScript(contracts.ModelTurnReply{Text: "Which genre sells best? Rock, I would think."})
	_, rec, err := h.drive(t, "midquestion", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.StopReason != contracts.StopModelStopped || rec.Question != "" {
		t.Fatalf("stop %s question %q: a question answered in the same text is prose", rec.StopReason, rec.Question)
	}
}

// TestContinuedRunShowsTheQuestion (item 10): the run that continues a run
// stopped on a question is shown the question, said to be what its
// objective answers.
func TestContinuedRunShowsTheQuestion(t *testing.T) {
	q := "Do you mean invoice totals or units? Which year?"
	prev := contracts.Record{RunID: "asked", Status: contracts.StatusFailed, StopReason: contracts.StopQuestion, Question: q, Closing: q}
	text, _ := threadContext([]contracts.ThreadStep{{RunID: "asked", Objective: "Which genre sells best?"}}, 1, prev)
	if !strings.Contains(text, "stopped to ask the user this question, and this run's objective is the user's answer to it:\n"+q) {
		t.Fatalf("thread context %q", text)
	}
}

// TestAnsweringAQuestionContinuesTheConversation (item 10): a run that
// stopped on a question is continued by a run whose objective answers it,
// and that run's model is shown the question it answers.
func TestAnsweringAQuestionContinuesTheConversation(t *testing.T) {
	h := newHarness(t, Config{})
	putConnection(t, h, "shop", threadIdentity)
	q := "Do you mean invoice totals or units? Which year?"
	var mu sync.Mutex
	var shown string
	h.model.script = func(_ int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		mu.Lock()
		defer mu.Unlock()
		if req.RunID == "q1" {
			return contracts.ModelTurnReply{Text: q}
		}
		if shown == "" && len(req.Messages) > 2 {
			shown = req.Messages[2].Content
		}
		return contracts.ModelTurnReply{}
	}
	if r := h.s.StartRun(context.Background(), contracts.StartRun{RunID: "q1", Objective: "How big were the sales?", ConnectionID: "shop",
		Actor: contracts.Actor{ID: "alice"}}); r.Error != nil {
		t.Fatal(r.Error)
	}
	waitEnded(t, h, "q1")
	header := startFollowUp(t, h, "q2", "q1", func(c *contracts.StartRun) { c.Objective = "Invoice totals, for 2013." })
	if th := header.Thread; th == nil || th.Declined != "" || !strings.Contains(th.Context, q) {
		t.Fatalf("thread %+v", header.Thread)
	}
	mu.Lock()
	defer mu.Unlock()
	if !strings.Contains(shown, "stopped to ask the user this question, and this run's objective is the user's answer to it:\n"+q) {
		t.Fatalf("the continuing run was shown %q", shown)
	}
}
