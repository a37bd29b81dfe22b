package orchestrator

import (
	"context"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// TestStartRefusesWhatTheGatewayRefuses: a start command the gateway would
// have refused (policy.CheckStart) is refused here with the same problem,
// code, message and fix alike, and creates no run.
func TestStartRefusesWhatTheGatewayRefuses(t *testing.T) {
	h := newHarness(t, Config{})
	ctx := context.Background()
	for name, tune := range map[string]func(*contracts.StartRun){
		"unknown workflow":       func(c *contracts.StartRun) { c.WorkflowType = "poetry" },
		"unknown mode":           func(c *contracts.StartRun) { c.Mode = "root" },
		"blank objective":        func(c *contracts.StartRun) { c.Objective = "  \n" },
		"bad previous run":       func(c *contracts.StartRun) { c.PreviousRunID = "a.b" },
		"auto-execute elsewhere": func(c *contracts.StartRun) { c.AutoExecute = true },
	} {
		t.Run(name, func(t *testing.T) {
			cmd := startCmd("bad-start", "tester")
			tune(&cmd)
			want := cmd
			p := policy.CheckStart(&want)
			if p == nil {
				t.Fatal("the case is not a bad start")
			}
			r := h.s.StartRun(ctx, cmd)
			if r.Error == nil || *r.Error != *p {
				t.Fatalf("refused with %+v, want %+v", r.Error, p)
			}
			if _, err := h.s.ledger.Read(ctx, cmd.RunID); !errIsNotFound(err) {
				t.Fatalf("a refused start left a ledger (read: %v)", err)
			}
		})
	}
}
