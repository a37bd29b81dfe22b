package grounding

import (
	"sort"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// Identifiers compares the names a statement reads (as the guard read them)
// with an inventory. inv nil means the run captured none: nothing is
// compared and the status says so, since an empty list would claim that
// every name exists. Only relations count (a sequence or a function of the
// same name does not), the engine's own catalogs are skipped, and where the
// inventory was cut short at its bound a relation missing from it is not
// reported: it may be one of those past the bound. The check prefers a miss
// to a false alarm.
func Identifiers(inv *contracts.Inventory, chk *contracts.StatementCheck) contracts.IdentifierCheck {
	switch {
	case inv == nil:
		return contracts.IdentifierCheck{Status: contracts.IdentifiersNoInventory}
	case chk == nil || len(chk.Relations) == 0 && chk.Refusal != nil:
		return contracts.IdentifierCheck{Status: contracts.IdentifiersUnread}
	}
	key := func(schema, name string) string {
		k := schema + "\x00" + name
		if chk.FoldCase {
			k = strings.ToLower(k)
		}
		return k
	}
	rels := make(map[string]*contracts.Relation, len(inv.Relations))
	for i := range inv.Relations {
		r := &inv.Relations[i]
		rels[key(r.Schema, r.Name)] = r
	}
	out := contracts.IdentifierCheck{Status: contracts.IdentifiersChecked, ColumnsChecked: chk.ColumnsRead}
	seen := map[string]bool{}
	for _, n := range chk.Relations {
		if n.System || seen[key(n.Schema, n.Name)] {
			continue
		}
		seen[key(n.Schema, n.Name)] = true
		if _, ok := rels[key(n.Schema, n.Name)]; !ok && !inv.Truncated {
			out.UnknownRelations = append(out.UnknownRelations, QualifiedName(n.Schema, n.Name))
		}
	}
	seenCol := map[string]bool{}
	for _, c := range chk.Columns {
		r, ok := rels[key(c.Relation.Schema, c.Relation.Name)]
		if !ok {
			continue // an unknown relation is reported once, above
		}
		name := QualifiedName(r.Schema, r.Name) + "." + Quote(c.Column)
		if seenCol[strings.ToLower(name)] || hasColumn(r, c.Column, chk.FoldCase) {
			continue
		}
		seenCol[strings.ToLower(name)] = true
		out.UnknownColumns = append(out.UnknownColumns, name)
	}
	sort.Strings(out.UnknownRelations)
	sort.Strings(out.UnknownColumns)
	return out
}

func hasColumn(r *contracts.Relation, col string, fold bool) bool {
	for _, c := range r.Columns {
		if c.Name == col || fold && strings.EqualFold(c.Name, col) {
			return true
		}
	}
	return false
}
