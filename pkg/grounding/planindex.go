package grounding

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/guard"
)

// IndexDraft is a planning run's statement read as one CREATE INDEX on
// plain columns: the index a query optimisation recommends for the user to
// review and apply. Nothing here creates it; the reader only says what the
// statement names, so its table and columns can be checked against the
// inventory.
type IndexDraft struct {
	// Unique is set for CREATE UNIQUE INDEX.
	Unique bool
	// Schema is empty when the statement did not qualify the table.
	Schema, Table string
	// Columns are the key columns, Include the INCLUDE columns, as named.
	Columns, Include []string
	// Predicate is the WHERE of a partial index as written, "" for none;
	// its names are not checked.
	Predicate string
}

// ident is one name as written: quoted names keep their case everywhere.
type ident struct {
	text   string
	quoted bool
}

// token is one lexical token of a statement.
type token struct {
	kind byte // 'i' identifier or keyword, 'q' quoted identifier, 's' string, 'n' number, 'p' punctuation
	text string
	pos  int // where it begins in the statement
}

// ReadIndex reads sql as exactly one CREATE [UNIQUE] [CLUSTERED |
// NONCLUSTERED] INDEX [CONCURRENTLY] [IF NOT EXISTS] [name] ON [ONLY] table
// [USING method] (column [ASC|DESC] [NULLS FIRST|LAST], …) [INCLUDE (…)]
// [WHERE predicate] — plain columns only, a predicate that calls nothing
// and holds no subquery. Anything else (an expression key, options, a
// second statement, a comment it cannot close) is not read: what it does
// not read it does not vouch for, and the statement is then judged as any
// other draft. ok is false then.
func ReadIndex(sql string, engine contracts.Engine) (IndexDraft, bool) {
	var ix IndexDraft
	toks, ok := lexSQL(sql)
	if !ok {
		return ix, false
	}
	for len(toks) > 0 && toks[len(toks)-1].text == ";" {
		toks = toks[:len(toks)-1]
	}
	p := &tokens{toks: toks}
	if !p.keyword("create") {
		return ix, false
	}
	ix.Unique = p.keyword("unique")
	if engine == contracts.EngineMSSQL {
		_ = p.keyword("clustered") || p.keyword("nonclustered")
	}
	if !p.keyword("index") {
		return ix, false
	}
	_ = p.keyword("concurrently")
	if p.keyword("if") && !(p.keyword("not") && p.keyword("exists")) {
		return ix, false
	}
	if !p.keyword("on") {
		if _, ok := p.qualified(); !ok || !p.keyword("on") {
			return ix, false
		}
	}
	_ = p.keyword("only")
	name, ok := p.qualified()
	if !ok {
		return ix, false
	}
	// Under NamesExact (PostgreSQL) the parser folds an unquoted name to
	// lower case; an undeclared engine's names are kept as written.
	spec, known := enginespec.Lookup(engine)
	lower := known && spec.Names == guard.NamesExact
	fold := func(id ident) string {
		if lower && !id.quoted {
			return strings.ToLower(id.text)
		}
		return id.text
	}
	if len(name) == 2 {
		ix.Schema = fold(name[0])
	}
	ix.Table = fold(name[len(name)-1])
	if p.keyword("using") {
		if _, ok := p.ident(); !ok {
			return ix, false
		}
	}
	keys, ok := p.columnList(true)
	if !ok || len(keys) == 0 {
		return ix, false
	}
	for _, k := range keys {
		ix.Columns = append(ix.Columns, fold(k))
	}
	if p.keyword("include") {
		inc, ok := p.columnList(false)
		if !ok || len(inc) == 0 {
			return ix, false
		}
		for _, k := range inc {
			ix.Include = append(ix.Include, fold(k))
		}
	}
	if p.keyword("where") {
		rest := p.toks[p.i:]
		if len(rest) == 0 || !plainPredicate(rest) {
			return ix, false
		}
		ix.Predicate = strings.TrimSpace(strings.TrimRight(strings.TrimSpace(sql[rest[0].pos:]), ";"))
		p.i = len(p.toks)
	}
	return ix, p.i == len(p.toks)
}

// plainPredicate accepts a partial index's predicate that calls nothing
// and reads nothing: names, literals, operators, IN lists.
func plainPredicate(toks []token) bool {
	for i, t := range toks {
		if t.kind == 'i' && (strings.EqualFold(t.text, "select") || strings.EqualFold(t.text, "exists")) {
			return false
		}
		if t.text == "(" && i > 0 && (toks[i-1].kind == 'i' || toks[i-1].kind == 'q') && !strings.EqualFold(toks[i-1].text, "in") &&
			!slices.ContainsFunc([]string{"and", "or", "not"}, func(k string) bool { return strings.EqualFold(toks[i-1].text, k) }) {
			return false // a call
		}
	}
	return true
}

// tokens walks a statement's tokens.
type tokens struct {
	toks []token
	i    int
}

func (p *tokens) keyword(k string) bool {
	if p.i < len(p.toks) && p.toks[p.i].kind == 'i' && strings.EqualFold(p.toks[p.i].text, k) {
		p.i++
		return true
	}
	return false
}

func (p *tokens) punct(s string) bool {
	if p.i < len(p.toks) && p.toks[p.i].kind == 'p' && p.toks[p.i].text == s {
		p.i++
		return true
	}
	return false
}

func (p *tokens) ident() (ident, bool) {
	if p.i >= len(p.toks) {
		return ident{}, false
	}
	t := p.toks[p.i]
	switch t.kind {
	case 'i':
		p.i++
		return ident{text: t.text}, true
	case 'q':
		p.i++
		return ident{text: t.text, quoted: true}, true
	}
	return ident{}, false
}

// qualified reads name or schema.name.
func (p *tokens) qualified() ([]ident, bool) {
	a, ok := p.ident()
	if !ok {
		return nil, false
	}
	if !p.punct(".") {
		return []ident{a}, true
	}
	b, ok := p.ident()
	if !ok {
		return nil, false
	}
	return []ident{a, b}, true
}

// columnList reads ( column [ASC|DESC] [NULLS FIRST|LAST], … ); ordering
// words only where keys allows them.
func (p *tokens) columnList(keys bool) ([]ident, bool) {
	if !p.punct("(") {
		return nil, false
	}
	var out []ident
	for {
		c, ok := p.ident()
		if !ok {
			return nil, false
		}
		out = append(out, c)
		if keys {
			_ = p.keyword("asc") || p.keyword("desc")
			if p.keyword("nulls") && !(p.keyword("first") || p.keyword("last")) {
				return nil, false
			}
		}
		if p.punct(")") {
			return out, true
		}
		if !p.punct(",") {
			return nil, false
		}
	}
}

// lexSQL splits sql into tokens, comments dropped. ok is false for a
// string, quoted name or comment left open, a dollar-quoted body, or a
// semicolon before the last token: those are not one plain statement.
func lexSQL(sql string) ([]token, bool) {
	var out []token
	for i := 0; i < len(sql); {
		c := sql[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(sql) && sql[i+1] == '*':
			end := strings.Index(sql[i+2:], "*/")
			if end < 0 {
				return nil, false
			}
			i += end + 4
		case c == '\'' || c == '"' || c == '`' || c == '[':
			closer := c
			if c == '[' {
				closer = ']'
			}
			text, next, ok := guard.ReadQuoted(sql, i, closer)
			if !ok {
				return nil, false
			}
			kind := byte('q')
			if c == '\'' {
				kind = 's'
			}
			out = append(out, token{kind: kind, text: text, pos: i})
			i = next
		case c == '$':
			return nil, false // dollar quoting or a parameter: not an index on plain columns
		case isWordByte(c):
			j := i
			for j < len(sql) && (isWordByte(sql[j]) || sql[j] >= '0' && sql[j] <= '9') {
				j++
			}
			out = append(out, token{kind: 'i', text: sql[i:j], pos: i})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(sql) && (sql[j] >= '0' && sql[j] <= '9' || sql[j] == '.') {
				j++
			}
			out = append(out, token{kind: 'n', text: sql[i:j], pos: i})
			i = j
		default:
			out = append(out, token{kind: 'p', text: string(c), pos: i})
			i++
		}
	}
	for k, t := range out {
		if t.kind == 'p' && t.text == ";" && slices.ContainsFunc(out[k:], func(u token) bool { return u.text != ";" || u.kind != 'p' }) {
			return nil, false
		}
	}
	return out, true
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// IndexCheck is what the identifier check reads in an index draft: its
// table and its key and INCLUDE columns, as a statement check, so
// Identifiers and Nearest compare it with the inventory as they do a
// read. An unqualified table is the inventory's relation of that name in
// the engine's default schema, else its only relation of that name.
func IndexCheck(inv *contracts.Inventory, ix IndexDraft, engine contracts.Engine) *contracts.StatementCheck {
	// An engine the list does not hold compares exactly and has no default
	// schema: nothing is matched by a folding it may not do.
	spec, _ := enginespec.Lookup(engine)
	fold := enginespec.FoldsCase(engine)
	schema := ix.Schema
	if schema == "" && inv != nil {
		var found []string
		for _, r := range inv.Relations {
			if r.Name == ix.Table || fold && strings.EqualFold(r.Name, ix.Table) {
				found = append(found, r.Schema)
			}
		}
		switch {
		case slices.Contains(found, spec.DefaultSchema):
			schema = spec.DefaultSchema
		case len(found) == 1:
			schema = found[0]
		}
	}
	if schema == "" {
		schema = spec.DefaultSchema
	}
	rel := contracts.NameRef{Schema: schema, Name: ix.Table}
	chk := &contracts.StatementCheck{Relations: []contracts.NameRef{rel}, ColumnsRead: true, FoldCase: fold}
	for _, c := range append(slices.Clone(ix.Columns), ix.Include...) {
		chk.Columns = append(chk.Columns, contracts.ColumnRef{Relation: rel, Column: c})
	}
	return chk
}

// Nearest names, for each name chk reads that inv lacks, the names the
// inventory does hold that are spelled closest to it ("instead of X: Y"),
// tables first, each sorted, so a model told its draft names something
// unknown can correct the spelling rather than guess. A column with no
// close match is answered with the columns its table has (the first
// twelve). Nothing is said when inv is nil or was cut short
// (a relation missing from it may exist).
func Nearest(inv *contracts.Inventory, chk *contracts.StatementCheck) []string {
	if inv == nil || chk == nil {
		return nil
	}
	key := func(s string) string {
		if chk.FoldCase {
			return strings.ToLower(s)
		}
		return s
	}
	find := func(n contracts.NameRef) *contracts.Relation {
		for i := range inv.Relations {
			r := &inv.Relations[i]
			if key(r.Schema) == key(n.Schema) && key(r.Name) == key(n.Name) {
				return r
			}
		}
		return nil
	}
	var rels, cols []string
	seen := map[string]bool{}
	for _, n := range chk.Relations {
		q := QualifiedName(n.Schema, n.Name)
		if n.System || inv.Truncated || find(n) != nil || seen[q] {
			continue
		}
		seen[q] = true
		var names []string
		for _, r := range inv.Relations {
			names = append(names, r.Name)
		}
		near := closest(n.Name, names)
		var qs []string
		for _, m := range near {
			for _, r := range inv.Relations {
				if r.Name == m {
					qs = append(qs, QualifiedName(r.Schema, r.Name))
				}
			}
		}
		if len(qs) > 0 {
			rels = append(rels, fmt.Sprintf("instead of %s: %s", q, strings.Join(qs, " or ")))
		} else {
			rels = append(rels, "instead of "+q+": no table spelled like it")
		}
	}
	for _, c := range chk.Columns {
		r := find(c.Relation)
		if r == nil {
			continue
		}
		q := QualifiedName(r.Schema, r.Name) + "." + Quote(c.Column)
		if seen[strings.ToLower(q)] || hasColumn(r, c.Column, chk.FoldCase) {
			continue
		}
		seen[strings.ToLower(q)] = true
		var names []string
		for _, rc := range r.Columns {
			names = append(names, rc.Name)
		}
		near := closest(c.Column, names)
		what, sep := "", " or "
		if len(near) == 0 {
			near, what, sep = names[:min(len(names), 12)], "one of its columns, ", ", "
		}
		quoted := make([]string, len(near))
		for i, m := range near {
			quoted[i] = Quote(m)
		}
		cols = append(cols, fmt.Sprintf("instead of %s: %s%s", q, what, strings.Join(quoted, sep)))
	}
	sort.Strings(rels)
	sort.Strings(cols)
	return append(rels, cols...)
}

// closest returns up to three of names within a small edit distance of
// name (case aside), closest first: a third of its length, at least two.
func closest(name string, names []string) []string {
	type cand struct {
		name string
		d    int
	}
	limit := max(2, len(name)/3)
	var cs []cand
	for _, n := range names {
		if d := editDistance(strings.ToLower(name), strings.ToLower(n)); d <= limit && d > 0 || d == 0 && n != name {
			cs = append(cs, cand{n, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].d < cs[j].d })
	var out []string
	for _, c := range cs[:min(len(cs), 3)] {
		out = append(out, c.name)
	}
	return out
}

// editDistance is the Levenshtein distance of a and b, by byte.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
