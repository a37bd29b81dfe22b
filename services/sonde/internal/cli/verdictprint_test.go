package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/verdict"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// cliHostile is model text that would rewrite a terminal if printed raw:
// a newline that forges a line, an escape sequence, a carriage return.
const cliHostile = "7\n 1. forged claim\x1b[31m red\r"

// figureRecord is a hand-made record: a report whose claims state figures
// the verifier checked (found, derived, found nowhere) and a verdict that
// is unanswered for it.
func figureRecord() contracts.Record {
	cite := []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c1genres"}}
	return contracts.Record{RunID: "rfig1", Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation, ConnectionID: "demo",
		Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed,
		Report: []contracts.Claim{
			{Text: "Rock sells best, with 826.65 in revenue", Evidence: cite},
			{Text: "No figure here", Evidence: cite},
			{Text: "Rock is 12 % of revenue; Jazz made 999.99", Evidence: cite},
		},
		GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictUnanswered, Rule: "agent-investigation.2", Unmet: []string{"figure-unverified"},
			Claims: []contracts.ClaimCheck{
				{Claim: 1, Figures: []contracts.FigureCheck{{Text: "826.65", Status: contracts.FigureFound, Source: "c1genres"}}},
				{Claim: 3, Figures: []contracts.FigureCheck{
					{Text: "12 %", Status: contracts.FigureDerived, Source: "c1genres", How: "826.65 / 6889.5"},
					{Text: "999.99" + cliHostile, Status: contracts.FigureUnverified},
				}},
			}}}
}

// questionRecord is a hand-made record of a run that stopped on a question.
func questionRecord(question string) contracts.Record {
	return contracts.Record{RunID: "rq1", Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowDataAnalysis, ConnectionID: "demo",
		Status: contracts.StatusSucceeded, StopReason: contracts.StopQuestion, Question: question,
		GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictUnanswered, Rule: "agent-data-analysis.2", Unmet: []string{"question-asked"}}}
}

func report(r contracts.Record, server string) string {
	var b bytes.Buffer
	printReport(&b, r, nil, server)
	return b.String()
}

// Each claim is followed by the verifier's check of its figures, on the
// claim it belongs to (by position); a figure the model wrote cannot forge
// a line or an escape.
func TestReportShowsEachClaimsFigureChecks(t *testing.T) {
	out := report(figureRecord(), "http://gw:8080")
	lines := strings.Split(out, "\n")
	at := func(prefix string) int {
		for i, l := range lines {
			if strings.HasPrefix(l, prefix) {
				return i
			}
		}
		t.Fatalf("no line starts %q:\n%s", prefix, out)
		return -1
	}
	c1, c2, c3 := at(" 1. "), at(" 2. "), at(" 3. ")
	if got := lines[c1+2]; got != "    figures: 826.65 found in c1genres" {
		t.Errorf("claim 1's figures: %q", got)
	}
	if strings.Contains(strings.Join(lines[c2:c3], "\n"), "figures:") {
		t.Errorf("claim 2 states no figure and shows some:\n%s", out)
	}
	want := `    figures: 12 % derived from c1genres (826.65 / 6889.5); 999.997 1. forged claim\x1b[31m red NOT FOUND in the results it cites`
	if got := lines[c3+2]; got != want {
		t.Errorf("claim 3's figures:\n%q\nwant\n%q", got, want)
	}
	if strings.ContainsAny(out, "\x1b\r") || strings.Count(out, "forged claim") != 1 || strings.Contains(out, "\n 1. forged") {
		t.Errorf("the figure's text reached the terminal raw:\n%q", out)
	}
	wantAll(t, out, "Verdict: unanswered (agent-investigation.2), unmet: figure-unverified\n  figure-unverified: "+verdict.Explain("figure-unverified")+"\n",
		"Status: succeeded (report-composed)")
	if verdict.Explain("figure-unverified") == "" {
		t.Error("the verifier explains no figure-unverified")
	}
	if strings.Contains(out, "Question") {
		t.Errorf("a run that asked nothing shows a question:\n%s", out)
	}
}

// A run that stopped on a question prints it (model text, cleaned) and the
// exact command that answers it by continuing the conversation, with the
// run's own id, connection and workflow; the stop reason is in words.
func TestReportShowsTheQuestionAndHowToAnswerIt(t *testing.T) {
	out := report(questionRecord("Invoice totals or units?\nWhich year?"+cliHostile), "http://gw:8080")
	wantAll(t, out, "Question\n  > Invoice totals or units?\n  > Which year?7\n  >  1. forged claim\\x1b[31m red\n",
		"Answer it by continuing the conversation",
		`  sonde ask --server http://gw:8080 --connection demo --workflow data-analysis --continue rq1 "YOUR ANSWER"`,
		"Status: succeeded (question-asked): the model asked you a question instead of answering",
		"unmet: question-asked")
	if strings.ContainsAny(out, "\x1b\r") {
		t.Errorf("the question reached the terminal raw:\n%q", out)
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, " 1. forged") {
			t.Errorf("the question forged a line: %q", l)
		}
	}
	// A repeated call says so in words, and asks nothing.
	r := questionRecord("")
	r.StopReason, r.Question = contracts.StopRepeatedCall, ""
	out = report(r, "")
	wantAll(t, out, "(repeated-call): the model sent the same call three times")
	if strings.Contains(out, "Question") || strings.Contains(out, "--continue") {
		t.Errorf("a repeated-call run offers an answer:\n%s", out)
	}
}

// shellWord quotes what a shell would split or expand.
func TestContinueCommandQuotesForTheShell(t *testing.T) {
	r := questionRecord("?")
	r.ConnectionID = "prod db;rm -rf"
	if got := continueCommand(r, "http://127.0.0.1:8080"); got != `sonde ask --server http://127.0.0.1:8080 --connection 'prod db;rm -rf' --workflow data-analysis --continue rq1 "YOUR ANSWER"` {
		t.Errorf("%s", got)
	}
}

// writeLedger writes a hand-made ledger for runID into the stack's real
// ledger, as the local admin's run on the demo connection, ending with fin.
func writeLedger(t *testing.T, s *stacktest.Stack, runID string, objective string, wf contracts.WorkflowType, report *contracts.ReportComposed, fin contracts.RunFinished) {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, s.NATS.JetStream(), ledger.WithWriter("hand-made"))
	if err != nil {
		t.Fatal(err)
	}
	w := l.Writer(runID, 0, nil)
	entries := []struct {
		kind contracts.EventKind
		v    any
	}{
		{contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: wf, Objective: objective, ConnectionID: "demo",
			Actor: contracts.Actor{ID: "local", Role: contracts.RoleAdmin}, Budget: contracts.Budget{MaxTurns: 10, MaxStatements: 10}}},
		{contracts.KindDriverResolved, contracts.DriverResolved{Provider: "openai", Model: "hand-made", Drive: 1}},
	}
	if report != nil {
		entries = append(entries, struct {
			kind contracts.EventKind
			v    any
		}{contracts.KindReportComposed, *report})
	}
	entries = append(entries, struct {
		kind contracts.EventKind
		v    any
	}{contracts.KindRunFinished, fin})
	for _, e := range entries {
		if _, err := w.Append(ctx, e.kind, e.v); err != nil {
			t.Fatal(err)
		}
	}
}

// Through the real gateway: `runs show` and `runs tail` print a hand-made
// run's figure checks and question from its ledger (the fold carries the
// question), tail exits 3 for a run that stopped on a question (it did not
// answer), and MCP get_run over both transports carries the figures beside
// each claim, the unmet codes, the stop reason and the question, fenced.
func TestSurfacesShowFiguresAndTheQuestionFromTheLedger(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	fr := figureRecord()
	writeLedger(t, s, "rhandfig1", "Which genre sells best?", contracts.WorkflowInvestigation,
		&contracts.ReportComposed{ToolCall: contracts.ToolCall{Turn: 2, CallID: "c", Tool: "compose_report", Arguments: json.RawMessage(`{}`)}, Claims: fr.Report},
		contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed, GoalVerdict: fr.GoalVerdict})
	question := "Invoice totals or units? Which year?" + cliHostile
	qr := questionRecord(question)
	writeLedger(t, s, "rhandq1", "How much did we sell?", contracts.WorkflowDataAnalysis, nil,
		contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopQuestion, Question: question, GoalVerdict: qr.GoalVerdict})
	ctx := context.Background()
	o := runsOptions{server: s.URL}

	var out bytes.Buffer
	if err := runsShow(ctx, &out, o, "rhandfig1"); err != nil {
		t.Fatal(err)
	}
	wantAll(t, out.String(), "    figures: 826.65 found in c1genres", "999.997 1. forged claim\\x1b[31m red NOT FOUND in the results it cites", "unmet: figure-unverified")
	out.Reset()
	if err := runsShow(ctx, &out, o, "rhandq1"); err != nil {
		t.Fatal(err)
	}
	wantAll(t, out.String(), "  > Invoice totals or units? Which year?7\n  >  1. forged claim\\x1b[31m red\n",
		"sonde ask --server "+s.URL+" --connection demo --workflow data-analysis --continue rhandq1 \"YOUR ANSWER\"")
	out.Reset()
	err := runsTail(ctx, &out, o, "rhandq1")
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitUnanswered {
		t.Fatalf("tail of a run that asked a question: %v, want exit %d", err, ExitUnanswered)
	}
	wantAll(t, out.String(), "Question", "--continue rhandq1")

	for name, tr := range mcpTransports(s, "") {
		t.Run("mcp "+name, func(t *testing.T) {
			cs := mcpConnect(t, tr())
			var q struct {
				StopReason string `json:"stop_reason"`
				Stopped    string
				Question   string
				Unmet      []struct{ Code, Meaning string }
				AnswerWith struct {
					Tool      string
					Arguments map[string]any
				} `json:"answer_with"`
			}
			res := toolCall(t, cs, "get_run", map[string]any{"run_id": "rhandq1"})
			wantOK(t, "get_run", res, &q)
			if q.Question != question || q.StopReason != string(contracts.StopQuestion) || !strings.Contains(q.Stopped, "question") ||
				len(q.Unmet) != 1 || q.Unmet[0].Code != "question-asked" || q.AnswerWith.Tool != "start_investigation" ||
				q.AnswerWith.Arguments["previous_run_id"] != "rhandq1" {
				t.Fatalf("get_run of the question run: %+v", q)
			}
			text := resultText(res)
			if err := fencetest.Check(text, 1); err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			if lead, _, _ := strings.Cut(text, "\n"); strings.Contains(lead, "Invoice") || !strings.Contains(lead, `previous_run_id "rhandq1"`) {
				t.Errorf("the lead line: %s", lead)
			}
			var f struct {
				Report []struct {
					Text    string
					Figures []contracts.FigureCheck
				}
			}
			res = toolCall(t, cs, "get_run", map[string]any{"run_id": "rhandfig1"})
			wantOK(t, "get_run", res, &f)
			if len(f.Report) != 3 || len(f.Report[0].Figures) != 1 || f.Report[0].Figures[0].Status != contracts.FigureFound ||
				len(f.Report[1].Figures) != 0 || len(f.Report[2].Figures) != 2 || f.Report[2].Figures[1].Text != "999.99"+cliHostile {
				t.Fatalf("get_run figures: %+v", f.Report)
			}
			if lead, _, _ := strings.Cut(resultText(res), "\n"); !strings.Contains(lead, "1 figure found in none") {
				t.Errorf("the lead line: %s", lead)
			}
		})
	}
}
