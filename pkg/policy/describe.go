package policy

import (
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// Described is one workflow as callers are told of it: what GET
// /api/agent/config serves, and what MCP's and the CLI's help list. Every
// surface that names the workflows reads Describe, never a copy.
type Described struct {
	Type  contracts.WorkflowType
	Label string
	Goal  string
	// Agent: agent runs of the workflow are driven (planning runs always
	// are).
	Agent bool
	// AutoExecute: an agent run may hand its answer to the editor.
	AutoExecute bool
}

// Describe lists the workflows in the table, in contracts.WorkflowTypes'
// order.
func Describe() []Described {
	out := make([]Described, 0, len(contracts.WorkflowTypes))
	for _, w := range contracts.WorkflowTypes {
		r, ok := Workflows[w]
		if !ok {
			continue
		}
		out = append(out, Described{Type: w, Label: r.Label, Goal: r.Goal, Agent: len(r.AgentTools) > 0, AutoExecute: r.AutoExecute})
	}
	return out
}

// List names the workflows for a sentence, in Describe's order: each name
// passes through name (which may add to it, e.g. "(default)"), joined by
// ", " and the last by last (", " or " or ").
func List(name func(contracts.WorkflowType) string, last string) string {
	ws := Describe()
	var b strings.Builder
	for i, w := range ws {
		switch {
		case i == 0:
		case i == len(ws)-1:
			b.WriteString(last)
		default:
			b.WriteString(", ")
		}
		n := string(w.Type)
		if name != nil {
			n = name(w.Type)
		}
		b.WriteString(n)
	}
	return b.String()
}
