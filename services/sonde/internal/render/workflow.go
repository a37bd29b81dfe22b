// Package render writes what a run recorded for a terminal: plans read,
// plan comparisons, recommendations, table profiles, operational readings
// and the presented answer (a table, or a chart drawn as a small text table
// of its series, as the server decided it).
//
// Everything printed here may hold database text (names, values, plan
// steps) or model text, both of which an attacker can shape. Every such
// string passes through Clean, which escapes control characters so nothing
// can move the cursor, recolour the terminal or forge a line of output, and
// every string and table is bounded.
package render

import (
	"encoding/json"
	"io"

	"github.com/sondehq/sonde/contracts"
)

// Tool names as the ledger records them.
const (
	toolInspectPlan       = "inspect_plan"
	toolInspectOperations = "inspect_operations"
)

// Source fetches one stored result of the run being printed. A nil
// source prints what the record holds and says the rows were not fetched.
type Source func(correlationID string) (contracts.Artifact, error)

// Workflow prints each section the record holds, in the order a
// reader follows a run: plans, comparisons, recommendations, profiles,
// readings, then the answer. It prints nothing for a run that recorded none
// of them (an investigation that read no plan).
func Workflow(out io.Writer, r contracts.Record, fetch Source) {
	printPlansRead(out, r)
	printComparisons(out, r.Comparisons)
	printRecommendations(out, r.Recommendations)
	printProfiles(out, r.Profiles)
	printReadings(out, r, fetch)
	printAnswer(out, r, fetch)
}

// stepArg is one string argument of a step as the model sent it.
func stepArg(s contracts.Step, name string) string {
	var args map[string]any
	if json.Unmarshal(s.Arguments, &args) != nil {
		return ""
	}
	v, _ := args[name].(string)
	return v
}

func stepCorrelation(s contracts.Step) string {
	if s.Artifact != nil {
		return s.Artifact.CorrelationID
	}
	return s.CorrelationID
}
