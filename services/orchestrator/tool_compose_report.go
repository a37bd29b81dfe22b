package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// compose_report ends the run with the model's findings, every citation
// checked (report.go).
var composeReportTool = tool{
	spec: declare(policy.ToolComposeReport, reportParams{}, "Finish the run with a report. Every claim cites the evidence it rests on as "+
		`{"source":"artifact","correlationId":"…"}: the id of a result this run read, or the schema snapshot's id.`),
	brief: "ends the run with your findings",
	call:  (*drive).callComposeReport,
}

// reportParams declare compose_report's arguments to the model; they are
// read into reportArgs by decodeReport, whose lenient readings of claims
// and references (a bare id, "id" for "correlationId", a list sent as a
// string) no tag can say.
type reportParams struct {
	Claims []reportClaimParam `json:"claims" doc:"the findings, at least one"`
}

type reportClaimParam struct {
	Text     string           `json:"text" doc:"one finding, with the figures it rests on"`
	Evidence []reportRefParam `json:"evidence" doc:"what the finding rests on, at least one reference"`
}

type reportRefParam struct {
	Source        string `json:"source" enum:"artifact" doc:"always \"artifact\""`
	CorrelationID string `json:"correlationId" doc:"the id a tool result or the schema snapshot gave, e.g. r2"`
}

// reportArgs are compose_report's arguments as read.
type reportArgs struct {
	Claims []contracts.Claim `json:"claims"`
}

// callComposeReport ends the run with the report, its citations checked.
func (d *drive) callComposeReport(ctx context.Context, _ contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	a, notes, err := decodeReport(raw, d.producedIDs())
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(),
			`send {"claims":[{"text":"…","evidence":[{"source":"artifact","correlationId":"…"}]}]}`)
	}
	return d.composeReport(ctx, tc, a, notes)
}

// decodeReport reads compose_report's arguments. ids are the ids this run
// produced: an id written in another case or spaced is read as the one of
// them it names.
func decodeReport(raw string, ids []string) (reportArgs, []string, error) {
	m, notes, err := object(policy.ToolComposeReport, raw)
	if err != nil {
		return reportArgs{}, notes, err
	}
	for k := range m {
		if k != "claims" {
			return reportArgs{}, nil, &argError{msg: fmt.Sprintf("compose_report has no parameter %q; its one parameter is claims", k)}
		}
	}
	claimsRaw, encoded := unquoted(m["claims"])
	if encoded {
		notes = append(notes, "claims sent as a JSON string")
	}
	var claims []json.RawMessage
	if len(claimsRaw) == 0 || json.Unmarshal(claimsRaw, &claims) != nil {
		return reportArgs{}, notes, &argError{msg: "compose_report's claims must be a list of {\"text\",\"evidence\"} objects"}
	}
	var a reportArgs
	for i, cr := range claims {
		var c map[string]json.RawMessage
		if json.Unmarshal(cr, &c) != nil || c == nil {
			return a, notes, &argError{msg: fmt.Sprintf("claim %d is not an object with text and evidence", i+1)}
		}
		var claim contracts.Claim
		for k, v := range c {
			switch k {
			case "text", "claim", "finding":
				if json.Unmarshal(v, &claim.Text) != nil {
					return a, notes, &argError{msg: fmt.Sprintf("claim %d's text must be a string", i+1)}
				}
				if k != "text" {
					notes = append(notes, fmt.Sprintf("claim %d: %q read as \"text\"", i+1, k))
				}
			case "evidence", "citations":
				refs, n, err := evidence(i+1, v, ids)
				if err != nil {
					return a, notes, err
				}
				if k != "evidence" {
					n = append(n, fmt.Sprintf("claim %d: %q read as \"evidence\"", i+1, k))
				}
				notes = append(notes, n...)
				claim.Evidence = refs
			default:
				return a, notes, &argError{msg: fmt.Sprintf("claim %d has no field %q; a claim is {\"text\",\"evidence\"}", i+1, k)}
			}
		}
		a.Claims = append(a.Claims, claim)
	}
	sort.Strings(notes)
	return a, notes, nil
}
