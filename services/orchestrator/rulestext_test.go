package orchestrator

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// The rules say what is enforced (issue 18, item 12): the repair rule's
// numbers are the run loop's, and whether a hypothetical index can be
// planned is said up front, per engine.

var repairRuleNumbers = regexp.MustCompile(`uses one of the (\d+) repairs.*Once (\d+) statements have failed, ([a-z_, ]+) (?:is|are) refused`)

// TestTheRepairRuleSaysWhatIsEnforced: for several repair budgets, the
// failures after which the rules say statements are refused are the
// failures after which the drive refuses them, a statement that succeeds
// in between using none; the status line counts the same repairs.
func TestTheRepairRuleSaysWhatIsEnforced(t *testing.T) {
	for _, repairs := range []int{1, 2} {
		t.Run(fmt.Sprint(repairs), func(t *testing.T) {
			h := newHarness(t, Config{})
			var rules string
			qs := []string{"SELECT a", "SELECT ok", "SELECT b", "SELECT c", "SELECT d", "SELECT e"}
			h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
				if n == 0 {
					rules = req.Messages[0].Content
				}
				return reads(qs...)(n, req)
			}
			h.exec.answer = func(_ int, req contracts.ExecRequest) (contracts.ExecReply, error) {
				if req.SQL == "SELECT ok" {
					return okReply(req, 1), nil
				}
				return failReply(1), nil
			}
			entries, rec, err := h.drive(t, "rule", func(b *contracts.Budget) { b.MaxRepairs = repairs })
			if err != nil {
				t.Fatal(err)
			}
			m := repairRuleNumbers.FindStringSubmatch(rules)
			if m == nil {
				t.Fatalf("the rules state no repair rule:\n%s", rules)
			}
			said, _ := strconv.Atoi(m[1])
			failuresSaid, _ := strconv.Atoi(m[2])
			if said != repairs || m[3] != "run_read_query and inspect_plan" {
				t.Errorf("the rules say %d repairs for %s, want %d for run_read_query and inspect_plan", said, m[3], repairs)
			}
			// The first refusal comes after exactly the failures the rules name.
			failed, refusedAfter := 0, -1
			for _, e := range entries {
				p, _ := e.Decode()
				switch p := p.(type) {
				case *contracts.ToolCompleted:
					if p.Outcome == contracts.OutcomeError {
						failed++
					}
				case *contracts.ToolRefused:
					if p.Code != refuseRepairBudget {
						t.Fatalf("refused %s", p.Code)
					}
					if refusedAfter < 0 {
						refusedAfter = failed
					}
				}
			}
			if refusedAfter != failuresSaid || rec.Spent.Repairs != failuresSaid {
				t.Errorf("the first refusal came after %d failures (%d in all); the rules name %d", refusedAfter, rec.Spent.Repairs, failuresSaid)
			}
			// The status line after the first failure counts every repair.
			cs := completions(t, entries, stepOf("SELECT a"))
			if len(cs) != 1 || !strings.Contains(cs[0].Content, fmt.Sprintf("· %s left ·", plural(repairs, "repair"))) {
				t.Errorf("the first failure's status line: %+v", cs)
			}
		})
	}
	// Without run_read_query the rule speaks of readings and names the
	// tools the run has.
	h := &contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowOperations, Engine: contracts.EnginePostgres,
		Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowOperations), Budget: contracts.Budget{MaxRepairs: 3}}
	if r := systemPrompt(h, 10); !strings.Contains(r, "Once 4 readings have failed, inspect_operations is refused for the rest of the run") {
		t.Errorf("the operations rules: %s", r)
	}
}

// TestHypotheticalIndexesAreStatedUpFront: a run with inspect_plan is told
// whether it can plan with a hypothetical index: on PostgreSQL only with
// hypopg (known once tried), never elsewhere; a run without inspect_plan is
// told nothing of it.
func TestHypotheticalIndexesAreStatedUpFront(t *testing.T) {
	qo := policy.Tools(contracts.ModeAgent, contracts.WorkflowQueryOptimization)
	for engine, want := range map[contracts.Engine]string{
		contracts.EnginePostgres: "Hypothetical indexes (inspect_plan's hypotheticalIndex) need the hypopg extension, which this database may lack: without it the plan is refused at no cost",
		contracts.EngineSQLite:   "Hypothetical indexes: not available on SQLite (PostgreSQL with hypopg only; refused elsewhere): send hypotheticalIndex as null.",
		contracts.EngineDuckDB:   "Hypothetical indexes: not available on DuckDB",
		contracts.EngineMSSQL:    "Hypothetical indexes: not available on SQL Server (T-SQL)",
	} {
		h := &contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowQueryOptimization, Engine: engine, Tools: qo}
		if r := systemPrompt(h, 10); strings.Count(r, "Hypothetical indexes") != 1 || !strings.Contains(r, want) {
			t.Errorf("%s: the rules do not say %q", engine, want)
		}
	}
	h := &contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowOperations, Engine: contracts.EnginePostgres,
		Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowOperations)}
	if r := systemPrompt(h, 10); strings.Contains(r, "Hypothetical") {
		t.Errorf("a run without inspect_plan is told of hypothetical indexes")
	}
}
