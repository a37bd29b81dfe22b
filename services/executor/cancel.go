package executor

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/contracts"
)

// cancelMemory is how long a cancel naming no operation in flight is
// remembered: the request it names may still be on its way (a client that
// hangs up at once), and must then stop as soon as it arrives.
const cancelMemory = time.Minute

// operations tracks the cancel functions of the operations in flight by
// run and step, for contracts.ExecCancel.
type operations struct {
	mu   sync.Mutex
	next uint64
	live map[string]map[uint64]context.CancelFunc
	gone map[string]time.Time // cancelled keys seen with nothing in flight, until when
}

func opKey(runID, stepID string) string { return runID + "\x00" + stepID }

// add registers cancel under run and step and returns its removal. An
// operation without a step cannot be named, so it is not registered.
func (o *operations) add(runID, stepID string, cancel context.CancelFunc) func() {
	if stepID == "" {
		return func() {}
	}
	key := opKey(runID, stepID)
	o.mu.Lock()
	defer o.mu.Unlock()
	if until, ok := o.gone[key]; ok && time.Now().Before(until) {
		cancel() // cancelled before it arrived
	}
	o.next++
	id := o.next
	if o.live[key] == nil {
		o.live[key] = map[uint64]context.CancelFunc{}
	}
	o.live[key][id] = cancel
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.live[key], id)
		if len(o.live[key]) == 0 {
			delete(o.live, key)
		}
	}
}

// cancel cancels every operation in flight for run and step and reports how
// many there were; with none, it remembers the cancel for cancelMemory.
func (o *operations) cancel(runID, stepID string) int {
	key := opKey(runID, stepID)
	o.mu.Lock()
	defer o.mu.Unlock()
	now := time.Now()
	for k, until := range o.gone {
		if now.After(until) {
			delete(o.gone, k)
		}
	}
	n := len(o.live[key])
	for _, cancel := range o.live[key] {
		cancel()
	}
	if n == 0 {
		o.gone[key] = now.Add(cancelMemory)
	}
	return n
}

// Cancel stops the operations in flight of run and step (a direct query's
// run id is empty and its step the request id the gateway gave it), at the
// database too, and reports how many it stopped. A cancel that arrives before
// its operation stops the operation when it arrives.
func (s *Service) Cancel(runID, stepID string) int {
	if stepID == "" {
		return 0
	}
	n := s.ops.cancel(runID, stepID)
	s.log.Info("cancel", "run", runID, "step", stepID, "operations", n)
	return n
}

// onCancel handles contracts.ExecCancel messages.
func (s *Service) onCancel(m *nats.Msg) {
	var c contracts.ExecCancel
	if err := json.Unmarshal(m.Data, &c); err != nil {
		s.log.Warn("undecodable cancel", "err", err)
		return
	}
	s.Cancel(c.RunID, c.StepID)
}
