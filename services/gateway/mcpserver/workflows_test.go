package mcpserver

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// TestStartInvestigationListsTheWorkflowTable: the workflow argument of
// start_investigation names exactly the workflow table's workflows, in its
// order, and no other.
func TestStartInvestigationListsTheWorkflowTable(t *testing.T) {
	sch, err := jsonschema.For[startIn](&jsonschema.ForOptions{})
	if err != nil {
		t.Fatal(err)
	}
	workflowDescription(sch)
	desc := sch.Properties["workflow"].Description
	var named []string
	for _, part := range strings.Split(strings.ReplaceAll(desc, " or ", ", "), ", ") {
		named = append(named, strings.TrimSuffix(part, " (default)"))
	}
	var want []string
	for _, w := range policy.Describe() {
		want = append(want, string(w.Type))
	}
	if !slices.Equal(named, want) || !strings.Contains(desc, string(contracts.WorkflowInvestigation)+" (default)") {
		t.Errorf("workflow described as %q, the table holds %v", desc, want)
	}
}
