package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// recommend_change records one change for the user to review and apply;
// nothing is run.
var recommendChangeTool = tool{
	spec: declare(policy.ToolRecommendChange, recommendParams{}, "Record one change for the user to review and apply: an index (a CREATE INDEX statement) or a rewrite of their statement. "+
		"It is recorded, never executed. Cite the evidence it rests on; an index recommendation cites the plan result that shows the scan it removes."),
	brief: "records an index or a rewrite for the user (never executed)",
	call:  (*drive).callRecommendChange,
}

// recommendParams declare recommend_change's arguments to the model and
// the lenient reading of its text parameters; decodeRecommend reads them
// into recommendArgs, the evidence as compose_report's is read.
type recommendParams struct {
	Kind      string              `json:"kind" enum:"index,rewrite" doc:"index: a CREATE INDEX statement; rewrite: the rewritten SELECT"`
	Statement string              `json:"statement" arg:"statement" aka:"sql" doc:"the statement the user would apply or run"`
	Rationale string              `json:"rationale" aka:"reason" doc:"why it helps, with the figures from the cited results"`
	Evidence  []recommendRefParam `json:"evidence" doc:"what it rests on, at least one reference"`
}

type recommendRefParam struct {
	Source        string `json:"source" enum:"artifact" doc:"always \"artifact\""`
	CorrelationID string `json:"correlationId" doc:"the id a tool result gave, e.g. r2"`
}

// recommendArgs are recommend_change's arguments as read.
type recommendArgs struct {
	Kind, Statement, Rationale string
	Evidence                   []contracts.EvidenceRef
}

var recommendFields = fieldsOf(recommendParams{})

// decodeRecommend reads recommend_change's arguments; ids are the run's.
func decodeRecommend(raw string, ids []string) (recommendArgs, []string, error) {
	m, notes, err := object(policy.ToolRecommendChange, raw)
	if err != nil {
		return recommendArgs{}, notes, err
	}
	var a recommendArgs
	if ev, ok := m["evidence"]; ok {
		delete(m, "evidence")
		if string(bytes.TrimSpace(ev)) != "null" {
			var n []string
			a.Evidence, n, err = evidence(1, ev, ids)
			notes = append(notes, n...)
			if err != nil {
				return a, notes, &argError{msg: strings.Replace(err.Error(), "claim 1's ", "recommend_change's ", 1)}
			}
		}
	}
	out := map[string]string{}
	n, err := fields(policy.ToolRecommendChange, m, recommendFields, out)
	notes = append(notes, n...)
	if err != nil {
		return a, notes, err
	}
	a.Kind, a.Statement, a.Rationale = out["kind"], out["statement"], out["rationale"]
	if a.Kind != contracts.RecommendIndex && a.Kind != contracts.RecommendRewrite {
		return a, notes, &argError{msg: fmt.Sprintf("recommend_change's kind %s is neither index nor rewrite; other actions belong in the report's claims", fence.Quote(a.Kind))}
	}
	if len(a.Evidence) == 0 {
		return a, notes, &argError{msg: "recommend_change needs evidence: at least one result of this run it rests on"}
	}
	return a, notes, nil
}

// callRecommendChange records one change for the user; nothing is run. An
// index recommendation that cites no plan is recorded, and told that its
// verdict needs one: the rule judges it, not this tool.
func (d *drive) callRecommendChange(ctx context.Context, _ contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodeRecommend(raw, d.producedIDs())
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(),
			`send {"kind":"index","statement":"CREATE INDEX …","rationale":"…","evidence":[`+artifactRef(d.exampleID("<the id of the result it rests on>", policy.ToolInspectPlan, policy.ToolInspectOperations, policy.ToolRunReadQuery))+`]}`)
	}
	produced := d.producedRefs()
	var unresolved []string
	for _, ref := range a.Evidence {
		if !produced(ref) {
			b, _ := json.Marshal(ref)
			unresolved = append(unresolved, string(b))
		}
	}
	if len(unresolved) > 0 {
		_, list := d.citableAt(tc.Turn)
		return false, d.refuse(ctx, tc, "", refuseUnresolved, "the recommendation cites "+strings.Join(unresolved, ", ")+", which this run did not produce", list)
	}
	// A recommendation rests on what the model saw, as a claim does.
	if unseen := d.unseen(tc.Turn, a.Evidence); len(unseen) > 0 {
		return false, d.refuseUnseen(ctx, tc, unseen, "recommend in a later turn than the plan or reading it rests on, once you have read it")
	}
	plans := d.plans()
	var diagnosed []string
	for _, ref := range a.Evidence {
		if _, ok := plans[ref.CorrelationID]; ok && ref.Source == contracts.EvidenceArtifact {
			diagnosed = append(diagnosed, ref.CorrelationID)
		}
	}
	content := fmt.Sprintf("Recommendation recorded (%s); it is offered to the user and never executed.", a.Kind)
	if len(notes) > 0 {
		content += " Read leniently: " + strings.Join(notes, "; ") + "."
	}
	if a.Kind == contracts.RecommendIndex && len(diagnosed) == 0 && slices.Contains(d.header.Tools, policy.ToolInspectPlan) {
		content += " It cites no plan: an index recommendation rests on the inspect_plan result that shows the scan it removes; cite one in a further recommendation."
	}
	return false, d.append(ctx, contracts.KindRecommendation, contracts.Recommendation{
		ToolCall: tc, Kind: a.Kind, Statement: a.Statement, Rationale: a.Rationale, Evidence: a.Evidence, Diagnosed: diagnosed,
		Content: content + d.status(tc.Turn, false, false), Normalised: notes,
	})
}

// producedRefs returns the check compose_report applies to a citation.
func (d *drive) producedRefs() func(contracts.EvidenceRef) bool {
	return verdict.ProducedBy(d.entries).Resolves
}
