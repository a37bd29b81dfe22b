package orchestrator

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
)

// slowModel never answers within a turn's bound: like modelturn, it waits
// out the smaller of its own ceiling and the request's TimeoutMs, then
// answers the model-timeout failure modelturn answers with. It records the
// bound each turn asked for.
type slowModel struct {
	ceiling time.Duration

	mu    sync.Mutex
	asked []int64
}

func (m *slowModel) Probe(context.Context) (contracts.ModelProbeReply, error) {
	return contracts.ModelProbeReply{Provider: "test", Model: "slow"}, nil
}

func (m *slowModel) Turn(ctx context.Context, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, error) {
	m.mu.Lock()
	m.asked = append(m.asked, req.TimeoutMs)
	m.mu.Unlock()
	bound := m.ceiling
	if req.TimeoutMs > 0 {
		bound = min(bound, time.Duration(req.TimeoutMs)*time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	<-ctx.Done()
	return contracts.ModelTurnReply{}, replyFailure(&contracts.ModelFailure{
		Reason: contracts.ReasonModelTimeout, Retryable: true, Message: "the model did not answer in time",
	})
}

// TestModelTurnBoundedByTheBudget: each model call is asked with the
// budget's ModelTurnTimeoutMs (the run's deadline is far away), and a model
// slower than it fails the run as a slow model does: model-timeout.
func TestModelTurnBoundedByTheBudget(t *testing.T) {
	h := newHarness(t, Config{})
	// The ceiling stands for modelturn's own AGENT_MODEL_TURN_TIMEOUT_MS: far
	// above the budget's figure, so only the budget can end the turn.
	m := &slowModel{ceiling: time.Hour}
	h.s.models = m
	_, rec, err := h.drive(t, "slow-turn", func(b *contracts.Budget) {
		b.DeadlineMs = 10 * 60 * 1000
		b.ModelTurnTimeoutMs = 40
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusFailed || rec.Reason != contracts.ReasonModelTimeout {
		t.Fatalf("run ended %s / %q, want failed / model-timeout", rec.Status, rec.Reason)
	}
	if len(m.asked) != 1 || m.asked[0] != 40 {
		t.Fatalf("the model was asked with bounds %v, want [40] (the budget's ModelTurnTimeoutMs)", m.asked)
	}
}

// TestModelTurnWithoutABudgetFigure: a header recorded before the budget
// carried ModelTurnTimeoutMs (zero) bounds a turn by the run's remaining time
// alone, as runs did then.
func TestModelTurnWithoutABudgetFigure(t *testing.T) {
	h := newHarness(t, Config{})
	var asked []int64
	h.model.script = func(_ int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		asked = append(asked, req.TimeoutMs)
		return contracts.ModelTurnReply{}
	}
	const deadline = 10 * 60 * 1000
	_, rec, err := h.drive(t, "old-header", func(b *contracts.Budget) {
		b.DeadlineMs = deadline
		b.ModelTurnTimeoutMs = 0
	})
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Status.Terminal() || len(asked) == 0 {
		t.Fatalf("run ended %s after %d turns", rec.Status, len(asked))
	}
	for _, ms := range asked {
		// The deadline is ten minutes away: a turn bound of more than the
		// policy's 90 s is the deadline's, not a per-turn figure.
		if ms <= 90_000 || ms > deadline {
			t.Fatalf("a turn was asked with a bound of %d ms, want the run's remaining time (within %d ms)", ms, deadline)
		}
	}
}
