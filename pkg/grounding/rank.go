package grounding

import (
	"sort"
	"strings"
	"unicode"

	"github.com/sondehq/sonde/contracts"
)

// stopWords are words of an objective that name no table.
var stopWords = map[string]bool{
	"the": true, "and": true, "for": true, "are": true, "was": true, "were": true, "what": true,
	"which": true, "who": true, "why": true, "how": true, "many": true, "much": true, "with": true,
	"from": true, "that": true, "this": true, "these": true, "those": true, "have": true, "has": true,
	"did": true, "does": true, "our": true, "their": true, "per": true, "each": true, "all": true,
	"any": true, "most": true, "top": true, "find": true, "show": true, "list": true, "give": true,
	"there": true, "into": true, "than": true, "then": true, "when": true, "where": true, "not": true,
	"get": true, "number": true, "count": true, "total": true, "data": true, "table": true, "tables": true,
	"database": true, "query": true, "please": true, "about": true, "between": true, "over": true,
}

// Words are the terms of a text that may name a relation or a column:
// lower-cased, split at anything that is not a letter or digit and at
// camelCase, stop words and one- or two-letter words dropped, simple plurals
// folded ("invoices" → "invoice", "categories" → "category").
func Words(text string) []string {
	seen := map[string]bool{}
	var out []string
	for _, w := range terms(text) {
		if len(w) < 3 || stopWords[w] || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// terms splits an identifier or a sentence into folded terms.
func terms(s string) []string {
	var out []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			out = append(out, singular(strings.ToLower(string(cur))))
			cur = cur[:0]
		}
	}
	prevLower := false
	for _, r := range s {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if unicode.IsUpper(r) && prevLower {
				flush()
			}
			cur = append(cur, r)
			prevLower = unicode.IsLower(r) || unicode.IsDigit(r)
		default:
			flush()
			prevLower = false
		}
	}
	flush()
	return out
}

func singular(w string) string {
	switch {
	case len(w) > 4 && strings.HasSuffix(w, "ies"):
		return w[:len(w)-3] + "y"
	case len(w) > 4 && (strings.HasSuffix(w, "ses") || strings.HasSuffix(w, "xes")):
		return w[:len(w)-2]
	case len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss"):
		return w[:len(w)-1]
	}
	return w
}

// Rank orders the inventory's relations by relevance to words: a term that
// is a part of the relation's name counts most, one that is part of a
// column's name less; a relation joined by a foreign key to a relevant one
// gains a little, so the tables a join needs travel together. Ties go to
// the relation more others refer to, then to tables before views, then to
// the name. It returns indexes into inv.Relations.
func Rank(inv contracts.Inventory, words []string) []int {
	want := map[string]bool{}
	for _, w := range words {
		want[w] = true
	}
	n := len(inv.Relations)
	score := make([]int, n)
	byName := make(map[string]int, n)
	for i, r := range inv.Relations {
		byName[strings.ToLower(r.QualifiedName())] = i
		for _, t := range terms(r.Name) {
			if want[t] {
				score[i] += 8
			}
		}
		hits := 0
		for _, c := range r.Columns {
			for _, t := range terms(c.Name) {
				if want[t] {
					hits++
				}
			}
		}
		score[i] += min(hits, 3) * 2
	}
	// Neighbours of relevant relations, and how often each is referred to.
	inDegree := make([]int, n)
	bonus := make([]int, n)
	for i, r := range inv.Relations {
		for _, fk := range r.ForeignKeys {
			j, ok := byName[strings.ToLower(fk.RefSchema+"."+fk.RefName)]
			if !ok || j == i {
				continue
			}
			inDegree[j]++
			if score[i] >= 8 {
				bonus[j] = 1
			}
			if score[j] >= 8 {
				bonus[i] = 1
			}
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
		score[i] += bonus[i]
	}
	sort.SliceStable(order, func(a, b int) bool {
		i, j := order[a], order[b]
		if score[i] != score[j] {
			return score[i] > score[j]
		}
		if inDegree[i] != inDegree[j] {
			return inDegree[i] > inDegree[j]
		}
		ti, tj := isTable(inv.Relations[i]), isTable(inv.Relations[j])
		if ti != tj {
			return ti
		}
		return inv.Relations[i].QualifiedName() < inv.Relations[j].QualifiedName()
	})
	return order
}

func isTable(r contracts.Relation) bool {
	return r.Kind == contracts.RelationTable || r.Kind == contracts.RelationPartitionedTable
}
