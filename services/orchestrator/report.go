package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/verdict"
)

// The report: compose_report's arguments read, every citation checked
// against what the run produced and showed the model, and the run ended.

// callComposeReport ends the run with the report, its citations checked.
func (d *drive) callComposeReport(ctx context.Context, _ contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	ids, _ := d.citable()
	a, notes, err := decodeReport(raw, ids)
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(),
			`send {"claims":[{"text":"…","evidence":[{"source":"artifact","correlationId":"…"}]}]}`)
	}
	return d.composeReport(ctx, tc, a, notes)
}

// composeReport verifies every citation against this run's own ledger and
// ends the run with the report, or refuses the claims it cannot resolve.
func (d *drive) composeReport(ctx context.Context, tc contracts.ToolCall, a reportArgs, notes []string) (bool, error) {
	produced := verdict.ProducedBy(d.entries)
	var problems []string
	if len(a.Claims) == 0 {
		problems = append(problems, "the report has no claims")
	}
	for i, c := range a.Claims {
		if strings.TrimSpace(c.Text) == "" {
			problems = append(problems, fmt.Sprintf("claim %d has no text", i+1))
		}
		if len(c.Evidence) == 0 {
			problems = append(problems, fmt.Sprintf("claim %d cites no evidence", i+1))
		}
		for _, ref := range c.Evidence {
			if !produced.Resolves(ref) {
				b, _ := json.Marshal(ref)
				problems = append(problems, fmt.Sprintf("claim %d cites %s, which this run did not produce", i+1, b))
			}
		}
	}
	if len(problems) > 0 {
		_, list := d.citable()
		return false, d.refuse(ctx, tc, "", refuseUnresolved, strings.Join(problems, "; "), citationRule+" "+list)
	}
	if err := d.append(ctx, contracts.KindReportComposed, contracts.ReportComposed{ToolCall: tc, Claims: a.Claims, Normalised: notes}); err != nil {
		return false, err
	}
	return true, d.finish(ctx, contracts.StatusSucceeded, contracts.StopReportComposed, "", "", true)
}

// citable lists what this run may cite — its ids, and a sentence saying
// what each holds — for lenient decoding and a refused citation: a model
// that miscopied an id sees the right ones rather than repeating the same
// mistake.
func (d *drive) citable() ([]string, string) {
	rec := d.record()
	var ids, said []string
	for _, st := range rec.Steps {
		if st.Status != contracts.StepCompleted || st.Artifact == nil {
			continue
		}
		ids = append(ids, st.Artifact.CorrelationID)
		said = append(said, fmt.Sprintf("%s (%s, %s)", st.Artifact.CorrelationID, st.Tool, plural(st.Artifact.Rows, "row")))
	}
	for _, e := range d.entries {
		if e.Kind != contracts.KindContextCaptured {
			continue
		}
		if p, err := e.Decode(); err == nil && p.(*contracts.ContextCaptured).CorrelationID != "" {
			id := p.(*contracts.ContextCaptured).CorrelationID
			ids = append(ids, id)
			said = append(said, id+" (the schema snapshot: structure only)")
		}
	}
	if len(ids) == 0 {
		return nil, "This run has produced nothing citable yet: read something first."
	}
	return ids, "Citable in this run: " + strings.Join(said, ", ") + "."
}
