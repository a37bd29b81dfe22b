package modelturn

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
)

// retryPolicy is Sonde's one retry policy for model calls; every SDK's own
// retries are off. A call is tried again only when its failure is retryable,
// is not a timeout (the turn's bound covers every attempt), and published no
// text yet (a second attempt would repeat it to the watchers), and only when
// the wait and a useful attempt still fit in the turn's bound. The wait is
// full jitter: uniform in [0, min(cap, base·2^(n-1))) before attempt n+1.
type retryPolicy struct {
	attempts int
	base     time.Duration
	cap      time.Duration
	// minAttempt is the time an attempt needs to be worth starting.
	minAttempt time.Duration
}

// defaultRetry: at most 3 attempts, waits under 0.5 s then under 1 s.
var defaultRetry = retryPolicy{attempts: 3, base: 500 * time.Millisecond, cap: 4 * time.Second, minAttempt: 2 * time.Second}

// do runs call under the policy and returns its reply, the attempts made
// and the last failure.
func (p retryPolicy) do(ctx context.Context, call func(context.Context, func(string)) (contracts.ModelTurnReply, error), onDelta func(string)) (contracts.ModelTurnReply, int, error) {
	for attempt := 1; ; attempt++ {
		published := false
		deltas := func(text string) {
			published = true
			if onDelta != nil {
				onDelta(text)
			}
		}
		out, err := call(ctx, deltas)
		if err == nil {
			return out, attempt, nil
		}
		f := failure.As(err)
		if attempt >= p.attempts || !f.Retryable || f.Reason == contracts.ReasonModelTimeout || published || ctx.Err() != nil {
			return out, attempt, err
		}
		wait := time.Duration(rand.Int64N(int64(min(p.cap, p.base<<(attempt-1))) + 1))
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait+p.minAttempt {
			return out, attempt, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return out, attempt, err
		case <-t.C:
		}
	}
}
