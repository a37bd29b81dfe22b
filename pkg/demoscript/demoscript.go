// Package demoscript is the recorded investigation the demo provider
// (LLM_PROVIDER=demo) replays through modeltest's OpenAI replay server.
//
// It is a script, not a model, and says so: every text it writes calls
// itself a demonstration replay, and modelturn marks its replies Demo with
// model "sonde-demo-replay". Everything else about a demo run is real: the
// statements go through the guard to the demo SQLite shop database, the
// results are stored as artifacts, and the report cites the correlation ids
// the run produced and states figures read from the returned rows.
//
// The conversation is decided from the request alone (the tool calls made so
// far and what they returned), so the script holds no state and serves any
// number of runs at once:
//
//  1. inspect_schema {"table":"orders"}
//  2. run_read_query MonthlyOrdersSQL (retried once as MonthlyOrdersSimpleSQL
//     if the first reading produced no artifact)
//  3. run_read_query MonthlySignupsSQL
//  4. compose_report, one claim per figure, each citing the artifact it
//     was read from (readings that failed are left out)
//  5. after the report's tool result: a short closing text, finish "stop"
//
// Offered no tools at all (a planning run), it answers at once with
// MonthlyOrdersSQL in a block fenced as sqlite, the demo database's engine.
package demoscript

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
)

// Model is the model name demo replies carry.
const Model = "sonde-demo-replay"

// Label opens every text the script writes.
const Label = "Demonstration replay"

// The tools the script calls.
const (
	ToolInspectSchema = "inspect_schema"
	ToolRunReadQuery  = "run_read_query"
	ToolComposeReport = "compose_report"
	// ToolPresentAnswer is offered to data-analysis runs: the replay
	// presents its monthly orders reading as a line chart.
	ToolPresentAnswer = "present_answer"
)

// The statements the script drafts, written for the demo shop's columns
// (orders.ordered_at "YYYY-MM-DD HH:MM:SS", orders.status, orders.total_cents,
// customers.signup_date "YYYY-MM-DD").
const (
	// MonthlyOrdersSQL is the first reading: orders and paid revenue per month.
	MonthlyOrdersSQL = "SELECT substr(ordered_at, 1, 7) AS month,\n" +
		"       COUNT(*) AS orders,\n" +
		"       ROUND(SUM(CASE WHEN status = 'paid' THEN total_cents ELSE 0 END) / 100.0, 2) AS paid_revenue_eur\n" +
		"FROM orders\n" +
		"GROUP BY month\n" +
		"ORDER BY month"
	// MonthlyOrdersSimpleSQL is the retry when the first reading fails.
	MonthlyOrdersSimpleSQL = "SELECT substr(ordered_at, 1, 7) AS month, COUNT(*) AS orders\n" +
		"FROM orders\n" +
		"GROUP BY month\n" +
		"ORDER BY month"
	// MonthlySignupsSQL is the second reading: new customers per month.
	MonthlySignupsSQL = "SELECT substr(signup_date, 1, 7) AS month, COUNT(*) AS new_customers\n" +
		"FROM customers\n" +
		"GROUP BY month\n" +
		"ORDER BY month"
)

// maxTurns stops the script from ever looping: past it, it closes with text.
const maxTurns = 8

// Investigation is the recorded investigation of the demo shop database. Its
// zero value is ready to use and safe for concurrent use.
type Investigation struct{}

// New returns the script.
func New() *Investigation { return &Investigation{} }

var _ modeltest.Script = (*Investigation)(nil)

// Reply decides the next turn from the request's transcript.
func (*Investigation) Reply(req modeltest.ChatRequest) (modeltest.Reply, error) {
	st := readState(req)
	var r modeltest.Reply
	switch {
	case len(req.Tools) == 0:
		// A planning run: no tools, the deliverable is one fenced statement.
		r = text(Label + ": a scripted analyst, not a language model, plans this run against the demo shop database. " +
			"Orders and paid revenue per month show whether volume changed and when:\n\n```sqlite\n" + MonthlyOrdersSQL +
			"\n```\n\nRun it, then compare the months around the drop; a second reading of new customers per month " +
			"(customers.signup_date) would tell whether fewer orders follow fewer signups.")
	case !req.HasTool(ToolRunReadQuery) || !req.HasTool(ToolComposeReport):
		r = text(Label + ": this recorded investigation needs the agent tools run_read_query and compose_report, " +
			"which this run does not offer. Its plan would be: count orders and paid revenue per month, " +
			"count new customers per month, and report the months that stand out, citing each reading.")
	case st.report != nil:
		r = text(closing(st.report.Content))
	case req.AssistantTurns() >= maxTurns:
		r = text(Label + ": the replay has run out of scripted turns and stops here.")
	case !st.asked(ToolInspectSchema, ""):
		r = call(Label+": a scripted analyst, not a language model, drives this run against the demo shop database. "+
			"First, the columns of the orders table.",
			ToolInspectSchema, map[string]any{"table": "orders"})
	case !st.asked(ToolRunReadQuery, MonthlyOrdersSQL):
		r = call(Label+": orders carry ordered_at, status and total_cents. Counting orders and paid revenue per month.",
			ToolRunReadQuery, map[string]any{
				"sql":    MonthlyOrdersSQL,
				"reason": Label + ": monthly order counts and paid revenue show whether volume changed over time.",
			})
	case st.reading(MonthlyOrdersSQL).id == "" && !st.asked(ToolRunReadQuery, MonthlyOrdersSimpleSQL):
		r = call(Label+": that reading produced no result; retrying once with a simpler count.",
			ToolRunReadQuery, map[string]any{
				"sql":    MonthlyOrdersSimpleSQL,
				"reason": Label + ": the monthly order count alone, after the fuller reading failed.",
			})
	case req.HasTool(ToolPresentAnswer) && st.orders().id != "" && !st.asked(ToolPresentAnswer, ""):
		// A data-analysis run: the monthly orders are the answer to show.
		r = call(Label+": the monthly orders are the answer to show: a line chart of orders per month.",
			ToolPresentAnswer, map[string]any{
				"artifact": st.orders().id,
				"presentation": map[string]any{"kind": "chart", "spec": map[string]any{
					"type": "line", "x": "month", "y": []string{"orders"},
					"caption": Label + ": orders per month in the demo shop",
				}},
			})
	case !st.asked(ToolRunReadQuery, MonthlySignupsSQL):
		r = call(Label+": "+ordersSummary(st.orders())+" Checking whether new customer signups moved the same way.",
			ToolRunReadQuery, map[string]any{
				"sql":    MonthlySignupsSQL,
				"reason": Label + ": new customers per month, to see whether fewer orders follow fewer signups.",
			})
	default:
		claims := buildClaims(st.orders(), st.reading(MonthlySignupsSQL))
		if len(claims) == 0 {
			r = text(Label + ": none of the readings produced a result to cite, so there is no report to compose. " +
				"The replay stops here.")
			break
		}
		r = call(Label+": composing the report from the readings, each claim citing the result it rests on.",
			ToolComposeReport, map[string]any{"claims": claims})
	}
	r.Usage = usage(req, r)
	return r, nil
}

func eur(v float64) string { return "EUR " + money(v) }

func text(s string) modeltest.Reply { return modeltest.Reply{Text: s} }

func call(say, tool string, args any) modeltest.Reply {
	b, _ := json.Marshal(args) // maps of strings and claims always encode
	return modeltest.Reply{Text: say, ToolCalls: []modeltest.ToolCall{{Name: tool, Arguments: string(b)}}}
}

// closing is the last turn's text, after compose_report answered.
func closing(result string) string {
	if strings.HasPrefix(strings.TrimSpace(result), "Refused") {
		return Label + ": the report was refused, as the tool result explains; a scripted replay cannot revise it, so it stops here."
	}
	return Label + ": the report is filed. Every figure in it was read from the demo shop database during this run " +
		"and cites the stored result it came from; only the analyst was scripted."
}

// usage is a plausible, deterministic token count: about four characters a
// token, the tool declarations included, and the stable prefix of a later
// turn counted as cached in 128-token steps, as OpenAI reports it.
func usage(req modeltest.ChatRequest, r modeltest.Reply) modeltest.Usage {
	chars := 0
	for _, m := range req.Messages {
		chars += len(m.Content) + 8
		for _, c := range m.ToolCalls {
			chars += len(c.Function.Name) + len(c.Function.Arguments)
		}
	}
	for _, t := range req.Tools {
		chars += len(t.Function.Name) + len(t.Function.Description) + len(t.Function.Parameters)
	}
	prompt := int64(chars/4 + 12)
	out := len(r.Text)
	for _, c := range r.ToolCalls {
		out += len(c.Name) + len(c.Arguments)
	}
	completion := int64(out/4 + 6)
	var cached int64
	if req.AssistantTurns() > 0 && prompt >= 1024 {
		cached = prompt * 3 / 4 / 128 * 128
	}
	return modeltest.Usage{PromptTokens: prompt, CompletionTokens: completion, CachedTokens: cached}
}

// state is what the transcript says the script has done so far.
type state struct {
	calls   []modeltest.ChatToolCall
	results map[string]string // call id → tool result
	report  *modeltest.ToolResult
}

func readState(req modeltest.ChatRequest) state {
	st := state{calls: req.ToolCalls(), results: map[string]string{}}
	for _, tr := range req.ToolMessages() {
		st.results[tr.CallID] = tr.Content
		if tr.Tool == ToolComposeReport {
			tr := tr
			st.report = &tr
		}
	}
	return st
}

// asked reports whether the script called tool (with sql, for readings).
func (st state) asked(tool, sql string) bool {
	for _, c := range st.calls {
		if c.Function.Name == tool && (sql == "" || argSQL(c.Function.Arguments) == sql) {
			return true
		}
	}
	return false
}

// reading is one run_read_query result: the artifact's correlation id (empty
// when the reading was refused or failed) and the table it returned.
type reading struct {
	id    string
	table table
}

// reading returns the result of the last call that ran sql.
func (st state) reading(sql string) reading {
	for i := len(st.calls) - 1; i >= 0; i-- {
		c := st.calls[i]
		if c.Function.Name != ToolRunReadQuery || argSQL(c.Function.Arguments) != sql {
			continue
		}
		content, ok := st.results[c.ID]
		if !ok {
			return reading{}
		}
		var rd reading
		if ids := modeltest.CitedIDs(content); len(ids) > 0 {
			rd.id = ids[0]
			rd.table = parseTable(content)
		}
		return rd
	}
	return reading{}
}

// orders is the monthly orders reading: the full one, or its retry.
func (st state) orders() reading {
	if rd := st.reading(MonthlyOrdersSQL); rd.id != "" {
		return rd
	}
	return st.reading(MonthlyOrdersSimpleSQL)
}

func argSQL(args string) string {
	var a struct {
		SQL string `json:"sql"`
	}
	_ = json.Unmarshal([]byte(args), &a)
	return a.SQL
}

// evidence cites one artifact.
func evidence(ids ...string) []contracts.EvidenceRef {
	out := make([]contracts.EvidenceRef, 0, len(ids))
	for _, id := range ids {
		out = append(out, contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: id})
	}
	return out
}

func ordersSummary(rd reading) string {
	s, ok := rd.table.series("month", "orders")
	if rd.id == "" || !ok {
		return "the monthly order reading produced no result."
	}
	lo := s.min()
	return fmt.Sprintf("across %d months, the fewest orders came in %s: %s%s.",
		len(s), lo.label, num(lo.value), s.around(lo.label, num))
}

// buildClaims states the figures the readings returned, each claim citing
// the reading it rests on.
func buildClaims(orders, signups reading) []contracts.Claim {
	const tag = " (" + Label + ": figures read during this run; the analyst is scripted.)"
	var claims []contracts.Claim
	var dip string
	if s, ok := orders.table.series("month", "orders"); orders.id != "" && ok {
		lo := s.min()
		dip = lo.label
		claims = append(claims, contracts.Claim{
			Text: fmt.Sprintf("Orders fell to %s in %s, the fewest of the %d months read%s; the monthly median is %s.",
				num(lo.value), lo.label, len(s), s.around(lo.label, num), num(s.median())) + tag,
			Evidence: evidence(orders.id),
		})
		if rev, ok := orders.table.series("month", "paid_revenue_eur"); ok {
			if v, ok := rev.at(lo.label); ok {
				claims = append(claims, contracts.Claim{
					Text: fmt.Sprintf("Paid revenue in %s was EUR %s%s; the monthly median is EUR %s.",
						lo.label, money(v), rev.around(lo.label, eur), money(rev.median())) + tag,
					Evidence: evidence(orders.id),
				})
			}
		}
	}
	if s, ok := signups.table.series("month", "new_customers"); signups.id != "" && ok {
		lo := s.min()
		switch v, inDip := s.at(dip); {
		case dip != "" && inDip && lo.label == dip:
			claims = append(claims, contracts.Claim{
				Text: fmt.Sprintf("New customer signups fell to %s in %s, the fewest of any month%s; the monthly median is %s.",
					num(v), dip, s.around(dip, num), num(s.median())) + tag,
				Evidence: evidence(signups.id),
			})
			claims = append(claims, contracts.Claim{
				Text: fmt.Sprintf("The dip in orders in %s coincides with the fewest new customers of any month, "+
					"so fewer new customers is a likely part of why orders fell.", dip) + tag,
				Evidence: evidence(orders.id, signups.id),
			})
		case dip != "" && inDip:
			claims = append(claims, contracts.Claim{
				Text: fmt.Sprintf("New customer signups in %s were %s (monthly median %s); the fewest signups came in %s (%s).",
					dip, num(v), num(s.median()), lo.label, num(lo.value)) + tag,
				Evidence: evidence(signups.id),
			})
		default:
			claims = append(claims, contracts.Claim{
				Text: fmt.Sprintf("New customer signups were fewest in %s: %s%s; the monthly median is %s.",
					lo.label, num(lo.value), s.around(lo.label, num), num(s.median())) + tag,
				Evidence: evidence(signups.id),
			})
		}
	}
	return claims
}
