package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// Decoders of the specialist tools' arguments: the declared shape, and the
// few lenient readings the read tools also allow.

var profileFields = []field{{name: "table", aliases: []string{"table_name", "tableName", "name"}, required: true},
	{name: "depth"}, {name: "fromColumn", aliases: []string{"from_column", "column"}}}

func decodeProfile(raw string) (profileArgs, []string, error) {
	m, err := object(raw)
	if err != nil {
		return profileArgs{}, nil, err
	}
	out := map[string]string{}
	notes, err := fields(policy.ToolProfileTable, m, profileFields, out)
	if err != nil {
		return profileArgs{}, notes, err
	}
	a := profileArgs{Table: out["table"], Depth: out["depth"], FromColumn: out["fromColumn"]}
	if a.Depth != "" && !slices.Contains(contracts.ProfileDepths, contracts.ProfileDepth(a.Depth)) {
		return a, notes, &argError{msg: fmt.Sprintf("profile_table's depth %s is none of basic, distribution, pattern", quote(a.Depth))}
	}
	return a, notes, nil
}

var operationsFields = []field{{name: "kind", aliases: []string{"reading"}, required: true}, {name: "schema", aliases: []string{"schema_name"}}}

func decodeOperations(raw string) (operationsArgs, []string, error) {
	m, err := object(raw)
	if err != nil {
		return operationsArgs{}, nil, err
	}
	var a operationsArgs
	if v, ok := m["limit"]; ok {
		delete(m, "limit")
		v = bytes.TrimSpace(v)
		if string(v) != "null" {
			var n json.Number
			if err := json.Unmarshal(bytes.Trim(v, `"`), &n); err != nil {
				return a, nil, &argError{msg: "inspect_operations's limit must be a whole number"}
			}
			l, err := n.Int64()
			if err != nil || l < 1 || l > contracts.MaxOperationsRows {
				return a, nil, &argError{msg: fmt.Sprintf("inspect_operations's limit must be a whole number from 1 to %d", contracts.MaxOperationsRows)}
			}
			a.Limit = int(l)
		}
	}
	out := map[string]string{}
	notes, err := fields(policy.ToolInspectOperations, m, operationsFields, out)
	if err != nil {
		return a, notes, err
	}
	a.Kind, a.Schema = out["kind"], out["schema"]
	if !slices.Contains(contracts.OperationsKinds, contracts.OperationsKind(a.Kind)) {
		return a, notes, &argError{msg: fmt.Sprintf("inspect_operations has no kind %s; the kinds are %s", quote(a.Kind), kindList())}
	}
	return a, notes, nil
}

var planFields = append(append([]field{}, readFields...), field{name: "hypotheticalIndex", aliases: []string{"hypothetical_index", "index"}})

// decodePlan reads inspect_plan's arguments.
func decodePlan(raw string) (planArgs, []string, error) {
	m, err := object(raw)
	if err != nil {
		return planArgs{}, nil, err
	}
	out := map[string]string{}
	notes, err := fields(policy.ToolInspectPlan, m, planFields, out)
	return planArgs{SQL: out["sql"], Reason: out["reason"], Hypothetical: out["hypotheticalIndex"]}, notes, err
}

// idField reads one id argument: a string, or a reference object the model
// copied whole ({"source":"artifact","correlationId":"r2"}).
func idField(tool, name string, v json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(v, &s) == nil && strings.TrimSpace(s) != "" {
		return strings.TrimSpace(s), nil
	}
	var ref struct {
		CorrelationID string `json:"correlationId"`
	}
	if json.Unmarshal(v, &ref) == nil && ref.CorrelationID != "" {
		return ref.CorrelationID, nil
	}
	return "", &argError{msg: fmt.Sprintf("%s's %q must be a result id such as \"r2\"", tool, name)}
}

func decodeCompare(raw string) (compareArgs, error) {
	m, err := object(raw)
	if err != nil {
		return compareArgs{}, err
	}
	var a compareArgs
	for k, v := range m {
		switch k {
		case "before":
			a.Before, err = idField(policy.ToolComparePlans, k, v)
		case "after":
			a.After, err = idField(policy.ToolComparePlans, k, v)
		default:
			err = &argError{msg: fmt.Sprintf("compare_plans has no parameter %q; its parameters are: before, after", k)}
		}
		if err != nil {
			return a, err
		}
	}
	if a.Before == "" || a.After == "" {
		return a, &argError{msg: "compare_plans needs \"before\" and \"after\""}
	}
	return a, nil
}

func decodeRecommend(raw string, ids []string) (recommendArgs, []string, error) {
	m, err := object(raw)
	if err != nil {
		return recommendArgs{}, nil, err
	}
	var a recommendArgs
	var notes []string
	if ev, ok := m["evidence"]; ok {
		delete(m, "evidence")
		if string(bytes.TrimSpace(ev)) != "null" {
			a.Evidence, notes, err = evidence(1, ev, ids)
			if err != nil {
				return a, notes, &argError{msg: strings.Replace(err.Error(), "claim 1's ", "recommend_change's ", 1)}
			}
		}
	}
	out := map[string]string{}
	n, err := fields(policy.ToolRecommendChange, m, []field{{name: "kind", required: true}, {name: "statement", aliases: []string{"sql"}, required: true},
		{name: "rationale", aliases: []string{"reason"}, required: true}}, out)
	notes = append(notes, n...)
	if err != nil {
		return a, notes, err
	}
	a.Kind, a.Statement, a.Rationale = out["kind"], out["statement"], out["rationale"]
	if a.Kind != contracts.RecommendIndex && a.Kind != contracts.RecommendRewrite {
		return a, notes, &argError{msg: fmt.Sprintf("recommend_change's kind %s is neither index nor rewrite; other actions belong in the report's claims", quote(a.Kind))}
	}
	if len(a.Evidence) == 0 {
		return a, notes, &argError{msg: "recommend_change needs evidence: at least one result of this run it rests on"}
	}
	return a, notes, nil
}

func decodeAnswer(raw string) (answerArgs, error) {
	m, err := object(raw)
	if err != nil {
		return answerArgs{}, err
	}
	var a answerArgs
	for k, v := range m {
		switch k {
		case "artifact", "correlationId", "artifactId", "id":
			a.Artifact, err = idField(policy.ToolPresentAnswer, "artifact", v)
		case "presentation":
			a.Presentation, err = decodePresentation(v)
		default:
			err = &argError{msg: fmt.Sprintf("present_answer has no parameter %q; its parameters are: artifact, presentation", k)}
		}
		if err != nil {
			return a, err
		}
	}
	if a.Artifact == "" || a.Presentation.Kind == "" {
		return a, &argError{msg: "present_answer needs \"artifact\" and \"presentation\""}
	}
	return a, nil
}

// decodePresentation reads {"kind":"table"} or {"kind":"chart","spec":{…}};
// a bare "table" is read as the table presentation, and a y given as one
// name as a list of it.
func decodePresentation(v json.RawMessage) (contracts.Presentation, error) {
	var p contracts.Presentation
	var s string
	if json.Unmarshal(v, &s) == nil && s == contracts.PresentTable {
		return contracts.Presentation{Kind: contracts.PresentTable}, nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(v, &m) != nil || m == nil {
		return p, &argError{msg: `present_answer's presentation must be {"kind":"table"} or {"kind":"chart","spec":{…}}`}
	}
	for k, f := range m {
		switch k {
		case "kind":
			if json.Unmarshal(f, &p.Kind) != nil {
				return p, &argError{msg: "the presentation's kind must be \"table\" or \"chart\""}
			}
		case "spec":
			if string(bytes.TrimSpace(f)) == "null" {
				continue
			}
			c, err := decodeChart(f)
			if err != nil {
				return p, err
			}
			p.Chart = &c
		default:
			return p, &argError{msg: fmt.Sprintf("the presentation has no field %q; it is {\"kind\",\"spec\"}", k)}
		}
	}
	switch {
	case p.Kind == contracts.PresentTable:
		p.Chart = nil // a table needs no spec; one sent beside it is not recorded
	case p.Kind == contracts.PresentChart && p.Chart == nil:
		return p, &argError{msg: "a chart presentation needs its spec: {\"type\",\"x\",\"y\",\"caption\"}"}
	case p.Kind != contracts.PresentChart:
		return p, &argError{msg: fmt.Sprintf("the presentation's kind %s is neither table nor chart", quote(p.Kind))}
	}
	return p, nil
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
