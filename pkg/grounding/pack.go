package grounding

import (
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// Defaults of PackOptions.
const (
	DefaultMaxChars          = 6000
	DefaultRelationsMaxChars = 1500
)

// PackOptions say what a packing is for and how much it may hold.
type PackOptions struct {
	// Words are the terms relations are ranked by (Words of the objective
	// and of the conversation).
	Words []string
	// MaxChars bounds the relations named, in characters of their lines
	// (default DefaultMaxChars); RelationsMaxChars bounds the foreign-key
	// block (default DefaultRelationsMaxChars).
	MaxChars          int
	RelationsMaxChars int
	// Planning leaves out any mention of a tool: a planning run has none.
	Planning bool
	// Source says who read the inventory and how, for the preface, e.g.
	// "the server, from pg_catalog, before the first turn".
	Source string
	// Label names the connection in the fence's source.
	Label string
	// NamesAndIndexes packs each relation as its name and its indexes'
	// names only, in the inventory's order, with no foreign-key block: what
	// an operations run matches the engine's readings against. Its
	// omission notice names no tool (such a run has no inspect_schema).
	NamesAndIndexes bool
}

// Packed is an inventory packed for a prompt.
type Packed struct {
	// Text is the preface, the fenced relations and relations blocks, and
	// the omission notice.
	Text string
	// Named counts the relations Text names; Omitted those it does not.
	Named, Omitted int
	// Edges and EdgesOmitted count the foreign keys shown and left out.
	Edges, EdgesOmitted int
}

// Pack ranks inv's relations by relevance to o.Words and names as many as
// fit in o.MaxChars, every identifier quoted inside the untrusted-content
// fence, then a block of the foreign keys among them (a.col → b.col) in its
// own bound. What is left out is counted in a notice outside the fence:
// relations not named, relations past the capture's bound, relations the
// readable patterns hide. Nothing is dropped without a sentence saying so.
func Pack(inv contracts.Inventory, o PackOptions) Packed {
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	if o.RelationsMaxChars <= 0 {
		o.RelationsMaxChars = DefaultRelationsMaxChars
	}
	var p Packed
	var body strings.Builder
	named := map[string]bool{}
	var chosen []contracts.Relation
	used := 0
	order := Rank(inv, o.Words)
	line := Line
	if o.NamesAndIndexes {
		order, line = inventoryOrder(len(inv.Relations)), IndexLine
	}
	for _, i := range order {
		r := inv.Relations[i]
		line := line(r)
		if used+len(line)+1 > o.MaxChars {
			continue // a shorter relation further down may still fit
		}
		used += len(line) + 1
		body.WriteString(line)
		body.WriteByte('\n')
		named[strings.ToLower(r.QualifiedName())] = true
		chosen = append(chosen, r)
	}
	p.Named = len(chosen)

	var edges strings.Builder
	edgeUsed := 0
	for _, r := range chosen {
		if o.NamesAndIndexes {
			break // names and indexes only
		}
		for _, fk := range r.ForeignKeys {
			if !named[strings.ToLower(fk.RefSchema+"."+fk.RefName)] {
				continue // only edges between named relations: the others name what the model cannot see
			}
			e := Edge(r, fk)
			if edgeUsed+len(e)+1 > o.RelationsMaxChars {
				p.EdgesOmitted++
				continue
			}
			edgeUsed += len(e) + 1
			edges.WriteString(e)
			edges.WriteByte('\n')
			p.Edges++
		}
	}

	total := max(inv.Total, len(inv.Relations))
	p.Omitted = total - p.Named

	var b strings.Builder
	noun := "relations"
	fmt.Fprintf(&b, "Schema inventory of this connection (%s), read by %s", inv.Engine, orDefault(o.Source, "the server before the first turn"))
	fmt.Fprintf(&b, ": %d readable %s", total, noun)
	switch {
	case p.Omitted > 0 && o.NamesAndIndexes:
		fmt.Fprintf(&b, ", as many as fit named below with their indexes (%d)", p.Named)
	case p.Omitted > 0:
		fmt.Fprintf(&b, ", the %d most relevant to the objective named below", p.Named)
	}
	b.WriteString(". Row counts and distinct counts are the engine's estimates, not measurements")
	if inv.StatisticsSource != "" {
		fmt.Fprintf(&b, "; they come from %s", inv.StatisticsSource)
	}
	b.WriteString(". \"no statistics\" means the engine holds none for that relation.\n")
	if p.Named > 0 {
		b.WriteString(fence.Wrap("schema inventory of connection "+o.Label, body.String()))
		b.WriteByte('\n')
	}
	if p.Edges > 0 {
		b.WriteString("Foreign keys between the relations named above:\n")
		b.WriteString(fence.Wrap("foreign keys of connection "+o.Label, edges.String()))
		b.WriteByte('\n')
	}
	if p.EdgesOmitted > 0 {
		fmt.Fprintf(&b, "%d further foreign keys between them are not shown.\n", p.EdgesOmitted)
	}
	if p.Omitted > 0 {
		fmt.Fprintf(&b, "%d further %s exist and are not named here", p.Omitted, noun)
		if o.Planning || o.NamesAndIndexes {
			b.WriteString(".\n")
		} else {
			b.WriteString(`; read them with inspect_schema: {"table":"…"} for one, {"schema":"…"} or {"pattern":"*word*"} for a listing.` + "\n")
		}
	}
	if inv.Truncated {
		fmt.Fprintf(&b, "The capture stopped at its bound of %d relations; the count above includes the ones past it.\n", inv.Limit)
	}
	if inv.Unreadable > 0 {
		fmt.Fprintf(&b, "%d more relations are outside this connection's readable patterns: they are not described and cannot be read.\n", inv.Unreadable)
	}
	if total == 0 {
		b.WriteString("The connection holds no readable relations.\n")
	}
	p.Text = b.String()
	return p
}

// inventoryOrder is the relations' own order: an operations objective
// rarely names a table, so ranking by its words would only reshuffle.
func inventoryOrder(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
