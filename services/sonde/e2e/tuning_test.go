package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

func tuningFile(t *testing.T, doc string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tuning.json")
	if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestModelTuningShapesTheRun: the operator's per-model settings are recorded
// on the ledger and applied: the report is asked for after the tuned number
// of readings, and an empty turn ends the run when asking again is off.
func TestModelTuningShapesTheRun(t *testing.T) {
	asked := make(chan string, 1)
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if req.AssistantTurns() == 0 {
			return readCall("a", "SELECT COUNT(*) AS n FROM orders"), nil
		}
		asked <- req.LastUserText()
		return modeltest.Reply{}, nil // an empty turn: no text, no call
	})
	path := tuningFile(t, `{"version":1,"models":{"scripted":{"turnLimit":5,"readingsBeforeReport":1,"askAgainOnEmptyTurn":false}}}`)
	s := stacktest.Start(t, stacktest.Options{Script: script, ModelTuningPath: path})
	c := s.Client("")
	started := startRun(t, c, "anything")
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	if rec.Status != contracts.StatusFailed || rec.StopReason != contracts.StopModelStopped || rec.Spent.Turns != 2 {
		t.Fatalf("status %s stop %s turns %d: %v", rec.Status, rec.StopReason, rec.Spent.Turns, kinds(es))
	}
	if last := <-asked; !strings.Contains(last, "You have taken 1 readings") || !strings.Contains(last, "compose_report") {
		t.Fatalf("after one reading the model was told %q", last)
	}
	var resolved contracts.DriverResolved
	for _, e := range es {
		if e.Kind == contracts.KindDriverResolved {
			v, _ := e.Decode()
			resolved = *v.(*contracts.DriverResolved)
		}
	}
	if resolved.SettingsSource != contracts.SettingsOperator || resolved.Settings == nil || resolved.Settings.TurnLimit != 5 || resolved.SettingsDigest == "" {
		t.Fatalf("driver-resolved %+v", resolved)
	}
}

// TestTunedTurnLimit: a tuned turn limit below the workflow's ends the run
// turn-limit there.
func TestTunedTurnLimit(t *testing.T) {
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		n := req.AssistantTurns() + 1
		return readCall("call_"+itoa(n), "SELECT "+itoa(n)+" AS n"), nil
	})
	path := tuningFile(t, `{"version":1,"models":{"scripted":{"turnLimit":3}}}`)
	s := stacktest.Start(t, stacktest.Options{Script: script, ModelTuningPath: path})
	c := s.Client("")
	started := startRun(t, c, "read forever")
	rec := ledger.Fold(started.RunID, stacktest.Follow(t, c, started.RunID))
	if rec.Status != contracts.StatusFailed || rec.StopReason != contracts.StopTurnLimit || rec.Spent.Turns != 3 {
		t.Fatalf("status %s stop %s turns %d", rec.Status, rec.StopReason, rec.Spent.Turns)
	}
}
