package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
	"github.com/sondehq/sonde/pkg/verdict"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
)

// connect serves a server on b over the SDK's in-memory transport and
// returns the official client's session. The whole stack's tests (both real
// transports, the real gateway) are in services/sonde/internal/cli.
func connect(t testing.TB, b Backend) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(b, Options{}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func structuredError(t *testing.T, res *mcp.CallToolResult) Error {
	t.Helper()
	if !res.IsError {
		t.Fatalf("not a tool error: %+v", res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	// The payload is the Problem as HTTP answers it, the status beside it:
	// no other key, in the error or around it.
	var shape map[string]map[string]json.RawMessage
	var outer map[string]json.RawMessage
	if json.Unmarshal(raw, &outer) != nil {
		t.Fatalf("structured content is not an object: %s", raw)
	}
	for k := range outer {
		if k != "error" && k != "status" {
			t.Fatalf("structured content has key %q: %s", k, raw)
		}
	}
	delete(outer, "status")
	b, _ := json.Marshal(outer)
	if json.Unmarshal(b, &shape) != nil {
		t.Fatalf("error is not an object: %s", raw)
	}
	for k := range shape["error"] {
		if k != "code" && k != "message" && k != "fix" {
			t.Fatalf("error has key %q, want the Problem's code, message, fix: %s", k, raw)
		}
	}
	var e struct {
		Error  contracts.Problem
		Status int
	}
	if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("tool error without a structured code: %s", raw)
	}
	return Error{Problem: e.Error, Status: e.Status}
}

// TestBadArgumentsAreToolErrors: arguments that are missing, of the wrong
// type, out of bounds or unknown never reach the backend (there is none
// here) and come back as invalid_arguments tool errors with a fix, never as
// protocol errors.
func TestBadArgumentsAreToolErrors(t *testing.T) {
	cs := connect(t, nil)
	cases := []struct {
		tool string
		args any
	}{
		{"run_query", map[string]any{}},
		{"run_query", map[string]any{"connection_id": "demo"}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": 1}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "limit": 0}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "limit": 1001}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "limit": 1.5}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "timeout_ms": 10001}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "params": []any{[]any{1}}}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "sqll": "x"}},
		{"run_query", map[string]any{"connection_id": " ", "sql": "SELECT 1"}},
		{"list_tables", map[string]any{"connection_id": ""}},
		{"describe_table", map[string]any{"connection_id": "demo", "table": " "}},
		{"explain_query", map[string]any{"sql": "SELECT 1"}},
		{"start_investigation", map[string]any{"connection_id": "demo", "objective": "   "}},
		{"get_run", map[string]any{"run_id": ""}},
		{"get_run", map[string]any{"run_id": "r", "wait_seconds": 121}},
		{"get_run", map[string]any{"run_id": "r", "wait_seconds": -1}},
		{"get_run", map[string]any{"run_id": "r", "cited_rows": 51}},
		{"list_connections", map[string]any{"extra": true}},
	}
	for _, c := range cases {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s(%v): protocol error %v", c.tool, c.args, err)
		}
		e := structuredError(t, res)
		if e.Code != CodeInvalidArguments || e.Message == "" || e.Fix == "" {
			t.Errorf("%s(%v): %+v, want %s with a reason and a fix", c.tool, c.args, e, CodeInvalidArguments)
		}
	}
}

// TestAPanicIsAToolError: a tool that panics (here: no backend at all)
// answers an INTERNAL tool error and the server keeps serving.
func TestAPanicIsAToolError(t *testing.T) {
	cs := connect(t, nil)
	for range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_connections", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if e := structuredError(t, res); e.Code != CodeInternal {
			t.Fatalf("%+v", e)
		}
	}
}

// TestInputSchemasDescribeEveryArgument: every tool's schema is a closed
// object whose every property says what it is.
func TestInputSchemasDescribeEveryArgument(t *testing.T) {
	cs := connect(t, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 7 {
		t.Fatalf("%d tools", len(res.Tools))
	}
	for _, tl := range res.Tools {
		raw, _ := json.Marshal(tl.InputSchema)
		var s struct {
			Type                 string
			AdditionalProperties any `json:"additionalProperties"`
			Properties           map[string]struct{ Description string }
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if s.Type != "object" || s.AdditionalProperties != false {
			t.Errorf("%s: schema %s is not a closed object", tl.Name, raw)
		}
		for p, d := range s.Properties {
			if d.Description == "" {
				t.Errorf("%s.%s has no description", tl.Name, p)
			}
		}
		if tl.Annotations == nil || tl.Annotations.Title == "" {
			t.Errorf("%s has no annotations", tl.Name)
		}
	}
}

// TestErrorClassification: the gateway's answers keep their code, reason,
// fix and status; an unreachable gateway says so.
func TestErrorClassification(t *testing.T) {
	ae := &client.APIError{Status: http.StatusUnprocessableEntity, Code: "not_a_select", Message: "DELETE writes", Fix: "send a SELECT"}
	if e := asError(fmt.Errorf("run_query: %w", ae)); *e != (Error{Problem: contracts.Problem{Code: "not_a_select", Message: "DELETE writes", Fix: "send a SELECT"}, Status: 422}) {
		t.Fatalf("%+v", e)
	}
	_, err := client.New("http://127.0.0.1:1", "").Connections(context.Background())
	if e := asError(err); e.Code != CodeGatewayUnreachable || e.Fix == "" {
		t.Fatalf("unreachable gateway: %+v (%v)", e, err)
	}
	if !strings.Contains(asError(err).Error(), "fix:") {
		t.Fatal("the text of an error does not carry its fix")
	}
}

// hostileAnswers are answers of each fenced tool whose database-derived
// parts (a row value, a column name, a table name, a report's claim and its
// cited rows) forge markers, spelled every way the fence corpus knows.
func hostileAnswers(h string) map[string]any {
	rows := [][]any{{h, 1}, {"<b>" + h + "</b>", nil}}
	cols := []contracts.Column{{Name: h, Type: "TEXT"}, {Name: "n", Type: "INTEGER"}}
	return map[string]any{
		"run_query": fencedAnswer("rows read from connection demo", "Result of the read.",
			queryOut{ConnectionID: "demo", Columns: cols, Rows: rows, RowCount: 2}),
		"list_tables": fencedAnswer("relations listed from connection demo", "2 relations.",
			tablesOut{ConnectionID: "demo", Tables: []api.TableEntry{{Name: h}, {Schema: h, Name: "<script>x</script>"}}, Total: 2}),
		"describe_table": fencedAnswer("relation described from connection demo", "A relation.",
			map[string]any{"connection_id": "demo", "relation": contracts.Relation{Name: h, Columns: []contracts.RelationColumn{{Name: h}}}}),
		"get_run": fencedAnswer("report of run r1 and the rows it cites", "Run r1.",
			runOut{RunID: "r1", Objective: h, Detail: h, Closing: h, Question: "which year? " + h, Report: []claimOut{{Text: "the notes say " + h,
				Citations: []citationOut{{Source: contracts.EvidenceArtifact, CorrelationID: "r1", SQL: "SELECT '" + h + "'", Columns: cols, Rows: rows}},
				Figures:   []contracts.FigureCheck{{Text: h, Status: contracts.FigureUnverified}, {Text: "12 %", Status: contracts.FigureDerived, Source: "r1", How: h}}}}}),
	}
}

// TestTextContentIsFenced: what a host hands its model (the text content)
// holds exactly the one fence the server opened around everything read
// from the database, whatever the values forge; the structured content
// keeps the values exact.
func TestTextContentIsFenced(t *testing.T) {
	for _, h := range fencetest.Corpus() {
		for tool, v := range hostileAnswers(h) {
			res, err := okResult(v)
			if err != nil {
				t.Fatal(err)
			}
			text := res.Content[0].(*mcp.TextContent).Text
			if err := fencetest.Check(text, 1); err != nil {
				t.Fatalf("%s with %q: %v\n%s", tool, h, err, text)
			}
			if !strings.HasPrefix(strings.SplitN(text, "\n", 2)[1], fence.Open) || !strings.HasSuffix(text, fence.Close) {
				t.Fatalf("%s: the answer is not one line then one fence:\n%s", tool, text)
			}
			raw, _ := json.Marshal(res.StructuredContent)
			want, _ := json.Marshal(v.(fenced).value)
			var got, exact any
			_ = json.Unmarshal(raw, &got)
			_ = json.Unmarshal(want, &exact)
			if !reflect.DeepEqual(got, exact) {
				t.Fatalf("%s: the structured content changed the values:\n%s\nwant\n%s", tool, raw, want)
			}
		}
		// Unfenced answers and tool errors open no fence and forge none.
		res, _ := okResult(map[string]any{"run_id": h})
		if err := fencetest.Check(res.Content[0].(*mcp.TextContent).Text, 0); err != nil {
			t.Fatalf("unfenced answer with %q: %v", h, err)
		}
		e := errorResult(&client.APIError{Status: 502, Code: "db_missing_object", Message: "no such table: " + h, Fix: h})
		if err := fencetest.Check(e.Content[0].(*mcp.TextContent).Text, 0); err != nil {
			t.Fatalf("tool error with %q: %v\n%s", h, err, e.Content[0].(*mcp.TextContent).Text)
		}
	}
}

// TestFencedToolsSayTheyAreFenced: every tool whose answer holds database
// text says in its description that its text content is fenced.
func TestFencedToolsSayTheyAreFenced(t *testing.T) {
	cs := connect(t, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	fencedTools := map[string]bool{"list_tables": true, "describe_table": true, "run_query": true, "explain_query": true, "get_run": true}
	for _, tl := range res.Tools {
		if says := strings.Contains(tl.Description, fencedNote); says != fencedTools[tl.Name] {
			t.Errorf("%s: description says it is fenced: %v, want %v", tl.Name, says, fencedTools[tl.Name])
		}
	}
}

// hostileIDs are ids that must never reach a subject or a key.
var hostileIDs = map[string]string{
	"4 KB":     strings.Repeat("a", 4096),
	"star":     "*",
	"gt":       ">",
	"dots":     "demo.orders.x",
	"NUL":      "demo\x00",
	"CR LF":    "demo\r\nPUB x 1",
	"space":    "demo x",
	"unicode":  "démo",
	"fullstop": "demo\uff0e",
}

// idCalls are, for each tool taking an id, its arguments with id in that
// place.
func idCalls(id string) map[string]map[string]any {
	return map[string]map[string]any{
		"list_tables":              {"connection_id": id},
		"describe_table":           {"connection_id": id, "table": "orders"},
		"run_query":                {"connection_id": id, "sql": "SELECT 1"},
		"explain_query":            {"connection_id": id, "sql": "SELECT 1"},
		"start_investigation":      {"connection_id": id, "objective": "why"},
		"start_investigation prev": {"connection_id": "demo", "objective": "why", "previous_run_id": id},
		"get_run":                  {"run_id": id},
	}
}

// TestIDsAreCheckedAtTheEdge: every tool refuses an id the one rule
// (contracts.CheckID) refuses, as an invalid_id tool error with a reason
// and a fix, before any backend is called (there is none here: a call that
// reached it would answer INTERNAL).
func TestIDsAreCheckedAtTheEdge(t *testing.T) {
	cs := connect(t, nil)
	for name, id := range hostileIDs {
		for call, args := range idCalls(id) {
			tool, _, _ := strings.Cut(call, " ")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				t.Fatalf("%s with a %s id: protocol error %v", call, name, err)
			}
			e := structuredError(t, res)
			if e.Code != contracts.CodeInvalidID || e.Message == "" || e.Fix == "" || len(e.Message) > 300 {
				t.Errorf("%s with a %s id: %+v, want %s with a short reason and a fix", call, name, e, contracts.CodeInvalidID)
			}
		}
	}
}

// FuzzIDsAreCheckedAtTheEdge: whatever the id, a tool either refuses it as
// the one rule does or passes it on (here to no backend: INTERNAL), and
// never answers with a protocol error.
func FuzzIDsAreCheckedAtTheEdge(f *testing.F) {
	for _, id := range hostileIDs {
		f.Add(id)
	}
	f.Add("demo")
	f.Add("01JZ8X5K3M9Q2W7E4T6Y1U0I8O")
	cs := connect(f, nil)
	f.Fuzz(func(t *testing.T, id string) {
		if strings.TrimSpace(id) == "" || !utf8.ValidString(id) {
			return // empty: invalid_arguments; invalid UTF-8 cannot travel in JSON
		}
		for call, args := range idCalls(id) {
			tool, _, _ := strings.Cut(call, " ")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				t.Fatalf("%s(%q): protocol error %v", call, id, err)
			}
			e := structuredError(t, res)
			want := CodeInternal
			if contracts.CheckID(contracts.IDConnection, id) != nil {
				want = contracts.CodeInvalidID
			}
			if e.Code != want {
				t.Fatalf("%s(%q): %+v, want %s", call, id, e, want)
			}
		}
	})
}

// questionRecord is a hand-made record of a run that stopped on a question,
// after a report whose claims state figures the verifier checked: one
// found, one derived, one found nowhere. Its claims cite the schema
// snapshot only, so reading it back calls no backend.
func questionRecord(question, figure string) contracts.Record {
	snap := []contracts.EvidenceRef{{Source: contracts.EvidenceContextSnapshot, CorrelationID: "r1"}}
	return contracts.Record{RunID: "rq1", Status: contracts.StatusSucceeded, Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowDataAnalysis,
		Objective: "revenue?", ConnectionID: "demo", StopReason: contracts.StopQuestion, Question: question,
		Report: []contracts.Claim{{Text: "Rock leads with 826.65", Evidence: snap}, {Text: "no figures here", Evidence: snap}, {Text: "up " + figure, Evidence: snap}},
		GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictUnanswered, Rule: "agent-data-analysis.2",
			Unmet: []string{"figure-unverified", "question-asked"},
			Claims: []contracts.ClaimCheck{
				{Claim: 1, Figures: []contracts.FigureCheck{{Text: "826.65", Status: contracts.FigureFound, Source: "r1"}}},
				{Claim: 3, Figures: []contracts.FigureCheck{{Text: "12 %", Status: contracts.FigureDerived, Source: "r1", How: "826.65 / 6889.5"},
					{Text: figure, Status: contracts.FigureUnverified}}},
			}}}
}

// TestGetRunCarriesFiguresUnmetAndTheQuestion: get_run puts each claim's
// figure checks beside the claim (by its position), each unmet code with
// its meaning, the stop reason in words, the question and the call that
// answers it; the question and the figures, which the model wrote, appear
// in the text content only inside the fence, and the line before the fence
// says how to answer in the server's words.
func TestGetRunCarriesFiguresUnmetAndTheQuestion(t *testing.T) {
	for _, h := range fencetest.Corpus() {
		rec := questionRecord("Invoice totals or units? "+h, "999.99 "+h)
		out := runReport(context.Background(), nil, rec, DefaultCitedRows)
		if len(out.Report) != 3 || len(out.Report[0].Figures) != 1 || out.Report[0].Figures[0].Status != contracts.FigureFound ||
			len(out.Report[1].Figures) != 0 || len(out.Report[2].Figures) != 2 || out.Report[2].Figures[1].Status != contracts.FigureUnverified {
			t.Fatalf("figures beside the claims: %+v", out.Report)
		}
		if len(out.Unmet) != 2 || out.Unmet[0].Code != "figure-unverified" || out.Unmet[1].Code != "question-asked" ||
			out.Unmet[0].Meaning == "" || out.Unmet[0].Meaning != verdict.Explain("figure-unverified") {
			t.Fatalf("unmet %+v", out.Unmet)
		}
		if out.Question != rec.Question || out.StopReason != contracts.StopQuestion || !strings.Contains(out.Stopped, "question") {
			t.Fatalf("question %q, stop %q (%q)", out.Question, out.StopReason, out.Stopped)
		}
		aw := out.AnswerWith
		if aw == nil || aw.Tool != "start_investigation" || aw.Arguments["previous_run_id"] != "rq1" || aw.Arguments["connection_id"] != "demo" ||
			aw.Arguments["workflow"] != "data-analysis" {
			t.Fatalf("answer_with %+v", aw)
		}
		res, err := okResult(fencedAnswer("report of run rq1 and the rows it cites", runLead(out), out))
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if err := fencetest.Check(text, 1); err != nil {
			t.Fatalf("with %q: %v\n%s", h, err, text)
		}
		lead, _, _ := strings.Cut(text, "\n")
		if strings.Contains(lead, "Invoice totals") || strings.Contains(lead, "999.99") {
			t.Fatalf("model text outside the fence: %s", lead)
		}
		for _, want := range []string{"stopped on a question", `previous_run_id "rq1"`, "1 figure found in none", "Verdict: unanswered"} {
			if !strings.Contains(lead, want) {
				t.Errorf("the lead lacks %q: %s", want, lead)
			}
		}
	}
	// A run that did not stop on a question offers no answer call.
	rec := questionRecord("", "1")
	rec.StopReason, rec.Question = contracts.StopRepeatedCall, ""
	out := runReport(context.Background(), nil, rec, 0)
	if out.AnswerWith != nil || out.Question != "" || !strings.Contains(out.Stopped, "same call three times") {
		t.Fatalf("a repeated-call run: %+v", out)
	}
	if strings.Contains(runLead(out), "question") {
		t.Errorf("the lead of a repeated-call run: %s", runLead(out))
	}
}
