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
	{name: "depth", nullable: true}, {name: "fromColumn", aliases: []string{"from_column", "column"}, nullable: true}}

// decodeProfile reads profile_table's arguments.
func decodeProfile(raw string) (profileArgs, []string, error) {
	m, notes, err := object(policy.ToolProfileTable, raw)
	if err != nil {
		return profileArgs{}, notes, err
	}
	out := map[string]string{}
	n, err := fields(policy.ToolProfileTable, m, profileFields, out)
	notes = append(notes, n...)
	if err != nil {
		return profileArgs{}, notes, err
	}
	a := profileArgs{Table: out["table"], Depth: out["depth"], FromColumn: out["fromColumn"]}
	if a.Depth != "" && !slices.Contains(contracts.ProfileDepths, contracts.ProfileDepth(a.Depth)) {
		return a, notes, &argError{msg: fmt.Sprintf("profile_table's depth %s is none of basic, distribution, pattern", quote(a.Depth))}
	}
	return a, notes, nil
}

var operationsFields = []field{{name: "kind", aliases: []string{"reading"}, required: true}, {name: "schema", aliases: []string{"schema_name"}, nullable: true}}

// decodeOperations reads inspect_operations' arguments.
func decodeOperations(raw string) (operationsArgs, []string, error) {
	m, notes, err := object(policy.ToolInspectOperations, raw)
	if err != nil {
		return operationsArgs{}, notes, err
	}
	var a operationsArgs
	if v, ok := m["limit"]; ok {
		delete(m, "limit")
		v = bytes.TrimSpace(v)
		var word string
		if json.Unmarshal(v, &word) == nil && nullWord(word) {
			notes = append(notes, fmt.Sprintf("\"limit\": the string %q read as null", word))
		} else if string(v) != "null" {
			var n json.Number
			if err := json.Unmarshal(bytes.Trim(v, `"`), &n); err != nil {
				return a, notes, &argError{msg: "inspect_operations's limit must be a whole number"}
			}
			l, err := n.Int64()
			if err != nil || l < 1 || l > contracts.MaxOperationsRows {
				return a, notes, &argError{msg: fmt.Sprintf("inspect_operations's limit must be a whole number from 1 to %d", contracts.MaxOperationsRows)}
			}
			a.Limit = int(l)
		}
	}
	out := map[string]string{}
	n, err := fields(policy.ToolInspectOperations, m, operationsFields, out)
	notes = append(notes, n...)
	if err != nil {
		return a, notes, err
	}
	a.Kind, a.Schema = out["kind"], out["schema"]
	if !slices.Contains(contracts.OperationsKinds, contracts.OperationsKind(a.Kind)) {
		return a, notes, &argError{msg: fmt.Sprintf("inspect_operations has no kind %s; the kinds are %s", quote(a.Kind), kindList())}
	}
	return a, notes, nil
}

var planFields = append(append([]field{}, readFields...), field{name: "hypotheticalIndex", aliases: []string{"hypothetical_index", "index"}, nullable: true, statement: true})

// decodePlan reads inspect_plan's arguments.
func decodePlan(raw string) (planArgs, []string, error) {
	m, notes, err := object(policy.ToolInspectPlan, raw)
	if err != nil {
		return planArgs{}, notes, err
	}
	out := map[string]string{}
	n, err := fields(policy.ToolInspectPlan, m, planFields, out)
	return planArgs{SQL: out["sql"], Reason: out["reason"], Hypothetical: out["hypotheticalIndex"]}, append(notes, n...), err
}

// idField reads one id argument: a string, or a reference object the model
// copied whole ({"source":"artifact","correlationId":…}), resolved against
// the run's ids as evidence is (R1 for r1), and noted when it was.
func idField(tool, name string, v json.RawMessage, ids []string) (string, string, error) {
	var s string
	if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) == "" {
		var ref struct {
			CorrelationID string `json:"correlationId"`
		}
		if json.Unmarshal(v, &ref) != nil || strings.TrimSpace(ref.CorrelationID) == "" {
			return "", "", &argError{msg: fmt.Sprintf("%s's %q must be the id of a result of this run, %s", tool, name, idExample(ids))}
		}
		s = ref.CorrelationID
	}
	id, note := resolveID(quote(name), s, ids)
	return id, note, nil
}

// idExample says what an id of this run looks like, from its own ids.
func idExample(ids []string) string {
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] != "" && ids[i] != "schema" {
			return "such as " + quote(ids[i])
		}
	}
	return "as a tool result names it"
}

// decodeCompare reads compare_plans' arguments; ids are the run's.
func decodeCompare(raw string, ids []string) (compareArgs, []string, error) {
	m, notes, err := object(policy.ToolComparePlans, raw)
	if err != nil {
		return compareArgs{}, notes, err
	}
	var a compareArgs
	for _, k := range sortedKeys(m) {
		v := m[k]
		var note string
		switch k {
		case "before":
			a.Before, note, err = idField(policy.ToolComparePlans, k, v, ids)
		case "after":
			a.After, note, err = idField(policy.ToolComparePlans, k, v, ids)
		default:
			err = &argError{msg: fmt.Sprintf("compare_plans has no parameter %q; its parameters are: before, after", k)}
		}
		if err != nil {
			return a, notes, err
		}
		if note != "" {
			notes = append(notes, note)
		}
	}
	if a.Before == "" || a.After == "" {
		return a, notes, &argError{msg: "compare_plans needs \"before\" and \"after\""}
	}
	return a, notes, nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

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
	n, err := fields(policy.ToolRecommendChange, m, []field{{name: "kind", required: true}, {name: "statement", aliases: []string{"sql"}, required: true, statement: true},
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
		return p, notes, &argError{msg: fmt.Sprintf("the presentation's kind %s is neither table nor chart", quote(p.Kind))}
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
