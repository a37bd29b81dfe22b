package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// operationsOp answers contracts.OpOperations: one curated reading of what
// the engine reports about itself (engine.Operator), narrowed here — by
// schema, then to the request's limit — rather than trusted to the engine,
// stored with its declared columns (even when empty) and rendered fenced.
// A reading past the byte bound is refused (reading_over_budget), never
// cut short: a partial operational reading is a misleading one.
func (s *Service) operationsOp(ctx context.Context, eng engine.Engine, req *contracts.ExecRequest, ereq engine.Request) contracts.ExecReply {
	kind := req.Kind
	columns, ok := contracts.OperationsColumns[kind]
	if !ok {
		return refused(refuse.New(refuse.BadRequest, fmt.Sprintf("%q is not an operational reading", kind),
			"name one of: "+kindNames()))
	}
	if req.SQL != "" {
		return refused(refuse.New(refuse.BadRequest, "an operational reading takes no statement: the executor writes it",
			"send only the kind, and a schema or limit"))
	}
	op, ok := eng.(engine.Operator)
	if !ok {
		return refused(refuse.New(contracts.RefuseKindUnsupported,
			fmt.Sprintf("the %s executor takes no operational readings yet", s.engine),
			"answer from the inventory and the reads this run can make"))
	}
	limit := req.Limit
	if limit <= 0 || limit > contracts.MaxOperationsRows {
		limit = contracts.MaxOperationsRows
	}
	limit = min(limit, ereq.Limits.MaxRows)

	rd, err := op.Operations(ctx, ereq, kind)
	reply := contracts.ExecReply{DurationMs: rd.Duration.Milliseconds(), Statements: rd.Statements}
	var (
		unsupported *engine.KindUnsupportedError
		tooLarge    *rowset.TooLargeError
	)
	switch {
	case errors.As(err, &unsupported):
		reply.Status, reply.Refusal = contracts.ExecRefused, refuse.New(contracts.RefuseKindUnsupported, unsupported.Reason, unsupported.Fix)
		return reply
	case errors.As(err, &tooLarge):
		return overBudget(reply, fmt.Sprintf("the engine's reading passed its own bound (%s) before it could be narrowed", tooLarge.Error()))
	}
	if failure, failed := s.failure(ctx, contracts.OpOperations, eng, err, req, reply); failed {
		return failure
	}

	// Narrow by schema: a row that names a relation is kept only in the
	// schema asked for; a row that names none (a session, a health check)
	// is about the server and stays.
	rows, schemas := rd.Rows, rd.Schemas
	narrowed := 0
	if req.Schema != "" {
		var keep [][]any
		for i, row := range rows {
			if i < len(schemas) && schemas[i] != "" && !strings.EqualFold(schemas[i], req.Schema) {
				narrowed++
				continue
			}
			keep = append(keep, row)
		}
		rows = keep
	}
	past := max(len(rows)-limit, 0)
	rows = rows[:len(rows)-past]

	set := rowset.New(slices.Clone(columns), rowset.Limits{MaxRows: limit, MaxBytes: ereq.Limits.MaxBytes})
	for _, row := range rows {
		if len(row) != len(columns) {
			return failed(&contracts.DBError{Class: contracts.DBOther, Message: fmt.Sprintf(
				"the %s reading returned a row of %d values for %d columns", kind, len(row), len(columns))})
		}
		if _, err := set.Add(row); err != nil {
			if errors.As(err, &tooLarge) {
				return overBudget(reply, fmt.Sprintf("the reading is larger than %d bytes, the most this profile allows", ereq.Limits.MaxBytes))
			}
			return failed(&contracts.DBError{Class: contracts.DBOther, Message: err.Error()})
		}
	}
	sum := set.Summary(req.CorrelationID)
	art := contracts.Artifact{
		ArtifactSummary: sum,
		RunID:           req.RunID,
		StepID:          req.StepID,
		ConnectionID:    req.ConnectionID,
		Profile:         req.Profile,
		SQL:             strings.Join(rd.SQL, ";\n"),
		Data:            set.Rows,
	}
	if f, failed := s.put(ctx, art, reply); failed {
		return f
	}
	reply.Status, reply.Artifact, reply.Cells = contracts.ExecOK, &sum, set.Cells()
	reply.Reading = &contracts.ReadingSummary{Narrowed: narrowed, Past: past, Hidden: rd.Hidden, Withheld: rd.Withheld, Notes: rd.Notes}
	return reply
}

// overBudget refuses a reading past its bounds.
func overBudget(reply contracts.ExecReply, reason string) contracts.ExecReply {
	reply.Status = contracts.ExecRefused
	reply.Refusal = refuse.New(contracts.RefuseReadingOverBudget, reason+"; a partial operational reading would mislead, so none is shown",
		"take it again with a smaller limit, or narrow it to one schema")
	return reply
}

// kindNames lists the operational readings for a refusal's fix.
func kindNames() string {
	names := make([]string, len(contracts.OperationsKinds))
	for i, k := range contracts.OperationsKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}
