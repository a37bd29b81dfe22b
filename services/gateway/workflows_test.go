package gateway_test

import (
	"testing"

	"github.com/sondehq/sonde/pkg/policy"
)

// TestAgentConfigServesTheWorkflowTable: GET /api/agent/config lists
// exactly the workflow table's rows, in its order, as the rows say, whether
// or not agents are available (the console builds its choice from it).
func TestAgentConfigServesTheWorkflowTable(t *testing.T) {
	e := newEnv(t)
	got, err := e.client(tokAlice).Config(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := policy.Describe()
	if len(got.Workflows) != len(want) {
		t.Fatalf("served %d workflows, the table holds %d: %+v", len(got.Workflows), len(want), got.Workflows)
	}
	for i, w := range want {
		s := got.Workflows[i]
		if s.ID != w.Type || s.Label != w.Label || s.Goal != w.Goal || s.Agent != w.Agent || s.AutoExecute != w.AutoExecute {
			t.Errorf("served %+v, the table's row is %+v", s, w)
		}
	}
}
