package demoscript

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/modeltest"
)

// Rows the demo shop database returns for the script's two readings.
const (
	ordersRows = `month | orders | paid_revenue_eur
2024-01 | 92 | 15655.83
2024-02 | 95 | 16717.65
2024-03 | 98 | 18254.39
2024-04 | 101 | 23340.66
2024-05 | 103 | 17608.97
2024-06 | 106 | 18043.61
2024-07 | 109 | 19720.14
2024-08 | 112 | 19768.41
2024-09 | 114 | 19993.39
2024-10 | 117 | 21520.45
2024-11 | 120 | 29862.48
2024-12 | 123 | 22757.38
2025-01 | 126 | 22579.48
2025-02 | 128 | 25275.22
2025-03 | 46 | 8605.45
2025-04 | 134 | 27304.86
2025-05 | 137 | 26216.45
2025-06 | 139 | 22403.63`
	signupRows = `month | new_customers
2024-12 | 24
2025-01 | 25
2025-02 | 25
2025-03 | 9
2025-04 | 26
2025-05 | 27
2025-06 | 27`
)

// stored renders a tool result the way the orchestrator does.
func stored(id, rows string) string {
	ref, _ := json.Marshal(contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: id})
	n := strings.Count(rows, "\n")
	return fmt.Sprintf("Result stored as %s — %d rows, %d columns. Cite it exactly in that shape.\n", ref, n,
		strings.Count(strings.SplitN(rows, "\n", 2)[0], " | ")+1) +
		fence.Wrap("rows of run_read_query", rows)
}

const refused = "Refused (function_denied): substr is not allowed\nHow to fix: use another function"

// conversation plays the orchestrator's part: it keeps the transcript and
// answers each tool call.
type conversation struct {
	t      *testing.T
	req    modeltest.ChatRequest
	answer func(name, sql string) string
	calls  int
}

func newConversation(t *testing.T, answer func(name, sql string) string, tools ...string) *conversation {
	c := &conversation{t: t, answer: answer}
	c.req.Model = Model
	c.req.Messages = []modeltest.ChatMessage{
		{Role: "system", Content: "You investigate a database read-only."},
		{Role: "user", Content: "Why did orders dip?"},
	}
	for _, name := range tools {
		c.req.Tools = append(c.req.Tools, modeltest.ChatTool{Type: "function", Function: modeltest.ToolFunction{Name: name}})
	}
	return c
}

var investigationTools = []string{"inspect_schema", "run_read_query", "inspect_plan", "compose_report"}

// turn asks the script for its next reply and answers its tool calls.
func (c *conversation) turn() modeltest.Reply {
	c.t.Helper()
	r, err := New().Reply(c.req)
	if err != nil {
		c.t.Fatal(err)
	}
	if !strings.Contains(r.Text, Label) {
		c.t.Errorf("turn text does not say it is a replay: %q", r.Text)
	}
	again, _ := New().Reply(c.req)
	if !reflect.DeepEqual(r, again) {
		c.t.Errorf("the script is not deterministic")
	}
	if r.Usage.PromptTokens <= 0 || r.Usage.CompletionTokens <= 0 || r.Usage.CachedTokens > r.Usage.PromptTokens {
		c.t.Errorf("implausible usage %+v", r.Usage)
	}
	msg := modeltest.ChatMessage{Role: "assistant", Content: r.Text}
	for _, tc := range r.ToolCalls {
		c.calls++
		id := fmt.Sprintf("call_%d", c.calls)
		msg.ToolCalls = append(msg.ToolCalls, modeltest.ChatToolCall{ID: id, Type: "function",
			Function: modeltest.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
	}
	c.req.Messages = append(c.req.Messages, msg)
	for _, tc := range msg.ToolCalls {
		c.req.Messages = append(c.req.Messages, modeltest.ChatMessage{
			Role: "tool", ToolCallID: tc.ID, Content: c.answer(tc.Function.Name, argSQL(tc.Function.Arguments)),
		})
	}
	return r
}

func only(t *testing.T, r modeltest.Reply, name string) map[string]any {
	t.Helper()
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != name {
		t.Fatalf("want one %s call, got %+v", name, r.ToolCalls)
	}
	var args map[string]any
	if err := json.Unmarshal([]byte(r.ToolCalls[0].Arguments), &args); err != nil {
		t.Fatalf("arguments %q: %v", r.ToolCalls[0].Arguments, err)
	}
	return args
}

func reportClaims(t *testing.T, r modeltest.Reply) []contracts.Claim {
	t.Helper()
	only(t, r, ToolComposeReport)
	var a struct {
		Claims []contracts.Claim `json:"claims"`
	}
	if err := json.Unmarshal([]byte(r.ToolCalls[0].Arguments), &a); err != nil {
		t.Fatal(err)
	}
	return a.Claims
}

func cited(claims []contracts.Claim) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range claims {
		for _, e := range c.Evidence {
			if e.Source != contracts.EvidenceArtifact {
				continue
			}
			if !seen[e.CorrelationID] {
				seen[e.CorrelationID] = true
				out = append(out, e.CorrelationID)
			}
		}
	}
	return out
}

func shopAnswers(name, sql string) string {
	switch {
	case name == ToolInspectSchema:
		return "Result stored as {\"source\":\"artifact\",\"correlationId\":\"c_schema\"}\n" +
			fence.Wrap("schema", "column | type\nid | INTEGER\nordered_at | TEXT\nstatus | TEXT\ntotal_cents | INTEGER")
	case sql == MonthlyOrdersSQL:
		return stored("c_orders", ordersRows)
	case sql == MonthlySignupsSQL:
		return stored("c_signups", signupRows)
	case name == ToolComposeReport:
		return "Report composed with 4 claims."
	}
	return refused
}

func TestInvestigationFollowsTheRecordedPlan(t *testing.T) {
	c := newConversation(t, shopAnswers, investigationTools...)

	r := c.turn()
	if args := only(t, r, ToolInspectSchema); args["table"] != "orders" {
		t.Fatalf("turn 1 args %v", args)
	}
	if r.Usage.CachedTokens != 0 {
		t.Errorf("first turn reports cached tokens")
	}
	if args := only(t, c.turn(), ToolRunReadQuery); args["sql"] != MonthlyOrdersSQL || !strings.Contains(args["reason"].(string), Label) {
		t.Fatalf("turn 2 args %v", args)
	}
	r = c.turn()
	if args := only(t, r, ToolRunReadQuery); args["sql"] != MonthlySignupsSQL {
		t.Fatalf("turn 3 args %v", args)
	}
	if !strings.Contains(r.Text, "2025-03: 46") {
		t.Errorf("turn 3 text does not state the dip it read: %q", r.Text)
	}
	claims := reportClaims(t, c.turn())
	if got := cited(claims); !reflect.DeepEqual(got, []string{"c_orders", "c_signups"}) {
		t.Fatalf("report cites %v", got)
	}
	all := ""
	for _, cl := range claims {
		if !strings.Contains(cl.Text, Label) || len(cl.Evidence) == 0 {
			t.Errorf("claim %q", cl.Text)
		}
		all += cl.Text + "\n"
	}
	for _, want := range []string{
		"Orders fell to 46 in 2025-03, the fewest of the 18 months read, between 128 in 2025-02 and 134 in 2025-04",
		"Paid revenue in 2025-03 was EUR 8,605.45",
		"New customer signups fell to 9 in 2025-03, the fewest of any month",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("claims lack %q:\n%s", want, all)
		}
	}
	r = c.turn()
	if len(r.ToolCalls) != 0 || r.FinishReason != "" || !strings.Contains(r.Text, "report is filed") {
		t.Fatalf("closing turn %+v", r)
	}
	if c.req.AssistantTurns() != 5 {
		t.Errorf("%d turns", c.req.AssistantTurns())
	}
}

// TestAnalysisPresentsTheMonthlyOrders: offered present_answer (a
// data-analysis run), the replay shows its monthly orders reading as a line
// chart before the second reading, and its report cites that reading.
func TestAnalysisPresentsTheMonthlyOrders(t *testing.T) {
	c := newConversation(t, func(name, sql string) string {
		if name == ToolPresentAnswer {
			return "Answer recorded."
		}
		return shopAnswers(name, sql)
	}, append(slices.Clone(investigationTools[:3]), ToolPresentAnswer, ToolComposeReport)...)
	c.turn() // the schema
	c.turn() // the monthly orders
	args := only(t, c.turn(), ToolPresentAnswer)
	spec, _ := args["presentation"].(map[string]any)["spec"].(map[string]any)
	if args["artifact"] != "c_orders" || spec["type"] != "line" || spec["x"] != "month" || fmt.Sprint(spec["y"]) != "[orders]" {
		t.Fatalf("present_answer args %v", args)
	}
	if only(t, c.turn(), ToolRunReadQuery)["sql"] != MonthlySignupsSQL {
		t.Fatal("the second reading did not follow the answer")
	}
	if got := cited(reportClaims(t, c.turn())); !slices.Contains(got, "c_orders") {
		t.Fatalf("the report does not cite the presented reading: %v", got)
	}
}

func TestRefusedReadingIsRetriedOnceSimpler(t *testing.T) {
	c := newConversation(t, func(name, sql string) string {
		switch sql {
		case MonthlyOrdersSQL:
			return refused
		case MonthlyOrdersSimpleSQL:
			return stored("c_simple", "month | orders\n2025-02 | 128\n2025-03 | 46\n2025-04 | 134")
		}
		return shopAnswers(name, sql)
	}, investigationTools...)
	c.turn()
	c.turn()
	if args := only(t, c.turn(), ToolRunReadQuery); args["sql"] != MonthlyOrdersSimpleSQL {
		t.Fatalf("no retry: %v", args)
	}
	if args := only(t, c.turn(), ToolRunReadQuery); args["sql"] != MonthlySignupsSQL {
		t.Fatalf("no second reading: %v", args)
	}
	claims := reportClaims(t, c.turn())
	if got := cited(claims); !reflect.DeepEqual(got, []string{"c_simple", "c_signups"}) {
		t.Fatalf("report cites %v", got)
	}
	for _, cl := range claims {
		if strings.Contains(cl.Text, "revenue") {
			t.Errorf("claims revenue it never read: %q", cl.Text)
		}
	}
}

func TestFailedSecondReadingIsLeftOut(t *testing.T) {
	c := newConversation(t, func(name, sql string) string {
		if sql == MonthlySignupsSQL {
			return "The database failed the statement (timeout).\nRepairs left: 2."
		}
		return shopAnswers(name, sql)
	}, investigationTools...)
	for range 3 {
		c.turn()
	}
	if got := cited(reportClaims(t, c.turn())); !reflect.DeepEqual(got, []string{"c_orders"}) {
		t.Fatalf("report cites %v", got)
	}
}

func TestNoResultMeansNoReport(t *testing.T) {
	c := newConversation(t, func(name, sql string) string {
		if name == ToolRunReadQuery {
			return refused
		}
		return shopAnswers(name, sql)
	}, investigationTools...)
	for range 4 {
		c.turn()
	}
	r := c.turn()
	if len(r.ToolCalls) != 0 || !strings.Contains(r.Text, "no report") {
		t.Fatalf("turn 5 %+v", r)
	}
}

func TestRefusedReportClosesWithText(t *testing.T) {
	c := newConversation(t, func(name, sql string) string {
		if name == ToolComposeReport {
			return "Refused (unresolved_evidence): c_orders is not a result of this run"
		}
		return shopAnswers(name, sql)
	}, investigationTools...)
	for range 4 {
		c.turn()
	}
	if r := c.turn(); len(r.ToolCalls) != 0 || !strings.Contains(r.Text, "refused") {
		t.Fatalf("closing %+v", r)
	}
}

func TestWithoutToolsItOnlyDescribesThePlan(t *testing.T) {
	c := newConversation(t, shopAnswers)
	if r := c.turn(); len(r.ToolCalls) != 0 || !strings.Contains(r.Text, "plan") {
		t.Fatalf("planning reply %+v", r)
	}
}

func TestParseTable(t *testing.T) {
	tb := parseTable("no fence here\nmonth | orders\n---|---\n2025-03 | 46\nbroken line\n2025-04 | 134")
	s, ok := tb.series("month", "orders")
	if !ok || len(s) != 2 || s.min().label != "2025-03" || s.median() != 90 {
		t.Fatalf("%+v %v", tb, s)
	}
	if _, ok := tb.series("month", "nope"); ok {
		t.Fatal("missing column read")
	}
	if money(1234567.5) != "1,234,567.50" || money(12) != "12.00" || num(21.5) != "21.5" {
		t.Fatal("formatting")
	}
}
