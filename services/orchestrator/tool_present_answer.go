package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/chart"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/handover"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// present_answer records which result of the run is the answer and how to
// show it: a table, or a chart checked against the result's rows. It runs
// nothing.
var presentAnswerTool = tool{
	spec: declare(policy.ToolPresentAnswer, answerParams{}, "Say which result of this run IS the answer and how to show it: as a table, or as a chart checked against its rows. Once per run; only a run_read_query result may be presented. "+
		`A chart is not a claim: afterwards call compose_report with at least one claim citing the presented result as {"source":"artifact","correlationId":"…"}.`),
	brief: "names the result that is the answer and how to show it (once)",
	call:  (*drive).callPresentAnswer,
}

// answerParams declare present_answer's arguments to the model;
// decodeAnswer reads them into answerArgs (an id in another case, a bare
// "table", a y given as one name).
type answerParams struct {
	Artifact     string `json:"artifact" doc:"the id of the run_read_query result that is the answer, e.g. r3"`
	Presentation struct {
		Kind string       `json:"kind" enum:"table,chart" doc:"table for any result (a single number, one row, no numeric column); chart for two or more rows with numeric columns"`
		Spec *chartParams `json:"spec" arg:"nullable" doc:"the chart, for kind chart; null for a table"`
	} `json:"presentation" doc:"how to show it"`
}

type chartParams struct {
	Type    string   `json:"type" enum:"bar,line,area,pie,scatter,stacked-bar" doc:"the chart type; pie takes one y column, scatter a numeric x"`
	X       string   `json:"x" doc:"the result column along the x axis (the category or period)"`
	Y       []string `json:"y" itemdoc:"a numeric result column" doc:"the numeric result columns, one series each"`
	Caption string   `json:"caption" doc:"one sentence saying what the chart shows"`
}

// answerArgs are present_answer's arguments as read.
type answerArgs struct {
	Artifact     string
	Presentation contracts.Presentation
}

// callPresentAnswer records which result is the answer and how to show it.
// A second answer is refused before the arguments are read: an argument
// refusal would invite a corrected second call.
func (d *drive) callPresentAnswer(ctx context.Context, _ contracts.ExecOp, tc contracts.ToolCall, raw string) (bool, error) {
	if rec := d.record(); rec.Answer != nil {
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerAlreadyRecorded,
			fmt.Sprintf("this run presented its answer already (%s); a run answers once", rec.Answer.CorrelationID),
			"call compose_report, citing the presented result in at least one claim")
	}
	a, notes, err := decodeAnswer(raw, d.producedIDs())
	if err != nil {
		return false, d.refuse(ctx, tc, "", refuseInvalidArguments, err.Error(),
			`send {"artifact":`+fence.Quote(d.exampleID("<the id of the run_read_query result that answers>", policy.ToolRunReadQuery))+
				`,"presentation":{"kind":"table","spec":null}} or a chart {"kind":"chart","spec":{"type":"bar","x":"…","y":["…"],"caption":"…"}}`)
	}
	st, ok := d.stepOf(a.Artifact)
	snapshot := d.snapshotID()
	switch {
	case a.Artifact == snapshot && snapshot != "":
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerStatementUnknown,
			"the schema snapshot is a catalog read the server wrote: no statement of yours produced it, so there is nothing to hand over",
			"present the result of a run_read_query that answers the question")
	case !ok:
		_, list := d.citableAt(tc.Turn)
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerArtifactUnknown,
			fmt.Sprintf("%s names no result this run produced", fence.Quote(a.Artifact)), list)
	case st.Tool == policy.ToolInspectSchema:
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerStatementUnknown,
			fmt.Sprintf("%s is a catalog read the server wrote: no statement of yours produced it", a.Artifact),
			"present the result of a run_read_query that answers the question")
	case st.Tool != policy.ToolRunReadQuery:
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerNotADataRead,
			fmt.Sprintf("%s is a %s result, not a reading of the data; it may still be cited as evidence", a.Artifact, st.Tool),
			"present the result of a run_read_query that answers the question")
	}
	// The answer is a result the model read and judged to be the answer:
	// one produced in this same turn it has not seen.
	if unseen := d.unseen(tc.Turn, []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: a.Artifact}}); len(unseen) > 0 {
		return false, d.refuseUnseen(ctx, tc, unseen, "present the answer in a later turn than the read, once you have seen its rows")
	}
	read, _, _ := decodeRead(string(st.Arguments))
	if strings.TrimSpace(read.SQL) == "" {
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerStatementUnknown,
			fmt.Sprintf("no statement of this run can be read for %s", a.Artifact), "present a result whose statement the run recorded")
	}
	art, err := d.rows(ctx, a.Artifact)
	if err != nil {
		return false, d.refuse(ctx, tc, "", contracts.RefuseAnswerResultReleased,
			fmt.Sprintf("the rows of %s are no longer held, so the presentation cannot be checked against them", a.Artifact),
			"run the statement again and present the new result")
	}
	// The one chart decision (pkg/chart), recorded with the answer: clients
	// draw what it says.
	var decided *contracts.ChartDecision
	if a.Presentation.Kind == contracts.PresentChart {
		dec, err := chart.Decide(*a.Presentation.Chart, art)
		var p *contracts.Problem
		switch {
		case errors.As(err, &p):
			return false, d.refuse(ctx, tc, "", p.Code, p.Message, p.Fix)
		case err != nil:
			return false, err
		}
		decided = &dec
	}
	ans := contracts.AnswerComposed{ToolCall: tc, CorrelationID: a.Artifact, SQL: read.SQL, Fingerprint: st.Fingerprint,
		Presentation: a.Presentation, Chart: decided, Handover: contracts.HandoverNone, Normalised: notes}
	if d.header.AutoExecute {
		ans.Handover, ans.HandoverWarning = handover.Gate(d.gateEvidence(st))
	}
	ref, _ := json.Marshal(contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: a.Artifact})
	shown := "as a table"
	if c := a.Presentation.Chart; c != nil {
		shown = fmt.Sprintf("as a %s chart of %s against %s", c.Type, quoteAll(c.Y), fence.Quote(c.X))
	}
	ans.Content = fmt.Sprintf("Answer recorded: %s %s. A chart is not a claim: call compose_report with at least one claim citing %s.", a.Artifact, shown, ref)
	switch ans.Handover {
	case contracts.HandoverAutoExecuted:
		ans.Content += " The statement is handed to the user's editor and run there."
	case contracts.HandoverApplied:
		ans.Content += " " + ans.HandoverWarning
	}
	ans.Content += d.status(tc.Turn, false, false)
	return false, d.append(ctx, contracts.KindAnswerComposed, ans)
}

// gateEvidence is what the ledger says about the answer's statement for the
// auto-execute gate: that the run executed it (joined on the guard's
// canonical fingerprint), the plan this run read of the same statement (as
// the database is, not with a hypothetical index), and its measured time.
func (d *drive) gateEvidence(answer contracts.Step) handover.Evidence {
	e := handover.Evidence{Engine: d.header.Engine, ElapsedMs: answer.DurationMs}
	for _, st := range d.record().Steps {
		if st.Status != contracts.StepCompleted || st.Fingerprint == "" || st.Fingerprint != answer.Fingerprint {
			continue
		}
		switch st.Tool {
		case policy.ToolRunReadQuery:
			e.Executed = true
		case policy.ToolInspectPlan:
			if st.Plan != nil && st.Plan.HypotheticalIndex == "" {
				e.Plan = st.Plan
			}
		}
	}
	return e
}

// stepOf finds the completed step that produced the result corr.
func (d *drive) stepOf(corr string) (contracts.Step, bool) {
	for _, st := range d.record().Steps {
		if st.Status == contracts.StepCompleted && st.Artifact != nil && st.Artifact.CorrelationID == corr {
			return st, true
		}
	}
	return contracts.Step{}, false
}

// snapshotID is the citable id of the run's schema snapshot, if it has one.
func (d *drive) snapshotID() string {
	return verdict.ProducedBy(d.entries).Snapshot
}

func quoteAll(names []string) string { return strings.Join(quoteEach(names), ", ") }

// decodeAnswer reads present_answer's arguments; ids are the run's.
func decodeAnswer(raw string, ids []string) (answerArgs, []string, error) {
	m, notes, err := object(policy.ToolPresentAnswer, raw)
	if err != nil {
		return answerArgs{}, notes, err
	}
	var a answerArgs
	for _, k := range sortedKeys(m) {
		v := m[k]
		var n []string
		switch k {
		case "artifact", "correlationId", "artifactId", "id":
			var note string
			a.Artifact, note, err = idField(policy.ToolPresentAnswer, "artifact", v, ids)
			if note != "" {
				n = append(n, note)
			}
			if k != "artifact" {
				n = append(n, fmt.Sprintf("%q read as \"artifact\"", k))
			}
		case "presentation":
			if inner, encoded := unquoted(v); encoded {
				v = inner
				n = append(n, "presentation sent as a JSON string")
			}
			a.Presentation, n, err = decodePresentation(v, n)
		default:
			err = &argError{msg: fmt.Sprintf("present_answer has no parameter %q; its parameters are: artifact, presentation", k)}
		}
		notes = append(notes, n...)
		if err != nil {
			return a, notes, err
		}
	}
	if a.Artifact == "" || a.Presentation.Kind == "" {
		return a, notes, &argError{msg: "present_answer needs \"artifact\" and \"presentation\""}
	}
	return a, notes, nil
}

// decodePresentation reads {"kind":"table"} or {"kind":"chart","spec":{…}};
// a bare "table" is read as the table presentation, and a y given as one
// name as a list of it.
func decodePresentation(v json.RawMessage, notes []string) (contracts.Presentation, []string, error) {
	var p contracts.Presentation
	var s string
	if json.Unmarshal(v, &s) == nil && s == contracts.PresentTable {
		return contracts.Presentation{Kind: contracts.PresentTable}, notes, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil || m == nil {
		return p, notes, &argError{msg: `present_answer's presentation must be {"kind":"table"} or {"kind":"chart","spec":{…}}`}
	}
	for _, k := range sortedKeys(m) {
		f := m[k]
		switch k {
		case "kind":
			if json.Unmarshal(f, &p.Kind) != nil {
				return p, notes, &argError{msg: "the presentation's kind must be \"table\" or \"chart\""}
			}
		case "spec":
			if string(bytes.TrimSpace(f)) == "null" {
				continue
			}
			if json.Unmarshal(f, &s) == nil && nullWord(s) {
				notes = append(notes, fmt.Sprintf("\"spec\": the string %q read as null", s))
				continue
			}
			if inner, encoded := unquoted(f); encoded {
				f = inner
				notes = append(notes, "spec sent as a JSON string")
			}
			c, err := decodeChart(f)
			if err != nil {
				return p, notes, err
			}
			p.Chart = &c
		default:
			return p, notes, &argError{msg: fmt.Sprintf("the presentation has no field %q; it is {\"kind\",\"spec\"}", k)}
		}
	}
	switch {
	case p.Kind == contracts.PresentTable:
		p.Chart = nil // a table needs no spec; one sent beside it is not recorded
	case p.Kind == contracts.PresentChart && p.Chart == nil:
		return p, notes, &argError{msg: "a chart presentation needs its spec: {\"type\",\"x\",\"y\",\"caption\"}"}
	case p.Kind != contracts.PresentChart:
		return p, notes, &argError{msg: fmt.Sprintf("the presentation's kind %s is neither table nor chart", fence.Quote(p.Kind))}
	}
	return p, notes, nil
}

func decodeChart(v json.RawMessage) (contracts.ChartSpec, error) {
	var c contracts.ChartSpec
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil || m == nil {
		return c, &argError{msg: "the chart spec must be an object {\"type\",\"x\",\"y\",\"caption\"}"}
	}
	for k, f := range m {
		var err error
		switch k {
		case "type":
			err = json.Unmarshal(f, &c.Type)
		case "x":
			err = json.Unmarshal(f, &c.X)
		case "caption":
			err = json.Unmarshal(f, &c.Caption)
		case "y":
			var one string
			if json.Unmarshal(f, &one) == nil {
				c.Y = []string{one}
			} else {
				err = json.Unmarshal(f, &c.Y)
			}
		case "series":
			return c, &argError{msg: "the chart spec has no series: several series are several y columns"}
		default:
			return c, &argError{msg: fmt.Sprintf("the chart spec has no field %q; it is {\"type\",\"x\",\"y\",\"caption\"} (no colours, titles or aggregations)", k)}
		}
		if err != nil {
			return c, &argError{msg: fmt.Sprintf("the chart spec's %q has the wrong type", k)}
		}
	}
	if c.Type == "" || c.X == "" {
		return c, &argError{msg: "the chart spec needs a type and an x column"}
	}
	return c, nil
}
