package executor

import (
	"context"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/exectext"
)

// shownReply is an executor reply with what a model reads of it: the
// orchestrator's rendering of the executor's data (pkg/exectext), so the
// tests here hold the whole path from a real database to the model's text.
type shownReply struct {
	contracts.ExecReply
	// Text is what the model reads of the reply.
	Text string
}

// shownExec answers op as Exec does, with what a model reads of the reply.
func (s *Service) shownExec(ctx context.Context, op contracts.ExecOp, req contracts.ExecRequest) shownReply {
	r := s.Exec(ctx, op, req)
	return shownReply{r, exectext.Render(op, req, r)}
}

// shown is what a model reads of reply, the answer to op asked with req.
func shown(op contracts.ExecOp, req contracts.ExecRequest, reply contracts.ExecReply) shownReply {
	return shownReply{reply, exectext.Render(op, req, reply)}
}
