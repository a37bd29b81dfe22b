// Package grounding turns a connection's inventory (contracts.Inventory)
// into what a model reads before its first turn and what inspect_schema
// answers: relations ranked by relevance to the objective, packed into a
// bounded, fenced block with a notice of what was left out; and it checks a
// drafted statement's names against the inventory.
//
// Every name in an inventory came from the database and is untrusted: the
// renderings here quote each identifier and are placed inside a fence by
// the caller (Pack does it itself).
package grounding

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// Quote writes an identifier double-quoted, doubling any quote inside: the
// form every engine Sonde serves accepts, and one that shows the name
// exactly, whatever characters it holds.
//
// A control character (a line break, a tab) is written escaped, as \n or
// \x1b: a name read from the database must not start a line of its own in
// a listing where each line is one relation.
func Quote(name string) string {
	name = strings.ReplaceAll(name, `"`, `""`)
	if strings.ContainsFunc(name, isControl) {
		var b strings.Builder
		for _, r := range name {
			if isControl(r) {
				q := strconv.QuoteRune(r)
				b.WriteString(q[1 : len(q)-1])
				continue
			}
			b.WriteRune(r)
		}
		name = b.String()
	}
	return `"` + name + `"`
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r < 0xa0 || r == 0x2028 || r == 0x2029
}

// QualifiedName writes schema.name, each part quoted.
func QualifiedName(schema, name string) string {
	if schema == "" {
		return Quote(name)
	}
	return Quote(schema) + "." + Quote(name)
}

// maxLineColumns bounds the columns a one-line rendering names; the rest are
// counted.
const maxLineColumns = 40

// Line renders a relation on one line: name, kind, estimated rows, and its
// columns with their types, nullability and primary key. Foreign keys are
// left to the relations block.
func Line(r contracts.Relation) string {
	var b strings.Builder
	b.WriteString(QualifiedName(r.Schema, r.Name))
	b.WriteString(" (")
	b.WriteString(string(r.Kind))
	b.WriteString(", ")
	b.WriteString(rowsEstimate(r))
	b.WriteString("): ")
	pk := map[string]bool{}
	for _, c := range r.PrimaryKey {
		pk[c] = true
	}
	for i, c := range r.Columns {
		if i == maxLineColumns {
			fmt.Fprintf(&b, ", … %d more columns", len(r.Columns)-maxLineColumns)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Quote(c.Name))
		if c.Type != "" {
			b.WriteByte(' ')
			b.WriteString(c.Type)
		}
		if pk[c.Name] {
			b.WriteString(" PK")
		} else if c.Nullable {
			b.WriteString(" null")
		}
	}
	if len(r.Columns) == 0 {
		b.WriteString("no columns read")
	}
	return b.String()
}

// Describe renders a relation in full, one fact per line: each column with
// its type, nullability and the engine's estimates, then the primary key,
// unique constraints, foreign keys and indexes.
func Describe(r contracts.Relation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s — %s, %s\n", QualifiedName(r.Schema, r.Name), r.Kind, rowsEstimate(r))
	for _, c := range r.Columns {
		b.WriteString("  ")
		b.WriteString(Quote(c.Name))
		if c.Type != "" {
			b.WriteByte(' ')
			b.WriteString(c.Type)
		}
		if !c.Nullable {
			b.WriteString(" not null")
		}
		if r.Stats != nil {
			if cs, ok := r.Stats.Columns[c.Name]; ok {
				b.WriteString(columnEstimates(cs))
			}
		}
		b.WriteByte('\n')
	}
	if len(r.PrimaryKey) > 0 {
		fmt.Fprintf(&b, "  primary key (%s)\n", quoteAll(r.PrimaryKey))
	}
	for _, u := range r.Unique {
		fmt.Fprintf(&b, "  unique (%s)\n", quoteAll(u))
	}
	for _, fk := range r.ForeignKeys {
		fmt.Fprintf(&b, "  foreign key (%s) → %s (%s)\n", quoteAll(fk.Columns), QualifiedName(fk.RefSchema, fk.RefName), quoteAll(fk.RefColumns))
	}
	for _, ix := range r.Indexes {
		kind := "index"
		if ix.Unique {
			kind = "unique index"
		}
		fmt.Fprintf(&b, "  %s %s (%s)\n", kind, Quote(ix.Name), quoteAll(ix.Columns))
	}
	if d := strings.TrimSpace(r.Definition); d != "" {
		b.WriteString("  as defined (comments included):\n")
		for _, line := range strings.Split(d, "\n") {
			b.WriteString("    ")
			b.WriteString(strings.TrimRight(line, " \t\r"))
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// rowsEstimate says what the engine estimates about a relation's size, or
// that it holds no statistics for it: never a guess.
func rowsEstimate(r contracts.Relation) string {
	if r.Stats == nil {
		if r.Kind == contracts.RelationView {
			return "no row estimate"
		}
		return "no statistics"
	}
	return "~" + count(r.Stats.Rows) + " rows (estimate)"
}

func columnEstimates(cs contracts.ColumnStats) string {
	var parts []string
	if cs.NullFraction != nil {
		parts = append(parts, strconv.FormatFloat(*cs.NullFraction*100, 'f', -1, 64)+"% null")
	}
	if cs.Distinct != nil {
		parts = append(parts, "~"+count(*cs.Distinct)+" distinct")
	}
	if len(parts) == 0 {
		return ""
	}
	return " (estimates: " + strings.Join(parts, ", ") + ")"
}

// count writes an estimate as a whole number with thousands separators.
func count(f float64) string {
	n := int64(f + 0.5)
	if n < 0 {
		n = 0
	}
	s := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = Quote(n)
	}
	return strings.Join(q, ", ")
}

// IndexLine renders a relation as its quoted name and the quoted names of
// its indexes (unique ones marked), or "no indexes": never a column.
func IndexLine(r contracts.Relation) string {
	var b strings.Builder
	b.WriteString(QualifiedName(r.Schema, r.Name))
	if len(r.Indexes) == 0 {
		b.WriteString(": no indexes")
		return b.String()
	}
	b.WriteString(": indexes ")
	for i, ix := range r.Indexes {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(Quote(ix.Name))
		if ix.Unique {
			b.WriteString(" (unique)")
		}
	}
	return b.String()
}

// Edge renders one foreign key as a.col → b.col (columns paired in order).
func Edge(from contracts.Relation, fk contracts.ForeignKey) string {
	var parts []string
	for i, c := range fk.Columns {
		ref := ""
		if i < len(fk.RefColumns) {
			ref = "." + Quote(fk.RefColumns[i])
		}
		parts = append(parts, QualifiedName(from.Schema, from.Name)+"."+Quote(c)+" → "+QualifiedName(fk.RefSchema, fk.RefName)+ref)
	}
	return strings.Join(parts, "; ")
}
