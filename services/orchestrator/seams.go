package orchestrator

import (
	"context"

	"github.com/sondehq/sonde/contracts"
)

// The drive reaches the two services it depends on through these seams. The
// NATS implementations below are what a deployment uses; the run loop's
// tests put scripted ones in their place, so the rules of the loop (intent
// before effect, replay of settled steps, the budgets) are checked without a
// model or a database, against the real ledger.

// modelService is modelturn as the drive sees it. Errors are *modelError,
// classified (absent, lost, a reason), or the context's.
type modelService interface {
	Probe(ctx context.Context) (contracts.ModelProbeReply, error)
	Turn(ctx context.Context, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, error)
}

// executorService is the executors as the drive sees them. An *executorError
// means nobody received the request (the statement certainly did not run);
// any other error means it was delivered and never answered (it may have).
type executorService interface {
	Exec(ctx context.Context, engine contracts.Engine, op contracts.ExecOp, req contracts.ExecRequest) (contracts.ExecReply, error)
}

// natsModel asks modelturn over NATS, watching its heartbeats.
type natsModel struct{ s *Service }

func (m natsModel) Probe(ctx context.Context) (contracts.ModelProbeReply, error) {
	return m.s.probeModel(ctx)
}

func (m natsModel) Turn(ctx context.Context, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, error) {
	return m.s.modelTurn(ctx, req)
}

// natsExecutors asks the engine's executors over NATS.
type natsExecutors struct{ s *Service }

func (x natsExecutors) Exec(ctx context.Context, engine contracts.Engine, op contracts.ExecOp, req contracts.ExecRequest) (contracts.ExecReply, error) {
	reply, err := x.s.exec(ctx, engine, op, req)
	if err == nil && op == contracts.OpInventory && reply.Status == contracts.ExecOK && reply.Inventory == nil && reply.Artifact != nil {
		// Too large to travel in the reply: it is in the artifact.
		if inv, ierr := x.s.storedInventory(ctx, req.RunID, reply.Artifact.CorrelationID); ierr == nil {
			reply.Inventory = inv
		} else {
			x.s.log.Warn("inventory artifact could not be read", "run", req.RunID, "err", ierr)
		}
	}
	return reply, err
}
