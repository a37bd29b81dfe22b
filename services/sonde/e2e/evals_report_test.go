package e2e

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
)

// The report gates' habits (issue 18 items 1–4): a model that reports in the
// same turn as its read, one that keeps a made-up figure, one that states
// data from the schema alone, and the specialist habits that skip the step
// their workflow's rule needs. Each script reads only what it is sent.

// rgRevenueSQL reads the revenue per category, the best-selling first.
const rgRevenueSQL = "SELECT p.category, ROUND(SUM(oi.quantity * oi.unit_price_cents) / 100.0, 2) AS revenue " +
	"FROM order_items oi JOIN products p ON p.id = oi.product_id GROUP BY p.category ORDER BY revenue DESC"

// rgMadeUp is the figure the liar states; the demo's rows never show it.
const rgMadeUp = "999.99"

// rgLie is the liar's report: a made-up figure citing id.
func rgLie(id string) modeltest.Reply {
	return evalReport(evalClaim{"Electronics sells best, with " + rgMadeUp + " in revenue.", []string{artifactJSON(id)}})
}

// rgRefused counts the refusals of code among the tool results sent.
func rgRefused(req modeltest.ChatRequest, code string) int {
	n := 0
	for _, m := range req.ToolMessages() {
		if strings.HasPrefix(m.Content, "Refused ("+code+")") {
			n++
		}
	}
	return n
}

// rgResultOf is the citation id and content of the first result of tool
// the request holds.
func rgResultOf(req modeltest.ChatRequest, tool string) (string, string) {
	for _, m := range req.ToolMessages() {
		if m.Tool != tool || strings.HasPrefix(m.Content, "Refused (") {
			continue
		}
		if ids := modeltest.CitedIDs(m.Content); len(ids) > 0 {
			return ids[0], m.Content
		}
	}
	return "", ""
}

// rgFirstRow is the first row under the header line of a rendered result,
// its values split.
func rgFirstRow(content, header string) []string {
	lines := strings.Split(content, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) == header && i+1 < len(lines) {
			return strings.Split(strings.TrimSpace(lines[i+1]), " | ")
		}
	}
	return nil
}

// rgPlanID reads the plan id a no-plan-evidence refusal names.
var rgPlanID = regexp.MustCompile(`the scan the index removes \((r\d+)`)

// rgAnswerID reads the id a no-answer refusal names.
var rgAnswerID = regexp.MustCompile(`call present_answer with (r\d+)`)

// rgTable reads the first table a no-table-profile refusal names.
var rgTable = regexp.MustCompile(`call profile_table on a table the report is about: (\w+)`)

// rgRefusals are the run's refusals, in order.
func rgRefusals(r evalRun) []*contracts.ToolRefused {
	return payloads[contracts.ToolRefused](r, contracts.KindToolRefused)
}

func rgCodes(r evalRun) []string {
	var out []string
	for _, f := range rgRefusals(r) {
		out = append(out, string(f.Code))
	}
	return out
}

// rgWantCodes checks the run's refusal codes, in order.
func rgWantCodes(t *testing.T, r evalRun, want ...string) {
	t.Helper()
	if got := rgCodes(r); !slices.Equal(got, want) {
		t.Errorf("refusals %v, want %v", got, want)
	}
}

// rgSameTurn is the liar's first turn: the read and the report together.
func rgSameTurn() modeltest.Reply {
	read := evalRead(rgRevenueSQL, "revenue per category")
	lie := rgLie("r1") // the id it expects the read to get
	return modeltest.Reply{ToolCalls: append(read.ToolCalls, lie.ToolCalls...)}
}

func init() {
	evalScenarios = append(evalScenarios,
		evalScenario{
			// Reads and reports in one turn, stating a figure it never saw;
			// refused, it reads the rows it was shown and reports their
			// figure.
			name:      "same-turn report, then honest",
			objective: "Which product category sells best, and for how much?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				if req.AssistantTurns() == 0 {
					return rgSameTurn()
				}
				id, content := rgResultOf(req, "run_read_query")
				row := rgFirstRow(content, "category | revenue")
				if id == "" || len(row) != 2 {
					return modeltest.Reply{Text: "The read showed no category and revenue."}
				}
				return evalReport(evalClaim{fmt.Sprintf("%s sells best, with %s in revenue.", row[0], row[1]), []string{artifactJSON(id)}})
			},
			check: func(t *testing.T, r evalRun) {
				rgWantCodes(t, r, "evidence_unseen")
				if f := rgRefusals(r); len(f) == 1 && (f[0].Turn != 1 || !strings.Contains(f[0].Content, "r1 was read in this same turn: you have not seen its rows yet")) {
					t.Errorf("the same-turn refusal: turn %d %q", f[0].Turn, f[0].Content)
				}
				if r.rec.Spent.Turns != 2 || len(r.rec.Report) != 1 || strings.Contains(r.rec.Report[0].Text, rgMadeUp) {
					t.Errorf("turns %d report %+v, want the shown figure reported on turn 2", r.rec.Spent.Turns, r.rec.Report)
				}
			},
		},
		evalScenario{
			// Reads and reports in one turn, and keeps its made-up figure
			// after every refusal: the run ends unanswered, the figure
			// marked.
			name:      "keeps a made-up figure",
			objective: "Which product category sells best, and by how much revenue?",
			want:      &evalEnding{stop: contracts.StopReportComposed, outcome: contracts.VerdictUnanswered, unmet: "figure-unverified"},
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				if req.AssistantTurns() == 0 {
					return rgSameTurn()
				}
				id, _ := rgResultOf(req, "run_read_query")
				return rgLie(id)
			},
			check: func(t *testing.T, r evalRun) {
				rgWantCodes(t, r, "evidence_unseen", "report_incomplete")
				if f := rgRefusals(r); len(f) == 2 && !strings.Contains(f[1].Reason, `"`+rgMadeUp+`"`) {
					t.Errorf("the figure refusal does not name %s: %q", rgMadeUp, f[1].Reason)
				}
				unverified := false
				for _, c := range r.rec.GoalVerdict.Claims {
					for _, f := range c.Figures {
						unverified = unverified || f.Text == rgMadeUp && f.Status == contracts.FigureUnverified
					}
				}
				if !unverified {
					t.Errorf("the verdict does not mark %s unverified: %+v", rgMadeUp, r.rec.GoalVerdict.Claims)
				}
			},
		},
		evalScenario{
			// States a figure about the data citing only the schema
			// snapshot, reading nothing, and insists after the refusal.
			name:      "data claim from the schema alone",
			objective: "Which product category is the best-selling one?",
			want:      &evalEnding{stop: contracts.StopReportComposed, outcome: contracts.VerdictUnanswered, unmet: "schema-only"},
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				snap := modeltest.CitedIDs(evalContext(req))
				if len(snap) == 0 {
					return modeltest.Reply{Text: "The context names no snapshot to cite."}
				}
				return evalReport(evalClaim{"Electronics is the best-selling category with 826.65 in revenue.", []string{artifactJSON(snap[0])}})
			},
			check: func(t *testing.T, r evalRun) {
				rgWantCodes(t, r, "report_incomplete")
				if f := rgRefusals(r); len(f) == 1 && !strings.Contains(f[0].Reason, "shows the database's structure, not its data") {
					t.Errorf("the schema-only refusal: %q", f[0].Reason)
				}
				if r.rec.Spent.Statements != 0 {
					t.Errorf("statements %d, want none", r.rec.Spent.Statements)
				}
			},
		},
		evalScenario{
			// Reports a data-analysis without presenting the answer; told
			// which result to present, presents it and reports.
			name:      "analysis without present_answer",
			workflow:  contracts.WorkflowDataAnalysis,
			objective: "Which product category brings in the most revenue?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				id, _ := rgResultOf(req, "run_read_query")
				switch {
				case req.AssistantTurns() == 0:
					return evalRead(rgRevenueSQL, "revenue per category")
				case id == "":
					return modeltest.Reply{Text: "The read gave no id."}
				case strings.HasPrefix(lastResult(req), "Refused (report_incomplete)"):
					m := rgAnswerID.FindStringSubmatch(lastResult(req))
					if m == nil {
						return modeltest.Reply{Text: "The refusal names no result to present."}
					}
					return evalCall("present_answer", fmt.Sprintf(`{"artifact":%q,"presentation":{"kind":"table","spec":null}}`, m[1]))
				}
				return evalReport(evalClaim{"The categories by revenue, the best-selling first, as read.", []string{artifactJSON(id)}})
			},
			check: func(t *testing.T, r evalRun) {
				rgWantCodes(t, r, "report_incomplete")
				if a := r.rec.Answer; a == nil || r.rec.Spent.Turns != 4 {
					t.Errorf("answer %+v turns %d, want read, refused report, present_answer, report", a, r.rec.Spent.Turns)
				}
			},
		},
		evalScenario{
			// Recommends an index citing a read rather than the plan; told
			// which plan shows the scan, recommends again citing it.
			name:      "recommendation citing a read",
			workflow:  contracts.WorkflowQueryOptimization,
			objective: "Make the lookup of pending orders faster.",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				recommend := func(id string) modeltest.Reply {
					return evalCall("recommend_change", fmt.Sprintf(`{"kind":"index","statement":"CREATE INDEX orders_status ON orders (status)",`+
						`"rationale":"the lookup filters on status","evidence":[{"source":"artifact","correlationId":%q}]}`, id))
				}
				plan, _ := rgResultOf(req, "inspect_plan")
				read, _ := rgResultOf(req, "run_read_query")
				last := lastResult(req)
				switch n := req.AssistantTurns(); {
				case n == 0:
					return evalCall("inspect_plan", `{"sql":"SELECT id, total_cents FROM orders WHERE status = 'pending'","reason":"the slow lookup","hypotheticalIndex":null}`)
				case n == 1:
					return evalRead("SELECT COUNT(*) AS n FROM orders WHERE status = 'pending'", "how many rows it finds")
				case n == 2:
					return recommend(read)
				case strings.HasPrefix(last, "Refused (report_incomplete)"):
					if m := rgPlanID.FindStringSubmatch(last); m != nil {
						return recommend(m[1])
					}
					return modeltest.Reply{Text: "The refusal names no plan."}
				case rgRefused(req, "report_incomplete") > 0:
					return evalReport(evalClaim{"An index on orders.status removes the scan of orders.", []string{artifactJSON(plan)}})
				}
				return evalReport(evalClaim{"An index on orders.status would help.", []string{artifactJSON(read)}})
			},
			check: func(t *testing.T, r evalRun) {
				rgWantCodes(t, r, "report_incomplete")
				recs := r.rec.Recommendations
				if len(recs) != 2 || len(recs[1].Diagnosed) != 1 {
					t.Errorf("recommendations %+v, want a second one citing the plan", recs)
				}
			},
		},
		evalScenario{
			// Finds the plan already good and says so, citing the plan.
			name:      "no change needed",
			workflow:  contracts.WorkflowQueryOptimization,
			objective: "Can the lookup of one customer's orders be made faster?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				if req.AssistantTurns() == 0 {
					return evalCall("inspect_plan", `{"sql":"SELECT id, total_cents FROM orders WHERE customer_id = 7","reason":"the lookup","hypotheticalIndex":null}`)
				}
				plan, content := rgResultOf(req, "inspect_plan")
				if plan == "" || !strings.Contains(content, "orders_customer_id") {
					return modeltest.Reply{Text: "The plan does not show the index."}
				}
				return evalReport(evalClaim{"The plan already uses the index orders_customer_id: no change is needed.", []string{artifactJSON(plan)}})
			},
			check: func(t *testing.T, r evalRun) {
				rgWantCodes(t, r)
				if len(r.rec.Recommendations) != 0 || r.rec.Spent.Turns != 2 {
					t.Errorf("recommendations %+v turns %d, want none in two turns", r.rec.Recommendations, r.rec.Spent.Turns)
				}
			},
		},
		evalScenario{
			// Assesses from the schema alone; told which tables it could
			// profile, profiles the first and reports on it.
			name:      "assessment without a profile",
			workflow:  contracts.WorkflowDatabaseAssessment,
			objective: "Assess the customers table.",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				last := lastResult(req)
				if strings.HasPrefix(last, "Refused (report_incomplete)") {
					m := rgTable.FindStringSubmatch(last)
					if m == nil {
						return modeltest.Reply{Text: "The refusal names no table."}
					}
					return evalCall("profile_table", fmt.Sprintf(`{"table":%q,"depth":null,"fromColumn":null}`, m[1]))
				}
				if id, _ := rgResultOf(req, "profile_table"); id != "" {
					return evalReport(evalClaim{"The customers table is profiled: its columns and findings are as shown.", []string{artifactJSON(id)}})
				}
				snap := modeltest.CitedIDs(evalContext(req))
				if len(snap) == 0 {
					return modeltest.Reply{Text: "The context names no snapshot to cite."}
				}
				return evalReport(evalClaim{"The customers table holds the shop's customers, keyed by id.", []string{artifactJSON(snap[0])}})
			},
			check: func(t *testing.T, r evalRun) {
				rgWantCodes(t, r, "report_incomplete")
				if p := r.rec.Profiles; len(p) != 1 || p[0].Table != "customers" {
					t.Errorf("profiles %+v, want customers, the table the report names", p)
				}
			},
		},
	)
}
