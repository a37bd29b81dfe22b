package orchestrator

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

var investigationTools = policy.Tools(contracts.ModeAgent, contracts.WorkflowInvestigation)

// TestTextCallsAreReadInEveryForm (issue 18, item 8): the shapes models
// served without a tool parser write their calls in are each read as the
// call, with the arguments as written, a note saying how, and the prose
// around them kept; a call naming no tool of the run, or prose that only
// mentions JSON, is prose.
func TestTextCallsAreReadInEveryForm(t *testing.T) {
	read := `{"sql":"SELECT 1","reason":"one"}`
	cases := []struct {
		name, text string
		tools      []string // the calls' tools, in order
		args       []string
		note       string // a note the first call carries
		rest       string
	}{
		{"qwen block", "<tool_call>\n" + `{"name": "run_read_query", "arguments": ` + read + "}\n</tool_call>",
			[]string{"run_read_query"}, []string{read}, "call read from the model's text (a <tool_call> block)", ""},
		{"qwen two blocks with prose", "Let me look.\n<tool_call>{\"name\":\"inspect_schema\",\"arguments\":{}}</tool_call>\n<tool_call>{\"name\":\"run_read_query\",\"arguments\":" + read + "}</tool_call>",
			[]string{"inspect_schema", "run_read_query"}, []string{"{}", read}, "call read from the model's text (a <tool_call> block)", "Let me look."},
		{"qwen block holding a fence", "<tool_call>\n```json\n{\"name\":\"run_read_query\",\"arguments\":" + read + "}\n```\n</tool_call>",
			[]string{"run_read_query"}, []string{read}, "call read from the model's text (a <tool_call> block)", ""},
		{"llama bare object in prose", "I will count them.\n{\"name\": \"run_read_query\", \"parameters\": " + read + "}\nThen report.",
			[]string{"run_read_query"}, []string{read}, `call read from the model's text (a {"name","parameters"} object)`, "I will count them.\n\nThen report."},
		{"llama python tag", "<|python_tag|>{\"name\": \"run_read_query\", \"parameters\": " + read + "}",
			[]string{"run_read_query"}, []string{read}, `call read from the model's text (a {"name","parameters"} object)`, ""},
		{"arguments as a JSON string", `{"name":"run_read_query","arguments":` + jsonQuoted(read) + `}`,
			[]string{"run_read_query"}, []string{read}, "arguments sent as a JSON string", ""},
		{"json fence", "Here is the call:\n```json\n{\"name\":\"run_read_query\",\"arguments\":" + read + "}\n```",
			[]string{"run_read_query"}, []string{read}, "call read from the model's text (a ```json fence)", "Here is the call:"},
		{"a list of calls", `[{"name":"inspect_schema","arguments":{"table":"t"}},{"name":"run_read_query","parameters":` + read + `}]`,
			[]string{"inspect_schema", "run_read_query"}, []string{`{"table":"t"}`, read}, "", ""},
		{"openai shape", `{"type":"function","function":{"name":"run_read_query","arguments":` + read + `}}`,
			[]string{"run_read_query"}, []string{read}, "", ""},
		{"name case and prefix", `<tool_call>{"name":"functions.Run_Read_Query","arguments":` + read + `}</tool_call>`,
			[]string{"run_read_query"}, []string{read}, `tool name "functions.Run_Read_Query" read as "run_read_query"`, ""},
		{"no arguments", `<tool_call>{"name":"inspect_schema"}</tool_call>`,
			[]string{"inspect_schema"}, []string{"{}"}, "", ""},
		{"unknown tool is prose", `<tool_call>{"name":"search_web","arguments":{"q":"x"}}</tool_call>`, nil, nil, "", ""},
		{"prose quoting JSON", `The row reads {"name": "Rock", "total": 826.65}, the best.`, nil, nil, "", ""},
		{"prose", "Rock sells best. Which year? 2013.", nil, nil, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls, rest, broken := readCalls(c.text, investigationTools)
			if broken != nil {
				t.Fatalf("read as a broken call: %+v", broken)
			}
			var tools, args []string
			for _, tc := range calls {
				tools, args = append(tools, tc.tool), append(args, tc.args)
			}
			if !slices.Equal(tools, c.tools) || !slices.Equal(args, c.args) {
				t.Fatalf("calls %v %q, want %v %q", tools, args, c.tools, c.args)
			}
			if len(calls) == 0 {
				if rest != c.text {
					t.Fatalf("prose changed to %q", rest)
				}
				return
			}
			if c.note != "" && !slices.Contains(calls[0].notes, c.note) {
				t.Errorf("notes %q lack %q", calls[0].notes, c.note)
			}
			if !strings.HasPrefix(calls[0].notes[0], "call read from the model's text (") {
				t.Errorf("the first note %q does not say the call was read from the text", calls[0].notes[0])
			}
			if rest != c.rest {
				t.Errorf("prose left %q, want %q", rest, c.rest)
			}
		})
	}
}

// TestUnreadableCallsAreRefusedNotProse (item 8): a turn cut at the output
// limit, a call the vendor reported malformed and text that plainly starts
// a call and does not parse are each refused with what was wrong and how to
// send it; prose, a question mark mid-text, and a call naming no tool of the
// run are not.
func TestUnreadableCallsAreRefusedNotProse(t *testing.T) {
	cut := `<tool_call>{"name":"run_read_query","arguments":{"sql":"SELECT genre, SUM(total) FROM invoices GROUP BY`
	cases := []struct {
		name   string
		reply  contracts.ModelTurnReply
		code   string   // "" for prose
		saying []string // what the refusal must say
	}{
		{"cut at the limit", contracts.ModelTurnReply{Text: cut, FinishReason: contracts.FinishLength}, string(refuseCallCut),
			[]string{"cut off at the model's output limit", "it began a call to run_read_query", "shorter", `run_read_query takes {"sql":"…","reason":"…"}`}},
		{"prose cut at the limit", contracts.ModelTurnReply{Text: "Rock sells best, with", FinishReason: contracts.FinishLength}, string(refuseCallCut),
			[]string{"cut off at the model's output limit", "The run's tools: inspect_schema, run_read_query"}},
		{"vendor malformed", contracts.ModelTurnReply{FinishReason: contracts.FinishMalformedCall}, string(refuseMalformedCall),
			[]string{"reported it malformed", "one JSON object of the tool's parameters"}},
		{"unclosed block", contracts.ModelTurnReply{Text: cut}, string(refuseMalformedCall),
			[]string{"a <tool_call> block", "it began a call to run_read_query", "ends before it is complete", "send it as a tool call"}},
		{"bad JSON in a bare call", contracts.ModelTurnReply{Text: `{"name": "run_read_query", "parameters": {"sql": 'SELECT 1'}}`}, string(refuseMalformedCall),
			[]string{`a {"name",…} object`, "is not valid at character"}},
		{"bad JSON in a fence", contracts.ModelTurnReply{Text: "```json\n{\"name\": \"compose_report\", \"arguments\": {\"claims\": [}\n```"}, string(refuseMalformedCall),
			[]string{"a ```json fence", "compose_report takes"}},
		{"prose", contracts.ModelTurnReply{Text: "Rock sells best, with 826.65 in revenue."}, "", nil},
		{"broken JSON mid-prose", contracts.ModelTurnReply{Text: `I thought of {"name": "x" but it is just an idea.`}, "", nil},
		{"unknown tool", contracts.ModelTurnReply{Text: `<tool_call>{"name":"search_web","arguments":{}}</tool_call>`}, "", nil},
		{"a good text call", contracts.ModelTurnReply{Text: `<tool_call>{"name":"inspect_schema","arguments":{}}</tool_call>`, FinishReason: contracts.FinishLength}, "", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := unreadCall(c.reply, investigationTools)
			if c.code == "" {
				if r != nil {
					t.Fatalf("refused as %+v", r)
				}
				return
			}
			if r == nil || string(r.Code) != c.code {
				t.Fatalf("refusal %+v, want code %s", r, c.code)
			}
			said := r.Message + " / " + r.Fix
			for _, s := range c.saying {
				if !strings.Contains(said, s) {
					t.Errorf("%q does not say %q", said, s)
				}
			}
			if strings.Contains(said, "prose") {
				t.Errorf("an unreadable call is called prose: %q", said)
			}
		})
	}
}

func jsonQuoted(s string) string { b, _ := json.Marshal(s); return string(b) }

// textScript answers each turn with the reply of its position, past the
// end with prose.
func textScript(replies ...contracts.ModelTurnReply) func(int, contracts.ModelTurnRequest) contracts.ModelTurnReply {
	return func(n int, _ contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n < len(replies) {
			return replies[n]
		}
		return contracts.ModelTurnReply{}
	}
}

// TestTextCallsDriveTheRun (item 8, reproduced): a read written as a Qwen
// <tool_call> block and a report written as Llama's {"name","parameters"}
// object answer the run. Before, each was "prose" and the run ended
// model-stopped. The ledger keeps the arguments as written, notes on the
// invocation and the report that the call was read from the text, and the
// next turn is shown the call as a tool call with its result.
func TestTextCallsDriveTheRun(t *testing.T) {
	h := newHarness(t, Config{})
	var second contracts.ModelTurnRequest
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		switch n {
		case 0:
			return contracts.ModelTurnReply{Text: "Reading.\n<tool_call>\n{\"name\": \"run_read_query\", \"arguments\": {\"sql\": \"SELECT n FROM t\"}}\n</tool_call>"}
		case 1:
			second = req
			return contracts.ModelTurnReply{Text: `{"name": "compose_report", "parameters": {"claims": [{"text": "The table has rows.", "evidence": [{"source": "artifact", "correlationId": "r1"}]}]}}`}
		}
		return contracts.ModelTurnReply{}
	}
	entries, rec, err := h.drive(t, "textcalls", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.StopReason != contracts.StopReportComposed {
		t.Fatalf("stop %s (%v), want the report", rec.StopReason, kindsOf(entries))
	}
	var inv *contracts.ToolInvoked
	var rep *contracts.ReportComposed
	for _, e := range entries {
		p, _ := e.Decode()
		switch p := p.(type) {
		case *contracts.ToolInvoked:
			inv = p
		case *contracts.ReportComposed:
			rep = p
		case *contracts.ClosingStatement:
			t.Errorf("a text call was recorded as prose: %q", p.Text)
		}
	}
	// The arguments as written (the ledger stores JSON compacted).
	if inv == nil || string(inv.Arguments) != `{"sql":"SELECT n FROM t"}` || inv.Text != "Reading." ||
		!slices.Contains(inv.Normalised, "call read from the model's text (a <tool_call> block)") {
		t.Fatalf("invocation %+v", inv)
	}
	if rep == nil || !slices.Contains(rep.Normalised, `call read from the model's text (a {"name","parameters"} object)`) {
		t.Fatalf("report %+v", rep)
	}
	// Turn 2 was shown turn 1's call as a tool call, and its result.
	var shownCall bool
	for _, m := range second.Messages {
		for _, tc := range m.ToolCalls {
			shownCall = shownCall || tc.Name == policy.ToolRunReadQuery && tc.Arguments == `{"sql":"SELECT n FROM t"}`
		}
		if m.Role == contracts.RoleAssistant && strings.Contains(m.Content, "<tool_call>") {
			t.Errorf("the call was shown again as text: %q", m.Content)
		}
	}
	if !shownCall || len(toolMessages(second)) != 1 {
		t.Fatalf("turn 2 was not shown the call and its result: %+v", second.Messages)
	}
}

// TestRefusedTextCallRecordsItsNote (item 8): a text call that is refused
// (arguments its tool does not take) carries the note on its refusal.
func TestRefusedTextCallRecordsItsNote(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = textScript(contracts.ModelTurnReply{Text: `<tool_call>{"name":"run_read_query","arguments":{"nope":"x"}}</tool_call>`})
	entries, _, err := h.drive(t, "refusednote", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if p, _ := e.Decode(); p != nil {
			if r, ok := p.(*contracts.ToolRefused); ok {
				if r.Code != refuseInvalidArguments || !slices.Contains(r.Normalised, "call read from the model's text (a <tool_call> block)") {
					t.Fatalf("refusal %+v", r)
				}
				return
			}
		}
	}
	t.Fatalf("no refusal: %v", kindsOf(entries))
}

// TestCutCallIsRefusedThenAnswered (item 8, reproduced): a turn cut at the
// output limit mid-call is refused with the fix — not "you wrote prose" —
// and the model's next, whole call runs; the refusal is rebuilt from the
// ledger alone. Three unreadable calls in a row end the run as a loop.
func TestCutCallIsRefusedThenAnswered(t *testing.T) {
	h := newHarness(t, Config{})
	var told []string
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		told = append(told, lastUser(req))
		switch n {
		case 0:
			return contracts.ModelTurnReply{Text: `<tool_call>{"name":"run_read_query","arguments":{"sql":"SELECT n, n * 2, n * 3 FROM`, FinishReason: contracts.FinishLength}
		case 1:
			// An unreadable call breaks a prose streak: prose now is the first.
			return contracts.ModelTurnReply{Text: "Thinking about it."}
		case 2:
			return reads("SELECT n FROM t")(0, req)
		case 3:
			return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: "rep", Name: policy.ToolComposeReport,
				Arguments: `{"claims":[{"text":"The table has rows.","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`}}}
		}
		return contracts.ModelTurnReply{}
	}
	entries, rec, err := h.drive(t, "cutcall", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.StopReason != contracts.StopReportComposed {
		t.Fatalf("stop %s (%v), want the report", rec.StopReason, kindsOf(entries))
	}
	if !strings.HasPrefix(told[1], "Refused (call_cut_short): your turn was cut off at the model's output limit") ||
		strings.Contains(told[1], "prose") || !strings.Contains(told[1], "How to fix: send the call again as a tool call") {
		t.Fatalf("turn 2 was told %q", told[1])
	}
	if rec.Closing != "Thinking about it." {
		t.Errorf("the record's closing is %q: a refused call is no closing statement", rec.Closing)
	}
	// The refusal is the ledger's: rebuilt, turn 1 is the cut text and its refusal.
	msgs := transcript(entries, "")
	var after string
	for i, m := range msgs {
		if m.Role == contracts.RoleAssistant && strings.HasPrefix(m.Content, `<tool_call>{"name":"run_read_query"`) && i+1 < len(msgs) {
			after = msgs[i+1].Content
		}
	}
	if after != told[1] {
		t.Fatalf("rebuilt, the cut turn is answered %q, want %q", after, told[1])
	}

	// Three in a row: a loop, stopped.
	h2 := newHarness(t, Config{})
	cutTurn := contracts.ModelTurnReply{Text: `<tool_call>{"name":"run_read_query","arguments":{"sql":"SELECT`, FinishReason: contracts.FinishLength}
	h2.model.script = textScript(cutTurn, cutTurn, cutTurn, cutTurn)
	entries, rec, err = h2.drive(t, "cutloop", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.StopReason != contracts.StopRepeatedCall || rec.Spent.Turns != maxUnreadCalls {
		t.Fatalf("stop %s after %d turns (%v), want %s after %d", rec.StopReason, rec.Spent.Turns, kindsOf(entries), contracts.StopRepeatedCall, maxUnreadCalls)
	}
}

// toolMessages are a request's tool results.
func toolMessages(req contracts.ModelTurnRequest) []contracts.Message {
	var out []contracts.Message
	for _, m := range req.Messages {
		if m.Role == contracts.RoleTool {
			out = append(out, m)
		}
	}
	return out
}
