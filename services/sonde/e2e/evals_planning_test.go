package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
)

// Planning-mode habits (issue 18, item 11): a planner that drafts what the
// guard refuses is shown the refusal once and may draft again. A planning
// run ends with stop reason model-stopped, never report-composed, so even
// the answered scenarios state their ending in want.

// evalSQLBlock is the body of a fenced block in a model's answer.
var evalSQLBlock = regexp.MustCompile("(?s)```[A-Za-z0-9-]*\n(.*?)\n```")

// planDrafts are a run's drafted statements, in order.
func planDrafts(r evalRun) []*contracts.PlanStatementDrafted {
	return payloads[contracts.PlanStatementDrafted](r, contracts.KindPlanStatementDrafted)
}

// evalPlanRepair is the repair notice the run's second turn carried, or "".
func evalPlanRepair(r evalRun) string {
	if len(r.reqs) < 2 {
		return ""
	}
	return evalNotice(r.reqs[1])
}

func init() {
	evalScenarios = append(evalScenarios,
		evalScenario{
			// Drafts the write the user asked for, reads the guard's refusal,
			// then hands over the read that counts what it would remove.
			name:      "planner repairs a write",
			objective: "Clean out the orders whose total is zero.",
			mode:      contracts.ModePlanning,
			want:      &evalEnding{stop: contracts.StopModelStopped, outcome: contracts.VerdictAnswered},
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				if req.AssistantTurns() > 0 && strings.Contains(evalNotice(req), "Refused (not_a_select)") {
					return modeltest.Reply{Text: "```sqlite\nSELECT COUNT(*) AS zero_total_orders FROM orders WHERE total_cents = 0\n```\nThis counts the orders you would remove; the deletion is yours to run."}
				}
				return modeltest.Reply{Text: "```sqlite\nDELETE FROM orders WHERE total_cents = 0\n```\nThis removes them."}
			},
			check: func(t *testing.T, r evalRun) {
				ds := planDrafts(r)
				if len(ds) != 2 || ds[0].Refusal == nil || ds[0].Refusal.Code != contracts.RefuseNotASelect || !ds[1].ReadOnly {
					t.Errorf("drafts %+v: a refused write, then a read", ds)
				}
				if n := evalPlanRepair(r); !strings.Contains(n, "Fix: ") {
					t.Errorf("the repair turn carries no fix: %q", n)
				}
			},
		},
		evalScenario{
			// Writes SQL Server's TOP on the demo SQLite database, fenced as
			// plain sql; reads the refusal and the dialect hints, and follows
			// them.
			name:      "planner writes TOP",
			objective: "Which five customers signed up first?",
			mode:      contracts.ModePlanning,
			want:      &evalEnding{stop: contracts.StopModelStopped, outcome: contracts.VerdictAnswered},
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				if req.AssistantTurns() > 0 && strings.Contains(evalNotice(req), "LIMIT n, not TOP") {
					prev := evalSQLBlock.FindStringSubmatch(req.Messages[len(req.Messages)-2].Content)
					if prev != nil {
						fixed := strings.Replace(prev[1], "TOP 5 ", "", 1) + " LIMIT 5"
						return modeltest.Reply{Text: "```sqlite\n" + fixed + "\n```"}
					}
				}
				return modeltest.Reply{Text: "```sql\nSELECT TOP 5 name, signup_date FROM customers ORDER BY signup_date\n```"}
			},
			check: func(t *testing.T, r evalRun) {
				ds := planDrafts(r)
				if len(ds) != 2 || ds[0].Refusal == nil || !ds[1].ReadOnly || !strings.HasSuffix(ds[1].SQL, "LIMIT 5") {
					t.Errorf("drafts %+v: TOP refused on SQLite, then LIMIT", ds)
				}
			},
		},
		evalScenario{
			// Insists on the DELETE whatever it is told: the run ends after
			// the one repair turn, unanswered, and the write never runs.
			name:      "planner insists on DELETE",
			objective: "Delete the cancelled orders.",
			mode:      contracts.ModePlanning,
			want:      &evalEnding{stop: contracts.StopModelStopped, outcome: contracts.VerdictUnanswered, unmet: "plan-refused"},
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				return modeltest.Reply{Text: "```sqlite\nDELETE FROM orders WHERE status = 'cancelled'\n```\nRun this."}
			},
			check: func(t *testing.T, r evalRun) {
				if len(r.reqs) != 2 || len(planDrafts(r)) != 2 {
					t.Errorf("%d turns, %d drafts: one repair turn, no more", len(r.reqs), len(planDrafts(r)))
				}
				if !strings.Contains(evalPlanRepair(r), "Refused (not_a_select)") {
					t.Errorf("the repair turn did not show the refusal: %q", evalPlanRepair(r))
				}
				if len(dbSteps(r)) != 0 {
					t.Errorf("a planning run ran %d steps", len(dbSteps(r)))
				}
			},
		},
	)
}
