package e2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
)

// Issue 18, item 9: a small model that wraps its calls the ways small
// models do, each shape once across its turns, and still answers.

// evalTextArgs reports whether a vendor's wire carries a call's arguments
// as text. Only OpenAI's does (function.arguments is a string); Anthropic's
// input, Gemini's args and Ollama's arguments are JSON objects, so prose
// after the object, a ```json fence or the object double-encoded cannot
// cross them: those shapes are sent on OpenAI alone.
func evalTextArgs(vendor string) bool { return vendor == modeltest.VendorOpenAI }

// evalShapeCall is one call with its arguments as text.
func evalShapeCall(name, args string) modeltest.Reply {
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: name, Arguments: args}}}
}

// evalIDsOf are the result ids the tool messages of req named, in order.
func evalIDsOf(req modeltest.ChatRequest) []string {
	var ids []string
	for _, m := range req.ToolMessages() {
		for _, id := range modeltest.CitedIDs(m.Content) {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

func init() {
	evalScenarios = append(evalScenarios, evalScenario{
		// Describes a table under a prefixed name with "None" for a null,
		// counts under a capitalised name with the statement in a ```sql
		// fence (and, where the wire carries text, the arguments in a
		// ```json fence), reads per status inside a {"name","parameters"}
		// wrapper (with prose after it, where it can), and reports citing
		// an id written R2 under source "result" (double-encoded, where it
		// can).
		name:      "wraps its calls",
		objective: "How many orders are there, and in which statuses?",
		play: func(req modeltest.ChatRequest) modeltest.Reply {
			text := evalTextArgs(req.Vendor)
			switch req.AssistantTurns() {
			case 0:
				return evalShapeCall("functions.inspect_schema", `{"table":"orders","schema":"None","pattern":null,"after":null}`)
			case 1:
				args := `{"sql":"` + "```sql\\nSELECT COUNT(*) AS n FROM orders\\n```" + `","reason":"None"}`
				if text {
					args = "```json\n" + args + "\n```"
				}
				return evalShapeCall("Run_Read_Query", args)
			case 2:
				args := `{"name":"run_read_query","parameters":{"sql":"SELECT status, COUNT(*) AS n FROM orders GROUP BY status ORDER BY status","reason":"orders per status"}}`
				if text {
					args += "\nThat reads the statuses."
				}
				return evalShapeCall("run_read_query", args)
			}
			ids := evalIDsOf(req)
			if len(ids) < 3 {
				return modeltest.Reply{Text: fmt.Sprintf("The results named %v; I expected three ids.", ids)}
			}
			args := fmt.Sprintf(`{"claims":[{"text":"The orders table holds the shop's orders, counted as read.","evidence":[{"source":"result","correlationId":%q}]},`+
				`{"text":"The orders are grouped by their status, as read.","evidence":[{"source":"artifact","correlationId":%q}]}]}`,
				strings.ToUpper(ids[1]), ids[2])
			if text {
				b, _ := json.Marshal(args)
				args = string(b)
			}
			return evalShapeCall("compose_report", args)
		},
		check: func(t *testing.T, r evalRun) {
			text := evalTextArgs(r.vendor)
			if n := len(payloads[contracts.ToolRefused](r, contracts.KindToolRefused)); n != 0 {
				t.Errorf("%d refusals for shapes whose meaning is not in doubt", n)
			}
			if r.rec.Spent.Turns != 4 {
				t.Errorf("turns %d, want 4: describe, count, per status, report", r.rec.Spent.Turns)
			}
			inv := payloads[contracts.ToolInvoked](r, contracts.KindToolInvoked)
			var tools []string
			for _, i := range inv {
				tools = append(tools, i.Tool)
			}
			if strings.Join(tools, ",") != "inspect_schema,run_read_query,run_read_query" {
				t.Fatalf("invocations %v", tools)
			}
			want := [][]string{
				{`tool "functions.inspect_schema" read as "inspect_schema"`, `"schema": the string "None" read as null`},
				{`tool "Run_Read_Query" read as "run_read_query"`, `"sql": the ` + "```sql" + ` fence around the statement taken off`, `"reason": the string "None" read as null`},
				{`arguments sent inside a {"name","parameters"} wrapper`},
			}
			if text {
				want[1] = append(want[1], "arguments sent in a ```json fence")
				want[2] = append(want[2], "prose after the arguments' JSON object left out")
			}
			for i, w := range want {
				for _, note := range w {
					if !slices.Contains(inv[i].Normalised, note) {
						t.Errorf("%s's notes %q lack %q", inv[i].Tool, inv[i].Normalised, note)
					}
				}
			}
			if s := inv[1].Arguments; !strings.Contains(string(s), "```sql") {
				t.Errorf("the count's arguments are not kept as sent: %s", s)
			}
			reps := payloads[contracts.ReportComposed](r, contracts.KindReportComposed)
			if len(reps) != 1 {
				t.Fatalf("%d reports", len(reps))
			}
			rep := reps[0]
			for _, note := range []string{`evidence 1.1: source "result" read as "artifact"`} {
				if !slices.Contains(rep.Normalised, note) {
					t.Errorf("the report's notes %q lack %q", rep.Normalised, note)
				}
			}
			if !slices.ContainsFunc(rep.Normalised, func(n string) bool { return strings.HasPrefix(n, `evidence 1.1: "R`) }) {
				t.Errorf("the report's notes %q do not say the upper-case id was read", rep.Normalised)
			}
			if text && !slices.Contains(rep.Normalised, "arguments sent as a JSON string") {
				t.Errorf("the report's notes %q lack the double encoding", rep.Normalised)
			}
			if ev := rep.Claims[0].Evidence; len(ev) != 1 || ev[0].Source != contracts.EvidenceArtifact || ev[0].CorrelationID != strings.ToLower(ev[0].CorrelationID) {
				t.Errorf("the first claim cites %+v", ev)
			}
		},
	})
}
