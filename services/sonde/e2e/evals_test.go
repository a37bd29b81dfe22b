package e2e

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// The behavioural evals: one scripted "model" per behaviour real models show
// (docs/evals.md). Each script reads only what the model is sent — the rules,
// the objective, the context message, tool results, notices — through each
// vendor's real SDK over its replayed wire, and acts on it the way that kind
// of model does; a script is vendor-neutral (modeltest.ChatRequest in,
// modeltest.Reply out), so every scenario runs on all four. Every scenario
// must end answered within its budget — or, with a want, the way its habit
// must end instead — and each also checks the behaviour it stands for.

// evalRunsPerScenario runs each (deterministic) script more than once, so a
// flaky ending shows as an answer rate below 100 %.
const evalRunsPerScenario = 3

// evalTurnLimit is the tuned turn limit of the long runner's model.
const evalTurnLimit = 8

// evalTold matches a citation the server tells the model to use: the
// context message's "cite it as {…}" and every result's "Cite it as {…}"
// (or, from an executor that renders none, "Result stored as {…}").
var evalTold = regexp.MustCompile(`(?i)(?:cite it as|stored as) (\{[^{}]*\})`)

// evalRows is a row count said on the line that names a citation.
var evalRows = regexp.MustCompile(`\b(\d+) rows?\b`)

// evalStatusLine is the line every tool result ends with.
var evalStatusLine = regexp.MustCompile(`\n\[turn (\d+)/(\d+) · (\d+)/(\d+) statements · (\d+) repairs? left · (\d+) s left\]$`)

// evalCitable is one entry of a refused citation's "Citable in this run" list.
var evalCitable = regexp.MustCompile(`(\w+) \((\w+), (\d+) rows?\)`)

// told is a citation as the server wrote it, and the rows behind it (-1
// when the text does not say, as for the schema snapshot).
type told struct {
	raw  string
	rows int
}

// toldIn returns the citations text tells the model to use, in order of
// first mention, each with the rows its line says the result holds.
func toldIn(text string) []told {
	var out []told
	seen := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		for _, m := range evalTold.FindAllStringSubmatch(line, -1) {
			if !json.Valid([]byte(m[1])) || seen[m[1]] {
				continue
			}
			seen[m[1]] = true
			rows := -1
			if r := evalRows.FindStringSubmatch(line); r != nil {
				rows, _ = strconv.Atoi(r[1])
			}
			out = append(out, told{raw: m[1], rows: rows})
		}
	}
	return out
}

// evalContext is the context message: the third message, after the rules
// and the objective.
func evalContext(req modeltest.ChatRequest) string {
	if len(req.Messages) < 3 {
		return ""
	}
	return req.Messages[2].Content
}

// evalNotice is the server's notice closing the request, or "".
func evalNotice(req modeltest.ChatRequest) string {
	if n := len(req.Messages); n > 3 && req.Messages[n-1].Role == "user" {
		return req.Messages[n-1].Content
	}
	return ""
}

// lastResult is the content of the request's last tool message.
func lastResult(req modeltest.ChatRequest) string {
	rs := req.ToolMessages()
	if len(rs) == 0 {
		return ""
	}
	return rs[len(rs)-1].Content
}

func evalCall(tool string, args any) modeltest.Reply {
	var text string
	if s, ok := args.(string); ok {
		text = s
	} else {
		b, _ := json.Marshal(args)
		text = string(b)
	}
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: tool, Arguments: text}}}
}

func evalRead(sql, reason string) modeltest.Reply {
	return evalCall("run_read_query", map[string]string{"sql": sql, "reason": reason})
}

// evalClaim is one claim with its evidence, each reference JSON text sent
// verbatim.
type evalClaim struct {
	text string
	refs []string
}

func evalReport(claims ...evalClaim) modeltest.Reply {
	var parts []string
	for _, c := range claims {
		t, _ := json.Marshal(c.text)
		parts = append(parts, fmt.Sprintf(`{"text":%s,"evidence":[%s]}`, t, strings.Join(c.refs, ",")))
	}
	return evalCall("compose_report", `{"claims":[`+strings.Join(parts, ",")+`]}`)
}

func artifactJSON(id string) string {
	b, _ := json.Marshal(contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: id})
	return string(b)
}

// evalRun is one finished run of a scenario.
type evalRun struct {
	es   []contracts.Entry
	rec  contracts.Record
	reqs []modeltest.ChatRequest // the run's model turns, in order
	// vendor is the wire format the run's model spoke (stacktest.Vendors).
	vendor string
}

// payloads returns the run's entries of one kind, decoded.
func payloads[T any](r evalRun, kind contracts.EventKind) []*T {
	var out []*T
	for _, e := range r.es {
		if e.Kind != kind {
			continue
		}
		if v, err := e.Decode(); err == nil {
			out = append(out, v.(*T))
		}
	}
	return out
}

// toolContents are the tool results the model read, in ledger order:
// completed steps and refusals alike.
func toolContents(r evalRun) []string {
	var out []string
	for _, e := range r.es {
		switch e.Kind {
		case contracts.KindToolCompleted:
			v, _ := e.Decode()
			out = append(out, v.(*contracts.ToolCompleted).Content)
		case contracts.KindToolRefused:
			v, _ := e.Decode()
			out = append(out, v.(*contracts.ToolRefused).Content)
		}
	}
	return out
}

// dbSteps are the run's steps that reached for the database (the report is
// a step of the record too).
func dbSteps(r evalRun) []contracts.Step {
	var out []contracts.Step
	for _, st := range r.rec.Steps {
		if st.Tool != "compose_report" {
			out = append(out, st)
		}
	}
	return out
}

// evalScenario is one behaviour.
type evalScenario struct {
	name string
	// objective is what the user asks.
	objective string
	// tuned runs it on the stack whose model has a tuned turn limit.
	tuned bool
	// play is the scripted model.
	play func(req modeltest.ChatRequest) modeltest.Reply
	// check asserts the behaviour on one finished run.
	check func(t *testing.T, r evalRun)
	// want, when set, is the ending the behaviour must earn instead of an
	// answer: a habit that ends unanswered on purpose.
	want *evalEnding
	// workflow is the run's workflow; "" is an investigation.
	workflow contracts.WorkflowType
	mode     contracts.Mode // "" is an agent run
}

// evalEnding is how a run that must not answer ends: its stop reason, its
// verdict's outcome and a shortfall code the verdict must list ("" for
// none).
type evalEnding struct {
	stop    contracts.StopReason
	outcome contracts.VerdictOutcome
	unmet   string
}

// evalScenarios are the behaviours, in the order docs/evals.md lists them.
var evalScenarios = []evalScenario{
	{
		// Follows every instruction literally: cites exactly the references
		// it was told to, copied verbatim, and nothing else.
		name:      "literal",
		objective: "How many orders does each status have?",
		play: func(req modeltest.ChatRequest) modeltest.Reply {
			if req.AssistantTurns() == 0 {
				return evalRead("SELECT status, COUNT(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC",
					"count the orders per status")
			}
			var read, snapshot []string
			for _, c := range toldIn(evalContext(req)) {
				snapshot = append(snapshot, c.raw)
			}
			for _, m := range req.ToolMessages() {
				for _, c := range toldIn(m.Content) {
					read = append(read, c.raw)
				}
			}
			return evalReport(
				evalClaim{"Orders per status, as read.", read},
				evalClaim{"The orders table records a status per order.", snapshot})
		},
		check: func(t *testing.T, r evalRun) {
			rep := payloads[contracts.ReportComposed](r, contracts.KindReportComposed)[0]
			if len(rep.Normalised) != 0 {
				t.Errorf("a literal copy of what the model was told was read leniently: %q", rep.Normalised)
			}
			// Every citation the model was told to use anywhere resolves:
			// the report above holds them all, and was accepted.
			var cited []string
			for _, c := range rep.Claims {
				for _, ref := range c.Evidence {
					cited = append(cited, ref.CorrelationID)
				}
			}
			if len(cited) != 2 || cited[1] != "schema" || !strings.HasPrefix(cited[0], "r") {
				t.Errorf("cited %v, want the read's id and the snapshot's", cited)
			}
			if n := len(payloads[contracts.ToolRefused](r, contracts.KindToolRefused)); n != 0 {
				t.Errorf("%d refusals for a model that did exactly what it was told", n)
			}
		},
	},
	{
		// Sends the shapes small models send: "query" for sql, claims as a
		// JSON string, a bare id as evidence, "id" for "correlationId" with
		// and without a source.
		name:      "small-model shapes",
		objective: "How many orders are there?",
		play: func(req modeltest.ChatRequest) modeltest.Reply {
			if req.AssistantTurns() == 0 {
				return evalCall("run_read_query", `{"query":"SELECT COUNT(*) AS n FROM orders"}`)
			}
			read := modeltest.CitedIDs(lastResult(req))
			snap := modeltest.CitedIDs(evalContext(req))
			if len(read) == 0 || len(snap) == 0 {
				return modeltest.Reply{Text: "I could not find an id to cite."}
			}
			claims := fmt.Sprintf(`[{"text":"The shop has orders.","evidence":[%q]},`+
				`{"text":"Orders are a table of the shop.","evidence":[{"id":%q}]},`+
				`{"text":"The count is one row.","evidence":[{"source":"artifact","id":%q}]}]`, read[0], snap[0], read[0])
			b, _ := json.Marshal(map[string]string{"claims": claims})
			return evalCall("compose_report", string(b))
		},
		check: func(t *testing.T, r evalRun) {
			inv := payloads[contracts.ToolInvoked](r, contracts.KindToolInvoked)
			if len(inv) != 1 || !slices.Contains(inv[0].Normalised, `"query" read as "sql"`) {
				t.Errorf("the read's normalisation is not recorded: %+v", inv)
			}
			rep := payloads[contracts.ReportComposed](r, contracts.KindReportComposed)[0]
			for _, want := range []string{
				"claims sent as a JSON string",
				"evidence 1.1 sent as a bare id",
				`evidence 2.1: "id" read as "correlationId"`,
				"evidence 2.1 sent without a source",
				`evidence 3.1: "id" read as "correlationId"`,
			} {
				if !slices.Contains(rep.Normalised, want) {
					t.Errorf("report normalisation %q lacks %q", rep.Normalised, want)
				}
			}
			for i, c := range rep.Claims {
				if len(c.Evidence) != 1 || c.Evidence[0].Source != contracts.EvidenceArtifact || c.Evidence[0].CorrelationID == "" {
					t.Errorf("claim %d recorded with evidence %+v", i+1, c.Evidence)
				}
			}
		},
	},
	{
		// Cites an id it made up, is refused, cites it again, and only then
		// picks one from the refusal's list of what this run can cite.
		name:      "repeats a refused citation",
		objective: "How many customers does the shop have?",
		play: func(req modeltest.ChatRequest) modeltest.Reply {
			if req.AssistantTurns() == 0 {
				return evalRead("SELECT COUNT(*) AS n FROM customers", "count the customers")
			}
			refused := 0
			for _, m := range req.ToolMessages() {
				if strings.HasPrefix(m.Content, "Refused (unresolved_evidence)") {
					refused++
				}
			}
			if refused < 2 {
				return evalReport(evalClaim{"The shop has customers.", []string{artifactJSON("c_1")}})
			}
			for _, m := range evalCitable.FindAllStringSubmatch(lastResult(req), -1) {
				if n, _ := strconv.Atoi(m[3]); n > 0 {
					return evalReport(evalClaim{"The shop has customers.", []string{artifactJSON(m[1])}})
				}
			}
			return modeltest.Reply{Text: "The refusal listed nothing I could cite."}
		},
		check: func(t *testing.T, r evalRun) {
			refs := payloads[contracts.ToolRefused](r, contracts.KindToolRefused)
			if len(refs) != 2 {
				t.Fatalf("%d refusals, want the two of the repeated citation", len(refs))
			}
			for _, f := range refs {
				if f.Code != "unresolved_evidence" || !strings.Contains(f.Reason, `"c_1"`) ||
					!strings.Contains(f.Content, "Citable in this run: r1 (run_read_query, 1 row), schema (the schema snapshot: structure only).") {
					t.Errorf("refusal %s: %q", f.Code, f.Content)
				}
			}
			if r.rec.Spent.Turns != 4 {
				t.Errorf("turns %d, want 4: read, refused, refused again, cited from the list", r.rec.Spent.Turns)
			}
		},
	},
	{
		// Explores before answering: lists the tables, describes the one
		// it needs, reads with the columns it found, then reports.
		name:      "explores before answering",
		objective: "How much revenue did the shop make per month?",
		play: func(req modeltest.ChatRequest) modeltest.Reply {
			last := lastResult(req)
			switch req.AssistantTurns() {
			case 0:
				return evalCall("inspect_schema", `{}`)
			case 1:
				if !strings.Contains(last, "orders") {
					return modeltest.Reply{Text: "The listing names no orders table."}
				}
				return evalCall("inspect_schema", `{"table":"orders"}`)
			case 2:
				if !strings.Contains(last, "ordered_at") || !strings.Contains(last, "total_cents") {
					return modeltest.Reply{Text: "The description shows no date or amount."}
				}
				return evalRead("SELECT strftime('%Y-%m', ordered_at) AS month, SUM(total_cents) AS revenue_cents FROM orders "+
					"WHERE status = 'paid' GROUP BY month ORDER BY month", "revenue of paid orders per month")
			}
			var refs []string
			for _, m := range req.ToolMessages()[1:] { // the description and the reading
				for _, c := range toldIn(m.Content) {
					refs = append(refs, c.raw)
				}
			}
			return evalReport(evalClaim{"Revenue per month of paid orders, from orders.total_cents.", refs})
		},
		check: func(t *testing.T, r evalRun) {
			var tools []string
			for _, st := range dbSteps(r) {
				tools = append(tools, st.Tool)
				if st.Status != contracts.StepCompleted {
					t.Errorf("step %s %s: %s", st.Tool, st.StepID, st.Status)
				}
			}
			if strings.Join(tools, ",") != "inspect_schema,inspect_schema,run_read_query" {
				t.Errorf("steps %v, want list, describe, read", tools)
			}
			if c := toolContents(r); len(c) < 2 || !strings.Contains(c[0], "order_items") || !strings.Contains(c[1], "customer_id") {
				t.Errorf("the listing or the description lacks the shop's tables and columns: %q", c)
			}
		},
	},
	{
		// Answers "nothing matches" honestly, as the rules say: cites the
		// empty reading together with one that shows what does exist.
		name:      "honest nothing matches",
		objective: "How many orders were lost in transit?",
		play: func(req modeltest.ChatRequest) modeltest.Reply {
			switch req.AssistantTurns() {
			case 0:
				return evalRead("SELECT id, total_cents FROM orders WHERE status = 'lost_in_transit'", "orders lost in transit")
			case 1:
				if c := toldIn(lastResult(req)); len(c) != 1 || c[0].rows != 0 {
					return modeltest.Reply{Text: "Expected an empty result."}
				}
				return evalRead("SELECT status, COUNT(*) AS orders FROM orders GROUP BY status", "the statuses that do exist")
			}
			var refs []string
			for _, m := range req.ToolMessages() {
				for _, c := range toldIn(m.Content) {
					refs = append(refs, c.raw)
				}
			}
			return evalReport(evalClaim{"No order has the status lost_in_transit; the statuses that exist are paid, pending, refunded and cancelled.", refs})
		},
		check: func(t *testing.T, r evalRun) {
			if !strings.Contains(r.reqs[0].Messages[0].Content, "If nothing matches, say so and cite the reading that shows it together with one that shows what does exist.") {
				t.Error("the rules no longer say how to report that nothing matches")
			}
			var rows []int
			for _, st := range dbSteps(r) {
				if st.Artifact != nil {
					rows = append(rows, st.Artifact.Rows)
				}
			}
			if len(rows) != 2 || rows[0] != 0 || rows[1] == 0 {
				t.Errorf("rows per reading %v, want an empty reading then a non-empty one", rows)
			}
			rep := payloads[contracts.ReportComposed](r, contracts.KindReportComposed)[0]
			if len(rep.Claims) != 1 || len(rep.Claims[0].Evidence) != 2 {
				t.Errorf("the claim cites %+v, want both readings", rep.Claims)
			}
		},
	},
	{
		// Writes T-SQL on SQLite, reads what came back, corrects it to the
		// dialect the rules name and reports.
		name:      "dialect-foreign SQL",
		objective: "Show five order ids.",
		play: func(req modeltest.ChatRequest) modeltest.Reply {
			switch req.AssistantTurns() {
			case 0:
				return evalRead("SELECT TOP 5 id FROM orders", "five order ids")
			case 1:
				last := lastResult(req)
				if !strings.HasPrefix(last, "Refused (") && !strings.HasPrefix(last, "The database failed") {
					return modeltest.Reply{Text: "TOP was accepted; nothing to correct."}
				}
				if !strings.Contains(req.Messages[0].Content, "LIMIT n, not TOP") {
					return modeltest.Reply{Text: "Nothing tells me how this engine limits rows."}
				}
				return evalRead("SELECT id FROM orders ORDER BY id LIMIT 5", "five order ids, in SQLite")
			}
			return evalReport(evalClaim{"Five order ids, read with LIMIT.", []string{toldIn(lastResult(req))[0].raw}})
		},
		check: func(t *testing.T, r evalRun) {
			if r.rec.Spent.Turns != 3 {
				t.Errorf("turns %d, want 3: TOP, the correction, the report", r.rec.Spent.Turns)
			}
			c := toolContents(r)
			if len(c) != 2 {
				t.Fatalf("results %q, want two", c)
			}
			failed := strings.HasPrefix(c[0], "The database failed")
			if !failed && !strings.HasPrefix(c[0], "Refused (") {
				t.Errorf("TOP on SQLite came back as %q", c[0])
			}
			wantRepairs := 0
			if failed {
				wantRepairs = 1
			}
			// What came back of TOP already counts its cost, and so does the
			// correction's result.
			for _, text := range c {
				m := evalStatusLine.FindStringSubmatch(text)
				if r.rec.Spent.Repairs != wantRepairs || m == nil || m[5] != strconv.Itoa(r.rec.Budget.MaxRepairs-wantRepairs) {
					t.Errorf("repairs spent %d, status line %q: a refusal costs no repair, a failure one", r.rec.Spent.Repairs, m)
				}
			}
			if st := dbSteps(r); len(st) != 2 || st[1].Status != contracts.StepCompleted {
				t.Errorf("the corrected statement did not complete: %+v", st)
			}
		},
	},
	{
		// Keeps reading, a different statement each turn, until it is told
		// to report, then reports: on a tuned limit of 8 turns it is asked
		// with 2 turns left and reports on turn 7.
		name:      "long runner",
		objective: "Tell me everything about the shop.",
		tuned:     true,
		play: func(req modeltest.ChatRequest) modeltest.Reply {
			if n := evalNotice(req); strings.Contains(n, "compose_report") {
				var refs []string
				for _, m := range req.ToolMessages() {
					for _, c := range toldIn(m.Content) {
						if c.rows > 0 {
							refs = append(refs, c.raw)
						}
					}
				}
				return evalReport(evalClaim{"The shop's tables hold customers, products, orders, items and payments.", refs})
			}
			reads := []string{
				"SELECT COUNT(*) AS n FROM customers",
				"SELECT COUNT(*) AS n FROM products",
				"SELECT COUNT(*) AS n FROM orders",
				"SELECT COUNT(*) AS n FROM order_items",
				"SELECT COUNT(*) AS n FROM payments",
				"SELECT status, COUNT(*) AS n FROM orders GROUP BY status",
				"SELECT method, COUNT(*) AS n FROM payments GROUP BY method",
				"SELECT country, COUNT(*) AS n FROM customers GROUP BY country",
				"SELECT status, COUNT(*) AS n FROM payments GROUP BY status",
				"SELECT strftime('%Y', ordered_at) AS year, COUNT(*) AS n FROM orders GROUP BY year",
			}
			i := req.AssistantTurns()
			return evalRead(reads[i%len(reads)], "one more look")
		},
		check: func(t *testing.T, r evalRun) {
			if !strings.Contains(r.reqs[0].Messages[0].Content, fmt.Sprintf("%d model turns", evalTurnLimit)) {
				t.Errorf("the rules do not state the tuned limit of %d turns", evalTurnLimit)
			}
			want := evalTurnLimit - 1 // asked with 2 turns left, this one included
			if r.rec.Spent.Turns != want || len(dbSteps(r)) != want-1 {
				t.Errorf("turns %d readings %d, want %d and %d", r.rec.Spent.Turns, len(dbSteps(r)), want, want-1)
			}
			for i, req := range r.reqs {
				n := evalNotice(req)
				switch {
				case i == len(r.reqs)-1:
					if !strings.HasPrefix(n, "You have 2 model turns left, this one included: call compose_report now") {
						t.Errorf("the report was asked for with %q", n)
					}
				case n != "":
					t.Errorf("turn %d carried a notice before the reserve: %q", i+1, n)
				}
			}
		},
	},
}

// TestModelBehaviours runs every scenario evalRunsPerScenario times over
// each vendor's real SDK and wire format (openai-go, anthropic-sdk-go,
// genai, ollama's api: stacktest.Vendors), the vendors of one scenario in
// parallel, each vendor on stacks of its own started once. It logs the
// Markdown tables docs/evals.md shows: the answer rate per scenario and
// vendor, per vendor, per workflow, and the scenarios that end their own
// way on purpose (want: unanswered, or a planning repair) with the ending
// they earned.
//
// Run one scenario on every vendor with -run 'TestModelBehaviours/<name>',
// on one vendor with -run 'TestModelBehaviours/<name>/<vendor>'.
func TestModelBehaviours(t *testing.T) {
	// Every run's objective is tagged with its scenario and ordinal; the
	// map is filled before the script can be called.
	byObjective := map[string]*evalScenario{}
	tag := func(sc *evalScenario, i int) string { return fmt.Sprintf("[eval %s #%d]", sc.name, i) }
	for si := range evalScenarios {
		for i := 1; i <= evalRunsPerScenario; i++ {
			byObjective[tag(&evalScenarios[si], i)] = &evalScenarios[si]
		}
	}
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if len(req.Messages) < 2 {
			return modeltest.Reply{Text: "no objective"}, nil
		}
		objective := strings.TrimPrefix(req.Messages[1].Content, "Objective: ")
		for key, sc := range byObjective {
			if strings.HasPrefix(objective, key) {
				return sc.play(req), nil
			}
		}
		return modeltest.Reply{Text: "no scenario for " + objective}, nil
	})
	vendors := stacktest.Vendors
	type stacks struct{ plain, tuned *stacktest.Stack }
	started := make([]stacks, len(vendors))
	needTuned := slices.ContainsFunc(evalScenarios, func(sc evalScenario) bool { return sc.tuned })
	tuning := tuningFile(t, fmt.Sprintf(`{"version":1,"models":{"scripted":{"turnLimit":%d}}}`, evalTurnLimit))
	for vi, v := range vendors {
		started[vi].plain = stacktest.Start(t, stacktest.Options{Script: script, Vendor: v})
		if needTuned {
			started[vi].tuned = stacktest.Start(t, stacktest.Options{Script: script, Vendor: v, ModelTuningPath: tuning})
		}
	}

	// tallies[vendor][scenario] is written by that pair's subtest alone.
	tallies := make([][]evalTally, len(vendors))
	for vi := range tallies {
		tallies[vi] = make([]evalTally, len(evalScenarios))
	}
	for si := range evalScenarios {
		sc := &evalScenarios[si]
		t.Run(sc.name, func(t *testing.T) {
			for vi, vendor := range vendors {
				t.Run(vendor, func(t *testing.T) {
					t.Parallel()
					s := started[vi].plain
					if sc.tuned {
						s = started[vi].tuned
					}
					evalScenarioRuns(t, s, sc, vendor, tag, &tallies[vi][si])
				})
			}
		})
	}
	t.Log(evalTables(vendors, tallies))
}

// evalTally is what the runs of one scenario on one vendor came to.
type evalTally struct {
	ran int
	// answered counts the runs that answered; for a scenario that must end
	// unanswered, the runs that ended the way it wants.
	answered          int
	turns, statements []int
}

// evalScenarioRuns runs one scenario evalRunsPerScenario times on one
// vendor's stack and tallies the runs.
func evalScenarioRuns(t *testing.T, s *stacktest.Stack, sc *evalScenario, vendor string, tag func(*evalScenario, int) string, tl *evalTally) {
	c := s.Client("")
	for i := 1; i <= evalRunsPerScenario; i++ {
		objective := tag(sc, i) + " " + sc.objective
		started, err := c.StartRun(t.Context(), api.StartRunRequest{Objective: objective, ConnectionID: "demo", WorkflowType: sc.workflow, Mode: sc.mode})
		if err != nil {
			t.Fatal(err)
		}
		es := stacktest.Follow(t, c, started.RunID)
		r := evalRun{es: es, rec: ledger.Fold(started.RunID, es), vendor: vendor}
		for _, req := range modelRequests(s) {
			if len(req.Messages) > 1 && strings.Contains(req.Messages[1].Content, objective) {
				r.reqs = append(r.reqs, req)
			}
		}
		tl.ran++
		tl.turns = append(tl.turns, r.rec.Spent.Turns)
		tl.statements = append(tl.statements, r.rec.Spent.Statements)
		if sc.want != nil {
			if evalEnded(t, r, i, *sc.want) {
				tl.answered++
				sc.check(t, r)
			}
			continue
		}
		if evalAnswered(t, r, i) {
			tl.answered++
			sc.check(t, r)
		}
	}
}

// evalTables renders the tallies as docs/evals.md shows them: the scenarios
// that must answer, per vendor; the answer rate per vendor and per
// workflow; and the scenarios that end unanswered on purpose, with their
// ending.
func evalTables(vendors []string, tallies [][]evalTally) string {
	var b strings.Builder
	rate := func(n, of int) string {
		if of == 0 {
			return "–"
		}
		return fmt.Sprintf("%d/%d (%d %%)", n, of, 100*n/of)
	}
	header := func(first ...string) {
		cols := append(first, vendors...)
		b.WriteString("\n| " + strings.Join(cols, " | ") + " | Median turns | Median statements |\n")
		b.WriteString(strings.Repeat("|---", len(cols)+2) + "|\n")
	}
	row := func(si int, first ...string) {
		var turns, statements []int
		cells := first
		for vi := range vendors {
			tl := tallies[vi][si]
			cells = append(cells, rate(tl.answered, tl.ran))
			turns, statements = append(turns, tl.turns...), append(statements, tl.statements...)
		}
		if len(turns) == 0 {
			return
		}
		fmt.Fprintf(&b, "| %s | %d | %d |\n", strings.Join(cells, " | "), median(turns), median(statements))
	}
	workflow := func(sc evalScenario) string {
		w := string(sc.workflow)
		if w == "" {
			w = string(contracts.WorkflowInvestigation)
		}
		if sc.mode != "" {
			w += " (" + string(sc.mode) + ")"
		}
		return w
	}

	b.WriteString("\nAnswered, per scenario and vendor:\n")
	header("Scenario", "Workflow")
	for si, sc := range evalScenarios {
		if sc.want == nil {
			row(si, sc.name, workflow(sc))
		}
	}

	b.WriteString("\nAnswer rate per vendor (the scenarios that must answer):\n\n| Vendor | Runs | Answered | Answer rate |\n|---|---|---|---|\n")
	for vi, v := range vendors {
		n, of := 0, 0
		for si, sc := range evalScenarios {
			if sc.want == nil {
				n, of = n+tallies[vi][si].answered, of+tallies[vi][si].ran
			}
		}
		if of > 0 {
			fmt.Fprintf(&b, "| %s | %d | %d | %d %% |\n", v, of, n, 100*n/of)
		}
	}

	b.WriteString("\nAnswer rate per workflow (every vendor):\n\n| Workflow | Runs | Answered | Answer rate |\n|---|---|---|---|\n")
	var flows []string
	for _, sc := range evalScenarios {
		if w := workflow(sc); sc.want == nil && !slices.Contains(flows, w) {
			flows = append(flows, w)
		}
	}
	for _, w := range flows {
		n, of := 0, 0
		for si, sc := range evalScenarios {
			if sc.want == nil && workflow(sc) == w {
				for vi := range vendors {
					n, of = n+tallies[vi][si].answered, of+tallies[vi][si].ran
				}
			}
		}
		if of > 0 {
			fmt.Fprintf(&b, "| %s | %d | %d | %d %% |\n", w, of, n, 100*n/of)
		}
	}

	b.WriteString("\nEnding on purpose (want: the habits that must not simply answer) — runs that ended as intended, per vendor:\n")
	header("Scenario", "Workflow", "Ending (stop · outcome · unmet)")
	for si, sc := range evalScenarios {
		if w := sc.want; w != nil {
			ending := string(w.stop) + " · " + string(w.outcome)
			if w.unmet != "" {
				ending += " · " + w.unmet
			}
			row(si, sc.name, workflow(sc), ending)
		}
	}
	return b.String()
}

// evalAnswered checks that run i ended answered within its budget, and that
// every tool result the model read ended with a true status line.
// evalEnded checks a run that must end the way want says.
func evalEnded(t *testing.T, r evalRun, i int, want evalEnding) bool {
	t.Helper()
	rec := r.rec
	ok := rec.StopReason == want.stop
	v := rec.GoalVerdict
	ok = ok && v != nil && v.Outcome == want.outcome
	ok = ok && (want.unmet == "" || slices.Contains(v.Unmet, want.unmet))
	if !ok {
		t.Errorf("run %d: stop %s verdict %+v, want stop %s outcome %s unmet %q: %v", i, rec.StopReason, v, want.stop, want.outcome, want.unmet, kinds(r.es))
	}
	return ok
}

func evalAnswered(t *testing.T, r evalRun, i int) bool {
	t.Helper()
	ok := true
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("run %d: "+format, append([]any{i}, args...)...)
		ok = false
	}
	rec := r.rec
	if rec.Status != contracts.StatusSucceeded || rec.StopReason != contracts.StopReportComposed {
		fail("status %s stop %s: %v", rec.Status, rec.StopReason, kinds(r.es))
	}
	if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered || rec.WorkflowType == contracts.WorkflowInvestigation && v.Rule != "agent-investigation.2" {
		fail("verdict %+v", v)
	}
	limit := rec.Budget.MaxTurns
	for _, d := range payloads[contracts.DriverResolved](r, contracts.KindDriverResolved) {
		if d.Settings != nil && d.Settings.TurnLimit > 0 && d.Settings.TurnLimit < limit {
			limit = d.Settings.TurnLimit
		}
	}
	if rec.Spent.Turns > limit || rec.Spent.Statements > rec.Budget.MaxStatements || rec.Spent.Repairs > rec.Budget.MaxRepairs {
		fail("spent %+v over the budget (turn limit %d)", rec.Spent, limit)
	}
	if len(r.reqs) != rec.Spent.Turns {
		fail("%d model requests for %d turns", len(r.reqs), rec.Spent.Turns)
	}
	// Each result read on turn n says "turn n/limit".
	if len(r.reqs) > 0 {
		turn := 0
		for _, m := range r.reqs[len(r.reqs)-1].Messages {
			switch m.Role {
			case "assistant":
				turn++
			case "tool":
				s := evalStatusLine.FindStringSubmatch(m.Content)
				if s == nil || s[1] != strconv.Itoa(turn) || s[2] != strconv.Itoa(limit) {
					fail("a result of turn %d ends %q, want [turn %d/%d …]", turn, tail(m.Content), turn, limit)
				}
			}
		}
	}
	return ok
}

func tail(s string) string {
	if len(s) > 120 {
		return "…" + s[len(s)-120:]
	}
	return s
}

func median(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}
