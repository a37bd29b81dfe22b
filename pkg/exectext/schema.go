package exectext

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/grounding"
)

// schema renders a schema read (inspect_schema): the server's line (what
// the selection matched, how to cite it, what the readable patterns hide),
// then, fenced — every name is the database's — the relations described in
// full, or one page of their names with how to ask for the next.
func schema(req contracts.ExecRequest, sum contracts.ArtifactSummary, p *contracts.SchemaPage) string {
	head := fmt.Sprintf("Schema of connection %s, %s: ", req.ConnectionID, selection(req.Schema, req.Table, p.Pattern))
	cite := fmt.Sprintf(" Cite it as %s.\n", evidence(sum.CorrelationID))
	hidden := ""
	if p.Unreadable > 0 {
		hidden = fmt.Sprintf("%d relations outside this connection's readable patterns are not listed.\n", p.Unreadable)
	}
	source := "schema read from connection " + req.ConnectionID
	switch {
	case p.Matched == 0:
		return head + "no readable relation matches." + cite + hidden +
			`List what exists with inspect_schema {} or {"pattern":"*word*"}.` + "\n"
	case p.Described:
		var body strings.Builder
		for _, r := range p.Relations {
			body.WriteString(grounding.Describe(r))
		}
		return head + plural(len(p.Relations), "relation") + " described." + cite + hidden + fence.Wrap(source, body.String())
	}
	var body strings.Builder
	for _, r := range p.Relations {
		body.WriteString(grounding.QualifiedName(r.Schema, r.Name) + " (" + string(r.Kind) + ")\n")
	}
	start, end := p.From-1, p.From-1+len(p.Relations)
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d readable relations match; this page lists %d of them (%d to %d).%s%s", head, p.Matched, len(p.Relations), start+1, end, cite, hidden)
	if end < p.Matched && len(p.Relations) > 0 {
		args := map[string]string{"after": p.Relations[len(p.Relations)-1].QualifiedName()}
		if req.Schema != "" {
			args["schema"] = req.Schema
		}
		if req.Table != "" {
			args["table"] = req.Table
		}
		if req.Pattern != "" {
			args["pattern"] = req.Pattern
		}
		a, _ := json.Marshal(args)
		fmt.Fprintf(&b, "%d more follow: ask for the next page with inspect_schema %s, or narrow with {\"pattern\":\"*word*\"}; describe one with {\"table\":\"…\"}.\n", p.Matched-end, a)
	} else {
		b.WriteString(`That is the last page. Describe one with inspect_schema {"table":"…"}.` + "\n")
	}
	b.WriteString(fence.Wrap(source, body.String()))
	return b.String()
}

// selection says what a schema read asked for.
func selection(schema, table, pattern string) string {
	var parts []string
	if schema != "" {
		parts = append(parts, "schema "+grounding.Quote(schema))
	}
	if table != "" {
		parts = append(parts, "table "+grounding.Quote(table))
	}
	if pattern != "" {
		parts = append(parts, "pattern "+grounding.Quote(pattern))
	}
	if len(parts) == 0 {
		return "every readable relation"
	}
	return strings.Join(parts, ", ")
}
