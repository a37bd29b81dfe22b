package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/verdict"
)

// Issue 18, items 8 and 10: calls that arrive as text, a call cut at the
// output limit, an answer written as prose, and a clarifying question.

// evalTextCall writes a call the way Qwen does without a tool parser.
func evalTextCall(tool, args string) string {
	return fmt.Sprintf("<tool_call>\n{\"name\": %q, \"arguments\": %s}\n</tool_call>", tool, args)
}

// evalLastIDs are the ids the last tool result tells the model to cite.
func evalLastIDs(req modeltest.ChatRequest) []string {
	var out []string
	for _, c := range toldIn(lastResult(req)) {
		out = append(out, c.raw)
	}
	return out
}

// evalSkeleton is the compose_report call a prose nudge offers, or "".
func evalSkeleton(nudge string) string {
	for _, l := range strings.Split(nudge, "\n") {
		if a, ok := strings.CutPrefix(l, "compose_report "); ok && json.Valid([]byte(a)) {
			return a
		}
	}
	return ""
}

// evalNoClosing fails when the run recorded any turn as prose.
func evalNoClosing(t *testing.T, r evalRun) {
	t.Helper()
	for _, c := range payloads[contracts.ClosingStatement](r, contracts.KindClosingStatement) {
		t.Errorf("turn %d recorded as prose: %q", c.Turn, c.Text)
	}
}

const evalQuestion = "Do you mean the number of orders or their total value?\nAnd for which year?"

func init() {
	evalScenarios = append(evalScenarios,
		evalScenario{
			// Served without a tool parser, writes its calls as Qwen's
			// <tool_call> blocks in its text.
			name:      "qwen text calls",
			objective: "How many orders are there?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				if req.AssistantTurns() == 0 {
					return modeltest.Reply{Text: "I will count the orders.\n" +
						evalTextCall("run_read_query", `{"sql": "SELECT COUNT(*) AS n FROM orders", "reason": "count the orders"}`)}
				}
				ids := evalLastIDs(req)
				if len(ids) == 0 {
					return modeltest.Reply{Text: "My call was not answered."}
				}
				return modeltest.Reply{Text: evalTextCall("compose_report",
					`{"claims": [{"text": "The shop has orders.", "evidence": [`+ids[0]+`]}]}`)}
			},
			check: func(t *testing.T, r evalRun) {
				evalNoClosing(t, r)
				inv := payloads[contracts.ToolInvoked](r, contracts.KindToolInvoked)
				if len(inv) != 1 || !slices.Contains(inv[0].Normalised, "call read from the model's text (a <tool_call> block)") ||
					inv[0].Text != "I will count the orders." {
					t.Errorf("the read is not recorded as read from the text: %+v", inv)
				}
				rep := payloads[contracts.ReportComposed](r, contracts.KindReportComposed)
				if len(rep) != 1 || !slices.Contains(rep[0].Normalised, "call read from the model's text (a <tool_call> block)") {
					t.Errorf("the report is not recorded as read from the text: %+v", rep)
				}
			},
		},
		evalScenario{
			// Llama without --jinja: a bare {"name","parameters"} object as
			// content, the report's claims double-encoded.
			name:      "llama text calls",
			objective: "How many customers does the shop have?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				if req.AssistantTurns() == 0 {
					return modeltest.Reply{Text: `<|python_tag|>{"name": "run_read_query", "parameters": {"sql": "SELECT COUNT(*) AS n FROM customers", "reason": "count the customers"}}`}
				}
				ids := evalLastIDs(req)
				if len(ids) == 0 {
					return modeltest.Reply{Text: "My call was not answered."}
				}
				args, _ := json.Marshal(`{"claims": [{"text": "The shop has customers.", "evidence": [` + ids[0] + `]}]}`)
				return modeltest.Reply{Text: `{"name": "compose_report", "parameters": ` + string(args) + `}`}
			},
			check: func(t *testing.T, r evalRun) {
				evalNoClosing(t, r)
				rep := payloads[contracts.ReportComposed](r, contracts.KindReportComposed)
				if len(rep) != 1 || !slices.Contains(rep[0].Normalised, `call read from the model's text (a {"name","parameters"} object)`) ||
					!slices.Contains(rep[0].Normalised, "arguments sent as a JSON string") {
					t.Errorf("the report's reading is not recorded: %+v", rep)
				}
			},
		},
		evalScenario{
			// Its first call is cut at the output limit; told what went
			// wrong and how to send it, it sends a whole one.
			name:      "cut call",
			objective: "How many orders does each status have?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				switch req.AssistantTurns() {
				case 0:
					return modeltest.Reply{Text: `<tool_call>{"name": "run_read_query", "arguments": {"sql": "SELECT status, COUNT(*) AS orders FROM orders GROUP`,
						FinishReason: modeltest.FinishLength}
				case 1:
					n := evalNotice(req)
					if !strings.HasPrefix(n, "Refused (call_cut_short)") && !strings.HasPrefix(n, "Refused (malformed_call)") {
						return modeltest.Reply{Text: "I was not told what went wrong."}
					}
					return evalRead("SELECT status, COUNT(*) AS orders FROM orders GROUP BY status", "orders per status")
				}
				return evalReport(evalClaim{"Orders per status, as read.", evalLastIDs(req)})
			},
			check: func(t *testing.T, r evalRun) {
				cs := payloads[contracts.ClosingStatement](r, contracts.KindClosingStatement)
				if len(cs) != 1 || cs[0].Refused == nil {
					t.Fatalf("the cut turn is recorded %+v, want one refused call", cs)
				}
				if told := evalNotice(r.reqs[1]); strings.Contains(told, "prose") || !strings.Contains(told, "How to fix:") {
					t.Errorf("the cut call was answered %q", told)
				}
				if r.rec.Closing != "" {
					t.Errorf("the cut call is the record's closing: %q", r.rec.Closing)
				}
			},
		},
		evalScenario{
			// Answers in prose; shown a ready compose_report call with the
			// run's ids, sends it with its finding.
			name:      "prose answer",
			objective: "Which order status is the most common?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				const answer = "Paid is the most common order status."
				switch req.AssistantTurns() {
				case 0:
					return evalRead("SELECT status, COUNT(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC", "orders per status")
				case 1:
					return modeltest.Reply{Text: answer}
				}
				sk := evalSkeleton(evalNotice(req))
				if sk == "" {
					return modeltest.Reply{Text: answer}
				}
				text, _ := json.Marshal(answer)
				return evalCall("compose_report", strings.Replace(sk, `"<your finding>"`, string(text), 1))
			},
			check: func(t *testing.T, r evalRun) {
				sk := evalSkeleton(evalNotice(r.reqs[2]))
				read := evalLastIDs(r.reqs[1])
				if len(read) != 1 || !strings.Contains(sk, read[0]) {
					t.Errorf("the skeleton %q does not cite the run's read %v", sk, read)
				}
			},
		},
		evalScenario{
			// Asks what the user means instead of answering.
			name:      "clarifying question",
			objective: "How big were the orders?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				return modeltest.Reply{Text: evalQuestion}
			},
			want: &evalEnding{stop: contracts.StopQuestion, outcome: contracts.VerdictUnanswered, unmet: verdict.UnmetQuestion},
			check: func(t *testing.T, r evalRun) {
				if r.rec.Question != evalQuestion || len(r.reqs) != 1 {
					t.Errorf("question %q after %d turns, want the model's question after one", r.rec.Question, len(r.reqs))
				}
			},
		},
	)
}
