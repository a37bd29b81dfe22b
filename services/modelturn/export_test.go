package modelturn

import (
	"context"

	"github.com/sondehq/sonde/contracts"
)

// TurnWithDeltas is Turn with the deltas handed to onDelta instead of NATS.
func TurnWithDeltas(s *Service, ctx context.Context, req contracts.ModelTurnRequest, onDelta func(string)) contracts.ModelTurnReply {
	s.onDelta = onDelta
	return s.Turn(ctx, req)
}
