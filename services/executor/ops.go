package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

// servedOp is one operation the executor serves.
type servedOp struct {
	// free is an operation that reads nothing from the database: it takes
	// no slot and stores no artifact.
	free bool
	// answer answers the operation on the engine of an available connection.
	answer func(s *Service, ctx context.Context, c opCall) contracts.ExecReply
}

// opCall is one operation as its answer gets it: the request (its
// correlation id filled in) and, for an operation that takes a slot, the
// engine request with its limits and the time left.
type opCall struct {
	op   contracts.ExecOp
	eng  engine.Engine
	req  *contracts.ExecRequest
	ereq engine.Request
}

// servedOps are the operations this executor serves, by name: Start serves
// an endpoint for each, and Exec answers through it; an operation absent
// here is refused as unsupported.
var servedOps = map[contracts.ExecOp]servedOp{
	contracts.OpRead: {answer: func(s *Service, ctx context.Context, c opCall) contracts.ExecReply {
		res, err := c.eng.Read(ctx, c.ereq)
		return s.stored(ctx, c, res, nil, err)
	}},
	contracts.OpExplain:   {answer: (*Service).explainOp},
	contracts.OpSchema:    {answer: catalogAnswer},
	contracts.OpInventory: {answer: catalogAnswer},
	contracts.OpProfile: {answer: func(s *Service, ctx context.Context, c opCall) contracts.ExecReply {
		return s.profileOp(ctx, c.eng, c.req, c.ereq)
	}},
	contracts.OpOperations: {answer: func(s *Service, ctx context.Context, c opCall) contracts.ExecReply {
		return s.operationsOp(ctx, c.eng, c.req, c.ereq)
	}},
	contracts.OpCheck: {free: true, answer: func(s *Service, ctx context.Context, c opCall) contracts.ExecReply {
		return s.checkOp(ctx, c.eng, c.req)
	}},
}

// catalogAnswer answers the catalog reads, OpSchema and OpInventory.
func catalogAnswer(s *Service, ctx context.Context, c opCall) contracts.ExecReply {
	return s.catalogOp(ctx, c.op, c.eng, c.req, c.ereq)
}

// explainOp reads a statement's plan, on an engine that reads plans.
func (s *Service) explainOp(ctx context.Context, c opCall) contracts.ExecReply {
	p, ok := c.eng.(engine.Planner)
	if !ok {
		return refused(refuse.New(refuse.Unsupported,
			fmt.Sprintf("the %s executor cannot read query plans yet", s.engine), "read the data with run_read_query instead"))
	}
	res, sum, err := explain(ctx, s.engine, c.eng, p, c.ereq, c.req.HypotheticalIndex)
	return s.stored(ctx, c, res, &sum, err)
}

// Ops lists the operations this executor serves, in name order.
func Ops() []contracts.ExecOp {
	ops := make([]contracts.ExecOp, 0, len(servedOps))
	for op := range servedOps {
		ops = append(ops, op)
	}
	slices.Sort(ops)
	return ops
}

// opNames lists Ops for a refusal's fix.
func opNames() string {
	var names []string
	for _, op := range Ops() {
		names = append(names, string(op))
	}
	return strings.Join(names, ", ")
}
