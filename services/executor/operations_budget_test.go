package executor

import (
	"context"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// TestOperationsRefusedPastItsBytes: on the demo file (no shared dataset
// needed), the same reading that fits the profile's bytes is refused
// reading_over_budget, with no artifact, when the request's bytes are
// fewer than it holds: never stored cut short.
func TestOperationsRefusedPastItsBytes(t *testing.T) {
	store := memStore{}
	s := newService(t, Config{Artifacts: store})
	ctx := context.Background()
	whole := s.Exec(ctx, contracts.OpOperations, opsRequest("demo", contracts.OpsTableStats))
	if whole.Status != contracts.ExecOK || whole.Artifact == nil || whole.Artifact.Rows < 2 || whole.Artifact.Truncated {
		t.Fatalf("table-stats of the demo file: %+v", whole)
	}
	req := opsRequest("demo", contracts.OpsTableStats)
	req.MaxBytes = whole.Artifact.Bytes / 2
	reply := s.Exec(ctx, contracts.OpOperations, req)
	if reply.Status != contracts.ExecRefused || reply.Refusal == nil || reply.Refusal.Code != contracts.RefuseReadingOverBudget || reply.Artifact != nil {
		t.Fatalf("half the bytes (%d of %d): %+v", req.MaxBytes, whole.Artifact.Bytes, reply)
	}
	if len(store) != 1 {
		t.Errorf("%d artifacts stored, want only the whole reading's", len(store))
	}
}
