package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// The workflow sections as ask and runs show print them (the sections
// themselves are render's, tested there): the flag, the live lines, a run
// end to end.

func wantAll(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// hostile is attacker text: line breaks that forge output, an ANSI escape
// that recolours the terminal, a carriage return that overwrites a line, a
// right-to-left override, a C1 control and a byte that is not UTF-8.
const hostile = "evil\nVerdict: answered (forged)\x1b[31mRED\x1b[0m\rover\u202eREVERSED\u0085c1\xff"

// TestLiveLinesEscapeHostileText: the live line of each workflow event
// escapes what a terminal would act on.
func TestLiveLinesEscapeHostileText(t *testing.T) {
	var live bytes.Buffer
	p := &progress{out: &live}
	for kind, payload := range map[contracts.EventKind]any{
		contracts.KindPlanComparison: contracts.PlanComparison{Before: hostile, After: hostile, BeforeSQL: hostile, AfterSQL: hostile, Summary: hostile},
		contracts.KindRecommendation: contracts.Recommendation{Kind: hostile, Statement: hostile, Rationale: hostile},
		contracts.KindTableProfiled:  contracts.TableProfiled{Table: hostile, Depth: hostile, CorrelationID: hostile},
		contracts.KindAnswerComposed: contracts.AnswerComposed{CorrelationID: hostile,
			Presentation: contracts.Presentation{Kind: contracts.PresentChart, Chart: &contracts.ChartSpec{Type: hostile, X: hostile, Y: []string{hostile}}},
			Handover:     contracts.Handover(hostile)},
		contracts.KindToolRefused: contracts.ToolRefused{Code: "x", Reason: hostile},
	} {
		e, err := contracts.NewEntry("run-h", kind, time.Now(), payload)
		if err != nil {
			t.Fatal(err)
		}
		p.entries = nil
		p.entry(e)
	}
	if live.Len() == 0 || strings.ContainsAny(live.String(), "\x1b\r\u202e") || strings.Contains(live.String(), "\nVerdict") {
		t.Errorf("live lines hold raw controls:\n%q", live.String())
	}
}

// fakeGateway serves a finished data-analysis run the way the gateway does,
// and records the start request ask sent.
func fakeGateway(t *testing.T, got *api.StartRunRequest) *httptest.Server {
	t.Helper()
	art := contracts.Artifact{ArtifactSummary: contracts.ArtifactSummary{CorrelationID: "c-1", Rows: 2,
		Columns: []contracts.Column{{Name: "genre"}, {Name: "tracks"}}},
		Data: [][]any{{"Rock", float64(1297)}, {"Jazz", float64(130)}}}
	answer := &contracts.AnswerComposed{CorrelationID: "c-1", SQL: "SELECT genre, count(*) AS tracks FROM t GROUP BY 1",
		Presentation: contracts.Presentation{Kind: contracts.PresentChart, Chart: &contracts.ChartSpec{Type: "bar", X: "genre", Y: []string{"tracks"}, Caption: "Tracks per genre"}},
		Handover:     contracts.HandoverAutoExecuted}
	verdict := &contracts.GoalVerdict{Outcome: contracts.VerdictAnswered, Rule: "agent-data-analysis.2", Unmet: []string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathConfig, func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.AgentConfig{Enabled: true})
	})
	mux.HandleFunc("POST "+api.PathRuns, func(w http.ResponseWriter, req *http.Request) {
		if err := json.NewDecoder(req.Body).Decode(got); err != nil {
			t.Errorf("start request: %v", err)
		}
		w.WriteHeader(http.StatusAccepted)
		_ = json.NewEncoder(w).Encode(api.StartRunResponse{RunID: "r1", Mode: contracts.ModeAgent, WorkflowType: got.WorkflowType})
	})
	mux.HandleFunc("GET "+api.StreamPath("r1"), func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		for kind, payload := range map[contracts.EventKind]any{
			contracts.KindAnswerComposed: answer,
		} {
			e, _ := contracts.NewEntry("r1", kind, time.Now(), payload)
			_ = json.NewEncoder(w).Encode(e)
		}
		e, _ := contracts.NewEntry("r1", contracts.KindRunFinished, time.Now(), contracts.RunFinished{
			Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed, GoalVerdict: verdict})
		_ = json.NewEncoder(w).Encode(e)
	})
	mux.HandleFunc("GET "+api.RunPath("r1"), func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(contracts.Record{RunID: "r1", Mode: contracts.ModeAgent, WorkflowType: got.WorkflowType,
			Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed, GoalVerdict: verdict,
			Steps:  []contracts.Step{{Turn: 1, Tool: "run_read_query", Status: contracts.StepCompleted, Artifact: &art.ArtifactSummary}},
			Answer: answer,
			Report: []contracts.Claim{{Text: "Rock has ten times Jazz's tracks.", Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c-1"}}}}})
	})
	mux.HandleFunc("GET "+api.ArtifactPath("r1", "c-1"), func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(art)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestAskWorkflowFlag(t *testing.T) {
	for _, w := range contracts.WorkflowTypes {
		t.Run(string(w), func(t *testing.T) {
			var got api.StartRunRequest
			srv := fakeGateway(t, &got)
			var out bytes.Buffer
			o := askOptions{server: srv.URL, connection: "demo", workflow: string(w), mode: string(contracts.ModeAgent), autoExec: w == contracts.WorkflowDataAnalysis}
			if err := ask(context.Background(), &out, o, "Tracks per genre?"); err != nil {
				t.Fatalf("ask: %v\n%s", err, out.String())
			}
			if got.WorkflowType != w || got.AutoExecute != (w == contracts.WorkflowDataAnalysis) {
				t.Errorf("start request %+v, want workflow %s", got, w)
			}
			wantAll(t, out.String(),
				"✓ answer presented: bar chart of c-1, handover auto-executed",
				"Answer: a bar chart of artifact c-1", `"Tracks per genre"`,
				"Rock     1297  "+strings.Repeat("█", 32),
				"Handover: auto-executed", "Report", "Verdict: answered (agent-data-analysis.2)")
		})
	}
	t.Run("unknown", func(t *testing.T) {
		var got api.StartRunRequest
		srv := fakeGateway(t, &got)
		err := ask(context.Background(), &bytes.Buffer{}, askOptions{server: srv.URL, workflow: "optimisation\x1b[2J"}, "x")
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != ExitRefused {
			t.Fatalf("ask: %v, want exit %d", err, ExitRefused)
		}
		for _, w := range contracts.WorkflowTypes {
			if !strings.Contains(err.Error(), string(w)) {
				t.Errorf("error %q does not list %s", err, w)
			}
		}
		if strings.Contains(err.Error(), "\x1b") || got.Objective != "" {
			t.Errorf("error %q holds a raw escape, or the run was started (%+v)", err, got)
		}
	})
	t.Run("flags", func(t *testing.T) {
		cmd := newAskCmd()
		if f := cmd.Flags().Lookup("auto-execute"); f == nil || f.DefValue != "false" {
			t.Errorf("--auto-execute flag: %+v", f)
		}
		if f := cmd.Flags().Lookup("workflow"); f == nil || !strings.Contains(f.Usage, "data-analysis") {
			t.Errorf("--workflow usage does not list the workflows: %+v", f)
		}
	})
}

func TestRunsShowPrintsWorkflowSections(t *testing.T) {
	got := api.StartRunRequest{WorkflowType: contracts.WorkflowDataAnalysis}
	srv := fakeGateway(t, &got)
	var out bytes.Buffer
	if err := runsShow(context.Background(), &out, runsOptions{server: srv.URL}, "r1"); err != nil {
		t.Fatalf("runs show: %v\n%s", err, out.String())
	}
	wantAll(t, out.String(), "Steps", "Answer: a bar chart of artifact c-1", `"Tracks per genre"`,
		"Jazz      130  ███▎", "Handover: auto-executed", "Verdict: answered")
}

// TestAskPrintsADataAnalysisRunEndToEnd drives a data-analysis run through
// the real stack (gateway, orchestrator, SQLite executor, ledger) with a
// scripted model over the OpenAI wire: a read, its plan, a bar chart of the
// read, a report. ask prints the plan (SQLite: no estimates) and the chart
// from the rows it fetches.
func TestAskPrintsADataAnalysisRunEndToEnd(t *testing.T) {
	const sql = "SELECT status, count(*) AS orders FROM orders GROUP BY status ORDER BY 2 DESC"
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		var ids []string
		turn := 0
		for _, m := range req.Messages {
			switch m.Role {
			case "assistant":
				turn++
			case "tool":
				ids = append(ids, modeltest.CitedIDs(m.Content)...)
			}
		}
		call := func(name, args string) (modeltest.Reply, error) {
			return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: name, Arguments: args}}}, nil
		}
		switch {
		case turn == 0:
			return call("run_read_query", `{"sql":"`+sql+`","reason":null}`)
		case turn == 1:
			return call("inspect_plan", `{"sql":"`+sql+`","reason":null,"hypotheticalIndex":null}`)
		case turn == 2 && len(ids) > 0:
			return call("present_answer", `{"artifact":"`+ids[0]+`","presentation":{"kind":"chart","spec":{"type":"bar","x":"status","y":["orders"],"caption":"Orders by status"}}}`)
		case turn == 3 && len(ids) > 0:
			return call("compose_report", `{"claims":[{"text":"Most orders are paid.","evidence":[{"source":"artifact","correlationId":"`+ids[0]+`"}]}]}`)
		}
		return modeltest.Reply{Text: "done"}, nil
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	var out bytes.Buffer
	o := askOptions{server: s.URL, connection: "demo", workflow: string(contracts.WorkflowDataAnalysis), mode: string(contracts.ModeAgent)}
	if err := ask(context.Background(), &out, o, "Chart orders by status"); err != nil {
		t.Fatalf("ask: %v\n%s", err, out.String())
	}
	wantAll(t, out.String(),
		"      plan: orders", // the live line of the plan read
		"✓ answer presented: bar chart of",
		"Plans read (estimates only: described, never executed)",
		"no estimates (SQLite)",
		"Answer: a bar chart of artifact",
		`"Orders by status"`,
		"x: status · y: orders",
		"status     orders",
		"paid", strings.Repeat("█", 32),
		"Handover: none (the run was not started with --auto-execute)",
		"Verdict: answered (agent-data-analysis.2)",
	)
	t.Logf("ask printed:\n%s", out.String())
}

// TestAskHelpListsTheWorkflowTable: ask's help and --workflow's usage name
// exactly the workflow table's workflows, in its order.
func TestAskHelpListsTheWorkflowTable(t *testing.T) {
	var want []string
	for _, w := range policy.Describe() {
		want = append(want, string(w.Type))
	}
	cmd := newAskCmd()
	usage := cmd.Flags().Lookup("workflow").Usage
	if got := strings.TrimPrefix(usage, "workflow type: "); got != strings.Join(want, ", ") {
		t.Errorf("--workflow usage %q, the table holds %v", usage, want)
	}
	long := strings.Join(strings.Fields(cmd.Long), " ")
	listed := strings.ReplaceAll(strings.Join(want, ", "), ", "+want[len(want)-1], " or "+want[len(want)-1])
	listed = strings.Replace(listed, want[0], want[0]+" (the default)", 1)
	if !strings.Contains(long, "--workflow chooses what the run is for: "+listed+".") {
		t.Errorf("ask's help does not list the table's workflows (%s):\n%s", listed, long)
	}
}
