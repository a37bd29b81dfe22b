package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// MomentNotHistory is said with every operational reading.
const MomentNotHistory = "A moment, not a history: this reading says what the engine reported as it was taken."

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
		reply.Text = renderRefusal(reply.Refusal)
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
	reply.Status, reply.Artifact = contracts.ExecOK, &sum
	reply.Text = renderReading(req, kind, sum, set, rd, narrowed, past)
	return reply
}

// overBudget refuses a reading past its bounds.
func overBudget(reply contracts.ExecReply, reason string) contracts.ExecReply {
	reply.Status = contracts.ExecRefused
	reply.Refusal = refuse.New(contracts.RefuseReadingOverBudget, reason+"; a partial operational reading would mislead, so none is shown",
		"take it again with a smaller limit, or narrow it to one schema")
	reply.Text = renderRefusal(reply.Refusal)
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

// renderReading renders a reading for the model: the server's lines (what
// was read, how it was narrowed and bounded, what the engine says about
// its figures, that it is a moment), then the rows fenced — names and
// statements in them are the database's.
func renderReading(req *contracts.ExecRequest, kind contracts.OperationsKind, sum contracts.ArtifactSummary, set *rowset.Set, rd engine.Reading, narrowed, past int) string {
	head := columnLine(set)
	// Within the request's show bytes the reading keeps its first whole
	// rows and says how many it shows; the artifact holds them all.
	return fit(req.ShowBytes, rowLines(set), func(kept []string, c *cut) string {
		var b strings.Builder
		fmt.Fprintf(&b, "Operational reading %s on connection %s: %s, %s. Cite it as %s.\n",
			kind, req.ConnectionID, plural(sum.Rows, "row"), plural(len(sum.Columns), "column"), evidence(sum.CorrelationID))
		if req.Schema != "" {
			fmt.Fprintf(&b, "Narrowed to one schema: %s left out as another schema's; rows that name no relation are kept.\n", plural(narrowed, "row"))
		}
		if past > 0 {
			fmt.Fprintf(&b, "The first %s in the reading's order are shown; %d more were not (the limit).\n", plural(sum.Rows, "row"), past)
		}
		if rd.Hidden > 0 {
			fmt.Fprintf(&b, "%s left out: they name a relation this connection's readable patterns hide.\n", plural(rd.Hidden, "row"))
		}
		if rd.Withheld > 0 {
			fmt.Fprintf(&b, "%s withheld (shown as NULL): they name a relation this connection's readable patterns hide.\n", plural(rd.Withheld, "statement text"))
		}
		for _, n := range rd.Notes {
			b.WriteString("Note: " + n + ".\n")
		}
		b.WriteString(MomentNotHistory + "\n")
		b.WriteString(c.sentence("rows", "reading", sum.CorrelationID, "take it again with a smaller limit or narrowed to one schema to see the rest"))
		b.WriteString(fence.Wrap("reading from connection "+req.ConnectionID, head+strings.Join(kept, "")))
		return b.String()
	})
}
