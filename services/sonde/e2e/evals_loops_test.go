package e2e

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/verdict"
)

// Issue 18, items 6 and 7: a model that resends one failing statement, and
// a result too wide for the model's context.

// evalFailing is a statement the demo database fails (no such column).
const evalFailing = "SELECT status, total_value FROM orders"

// evalWide reads 200 rows of about 900 bytes each: far more than any
// model's share of its window.
var evalWide = "SELECT o.id, " + strings.Repeat("c.name || ' ' || c.email || ' ' || ", 22) +
	"o.ordered_at AS wide FROM orders o JOIN customers c ON c.id = o.customer_id ORDER BY o.id LIMIT 200"

// evalShown is the server's line for a result cut to the model's share.
var evalShown = regexp.MustCompile(`Showing (\d+) of 200 rows \(\d+ of (\d+) bytes\)`)

// evalLoopNotice reports a notice that names a loop.
func evalLoopNotice(req modeltest.ChatRequest) bool {
	return strings.Contains(evalNotice(req), "You are in a loop")
}

// evalFirstIDs are the citations the run's first tool result told.
func evalFirstIDs(req modeltest.ChatRequest) []string {
	rs := req.ToolMessages()
	if len(rs) == 0 {
		return nil
	}
	var out []string
	for _, c := range toldIn(rs[0].Content) {
		out = append(out, c.raw)
	}
	return out
}

// evalRanOnce fails unless sql reached the database exactly once however
// often it was sent: the sends after the first were replays.
func evalRanOnce(t *testing.T, r evalRun, sql string) (sent int) {
	t.Helper()
	ran := 0
	for _, inv := range payloads[contracts.ToolInvoked](r, contracts.KindToolInvoked) {
		if strings.Contains(string(inv.Arguments), sql) {
			ran++
		}
	}
	for _, c := range payloads[contracts.ToolCompleted](r, contracts.KindToolCompleted) {
		if strings.Contains(string(c.Arguments), sql) {
			sent++ // the first answer, and each replay
		}
	}
	if ran != 1 {
		t.Errorf("%q ran %d times, want once", sql, ran)
	}
	return sent
}

func init() {
	evalScenarios = append(evalScenarios,
		evalScenario{
			// Counts, then resends one failing statement unchanged, as small
			// local models do, until the server names the loop; then reports
			// what it read.
			name:      "resends a failing statement until told",
			objective: "How many orders are there, and what is their total value?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				switch {
				case req.AssistantTurns() == 0:
					return evalRead("SELECT COUNT(*) AS n FROM orders", "count the orders")
				case evalLoopNotice(req):
					ids := evalFirstIDs(req)
					if len(ids) == 0 {
						return modeltest.Reply{Text: "The count was not answered."}
					}
					return evalReport(evalClaim{"The shop has orders; their total value could not be read.", ids[:1]})
				}
				return evalRead(evalFailing, "the total value")
			},
			check: func(t *testing.T, r evalRun) {
				if sent := evalRanOnce(t, r, evalFailing); sent != 2 {
					t.Errorf("the failing statement was sent %d times, want 2 (the notice came after the second)", sent)
				}
				told := 0
				for _, q := range r.reqs {
					if evalLoopNotice(q) {
						told++
					}
				}
				if told != 1 {
					t.Errorf("%d turns named the loop, want the one after the second send", told)
				}
				for _, c := range toolContents(r) {
					if n := strings.Count(c, "Replayed from this run's ledger"); n > 1 {
						t.Errorf("a replay carries its note %d times:\n%s", n, c)
					}
				}
			},
		},
		evalScenario{
			// Resends one failing statement whatever it is told: the third
			// send ends the run, unanswered, with its own stop reason.
			name:      "resends a failing statement forever",
			objective: "What is the total value of the orders?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				return evalRead(evalFailing, "the total value")
			},
			want: &evalEnding{stop: contracts.StopRepeatedCall, outcome: contracts.VerdictUnanswered, unmet: verdict.UnmetNoReport},
			check: func(t *testing.T, r evalRun) {
				if len(r.reqs) != 3 {
					t.Errorf("the model was asked %d times, want 3", len(r.reqs))
				}
				evalRanOnce(t, r, evalFailing)
				if !strings.Contains(r.rec.Detail, "run_read_query") || !strings.Contains(r.rec.Detail, "total_value") {
					t.Errorf("the ending does not name the call: %q", r.rec.Detail)
				}
			},
		},
		evalScenario{
			// Reads 200 wide rows (about 180 KB; a 32k-context model was once
			// sent 48k tokens of such a result), then reports what it was shown.
			name:      "reads a wide result",
			objective: "Which customers placed the first orders?",
			play: func(req modeltest.ChatRequest) modeltest.Reply {
				if req.AssistantTurns() == 0 {
					return evalRead(evalWide, "the first orders with their customers")
				}
				if !evalShown.MatchString(lastResult(req)) {
					return modeltest.Reply{Text: "The whole wide result came back."}
				}
				ids := toldIn(lastResult(req))
				if len(ids) == 0 {
					return modeltest.Reply{Text: "The result named no id."}
				}
				return evalReport(evalClaim{"The first orders were placed by the customers shown.", []string{ids[0].raw}})
			},
			check: func(t *testing.T, r evalRun) {
				cs := payloads[contracts.ToolCompleted](r, contracts.KindToolCompleted)
				if len(cs) == 0 || cs[0].Artifact == nil || cs[0].Artifact.Rows != 200 {
					t.Fatalf("the read did not store its 200 rows: %+v", cs)
				}
				m := evalShown.FindStringSubmatch(cs[0].Content)
				if m == nil || m[1] == "0" || m[1] == "200" {
					t.Fatalf("the model was shown %v of the result:\n%s", m, tail(cs[0].Content))
				}
				// What is shown is a bounded share, far below the whole.
				if whole := cs[0].Artifact.Bytes; len(cs[0].Content) > 64<<10 || len(cs[0].Content) > whole/2 {
					t.Errorf("the model was shown %d bytes of a %d-byte result", len(cs[0].Content), whole)
				}
			},
		},
	)
}
