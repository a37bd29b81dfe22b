package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// citationRule is said once in the rules and repeated, word for word, in the
// report-reserve notice and in every citation refusal. The schema snapshot
// is cited in the same shape as every tool result.
const citationRule = `Every claim must cite evidence this run produced, as {"source":"artifact","correlationId":"<the id a tool result or the schema snapshot gave>"}.`

// engineNames are the engines as a person names them.
var engineNames = map[contracts.Engine]string{
	contracts.EnginePostgres: "PostgreSQL",
	contracts.EngineSQLite:   "SQLite",
	contracts.EngineDuckDB:   "DuckDB",
	contracts.EngineMSSQL:    "SQL Server (T-SQL)",
}

func engineName(e contracts.Engine) string {
	if n, ok := engineNames[e]; ok {
		return n
	}
	return string(e)
}

func systemPrompt(h *contracts.RunStarted) string {
	if h.Mode == contracts.ModePlanning {
		return planningPrompt(h)
	}
	var b strings.Builder
	b.WriteString("You are Sonde, investigating a production database strictly read-only.\n")
	fmt.Fprintf(&b, "The database is %s: write its dialect.\n", engineName(h.Engine))
	fmt.Fprintf(&b, "Workflow: %s. Answer the user's objective with evidence read from the database.\n", h.WorkflowType)
	b.WriteString("Tools: inspect_schema reads the schema (the server writes that query: one table, a schema, or a name pattern; long listings come in pages); run_read_query runs one SELECT; ")
	b.WriteString("compose_report ends the run with your findings.\n")
	fmt.Fprintf(&b, "Limits: %d model turns, %d statements, %d rows and %d KiB per result (oversized results are refused: aggregate or add LIMIT), %d s per statement.\n",
		h.Budget.MaxTurns, h.Budget.MaxStatements, h.Budget.MaxRows, h.Budget.MaxBytes>>10, h.Budget.StatementTimeoutMs/1000)
	b.WriteString("Never try to change the database: writes, DDL and settings are refused.\n")
	b.WriteString(citationRule + "\n")
	b.WriteString(fence.Instructions + "\n")
	return b.String()
}

func objectiveMessage(h *contracts.RunStarted, ctxCaptured *contracts.ContextCaptured, ctxMissing *contracts.ContextUnavailable) string {
	var b strings.Builder
	b.WriteString("Objective: ")
	b.WriteString(fence.Neutralise(h.Objective))
	b.WriteString("\n\n")
	if th := h.Thread; th != nil && th.Context != "" {
		b.WriteString(fence.Reseal(th.Context))
		b.WriteString("\n\n")
	}
	planning := h.Mode == contracts.ModePlanning
	switch {
	case ctxCaptured != nil && planning:
		b.WriteString("Schema snapshot:\n")
		b.WriteString(fence.Reseal(ctxCaptured.Text))
	case ctxCaptured != nil:
		fmt.Fprintf(&b, "Schema snapshot; cite it as %s for claims about the structure itself:\n", snapshotCitation(ctxCaptured))
		b.WriteString(fence.Reseal(ctxCaptured.Text))
	case ctxMissing != nil && planning:
		fmt.Fprintf(&b, "No schema snapshot could be captured (%s). Draft from the objective alone, or answer NO STATEMENT: with what you would need to know.\n", ctxMissing.Code)
	case ctxMissing != nil:
		fmt.Fprintf(&b, "No schema snapshot could be captured (%s). Use inspect_schema.\n", ctxMissing.Code)
	}
	return b.String()
}

const nudgeNoTool = "You wrote prose without calling a tool. Continue the investigation with a tool, " +
	"or call compose_report now. " + citationRule

const reserveNotice = "This is your last turn: call compose_report now with what you have established. " + citationRule

// readingsNotice asks for the report once the model has taken the readings
// its tuning allows before reporting.
func readingsNotice(n int) string {
	return fmt.Sprintf("You have taken %d readings. Call compose_report now with what you have established. %s", n, citationRule)
}

// call is one tool call of a turn as the ledger recorded it.
type call struct {
	contracts.ToolCall
	content string
	settled bool
}

// transcript rebuilds the messages a model turn is sent, purely from the
// ledger. The live loop and a resumed drive use this one function, so a
// resumed run is shown exactly what it would have been shown.
func transcript(entries []contracts.Entry, notice string) []contracts.Message {
	var (
		header   *contracts.RunStarted
		captured *contracts.ContextCaptured
		missing  *contracts.ContextUnavailable
		turns    = map[int][]*call{}
		byID     = map[string]*call{}
		order    []int
		closing  = map[int]string{}
		prose    = map[int]string{} // text beside a turn's calls
	)
	addCall := func(tc contracts.ToolCall) *call {
		if tc.Text != "" {
			prose[tc.Turn] = tc.Text
		}
		key := fmt.Sprintf("%d/%s", tc.Turn, tc.CallID)
		if c, ok := byID[key]; ok {
			return c
		}
		if _, seen := turns[tc.Turn]; !seen {
			if _, seenText := closing[tc.Turn]; !seenText {
				order = append(order, tc.Turn)
			}
		}
		c := &call{ToolCall: tc}
		byID[key] = c
		turns[tc.Turn] = append(turns[tc.Turn], c)
		return c
	}
	settle := func(tc contracts.ToolCall, content string) {
		c := addCall(tc)
		c.content, c.settled = content, true
	}
	for _, e := range entries {
		p, err := e.Decode()
		if err != nil {
			continue
		}
		switch p := p.(type) {
		case *contracts.RunStarted:
			header = p
		case *contracts.ContextCaptured:
			captured = p
		case *contracts.ContextUnavailable:
			missing = p
		case *contracts.ToolInvoked:
			addCall(p.ToolCall)
		case *contracts.ToolCompleted:
			settle(p.ToolCall, p.Content)
		case *contracts.ToolRefused:
			settle(p.ToolCall, p.Content)
		case *contracts.ReportComposed:
			settle(p.ToolCall, "Report recorded.")
		case *contracts.ClosingStatement:
			if _, seen := turns[p.Turn]; !seen {
				order = append(order, p.Turn)
			}
			closing[p.Turn] = p.Text
		}
	}
	if header == nil {
		return nil
	}
	msgs := []contracts.Message{
		{Role: contracts.RoleSystem, Content: systemPrompt(header)},
		{Role: contracts.RoleUser, Content: objectiveMessage(header, captured, missing)},
	}
	for _, t := range order {
		calls := turns[t]
		// The model's own words come back neutralised: prose that quotes the
		// data it read must not close a fence the server opened.
		if len(calls) == 0 {
			nudge := nudgeNoTool
			if header.Mode == contracts.ModePlanning {
				nudge = planReminder(header)
			}
			msgs = append(msgs,
				contracts.Message{Role: contracts.RoleAssistant, Content: fence.Neutralise(closing[t])},
				contracts.Message{Role: contracts.RoleUser, Content: nudge})
			continue
		}
		am := contracts.Message{Role: contracts.RoleAssistant, Content: fence.Neutralise(prose[t])}
		for _, c := range calls {
			am.ToolCalls = append(am.ToolCalls, contracts.ModelToolCall{
				ID: fence.Neutralise(c.CallID), Name: fence.Neutralise(c.Tool), Arguments: neutraliseArguments(c.Arguments)})
		}
		msgs = append(msgs, am)
		for _, c := range calls {
			content := c.content
			if !c.settled {
				content = indeterminateContent
			}
			// Reseal keeps the fences the server wrote and neutralises the
			// rest (a refusal quoting the statement, a ledger written by an
			// older, weaker neutraliser).
			msgs = append(msgs, contracts.Message{Role: contracts.RoleTool, ToolCallID: fence.Neutralise(c.CallID), Content: fence.Reseal(content)})
		}
	}
	if notice != "" {
		msgs = append(msgs, contracts.Message{Role: contracts.RoleUser, Content: notice})
	}
	return msgs
}

// neutraliseArguments neutralises every string in a call's JSON arguments
// and keeps them JSON; arguments that need nothing come back byte for byte.
func neutraliseArguments(raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return fence.Neutralise(string(raw))
	}
	changed := false
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			n := fence.Neutralise(x)
			changed = changed || n != x
			return n
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[walk(k).(string)] = walk(e)
			}
			return out
		}
		return v
	}
	v = walk(v)
	out := string(raw)
	if changed {
		var b bytes.Buffer
		e := json.NewEncoder(&b)
		e.SetEscapeHTML(false)
		if e.Encode(v) != nil {
			return fence.Neutralise(string(raw))
		}
		out = strings.TrimSuffix(b.String(), "\n")
	}
	if fence.Neutralise(out) != out {
		// The word spelled across keys and values: show the whole text,
		// neutralised, as one JSON string.
		q, _ := json.Marshal(fence.Neutralise(string(raw)))
		return string(q)
	}
	return out
}

const indeterminateContent = "This step's outcome was lost when the process driving the run stopped. " +
	"It may or may not have run and it will not be run again. If you still need this reading, draft a different statement."
