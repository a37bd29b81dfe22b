package guard

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/sondehq/sonde/contracts"
)

// NameRule is how an engine compares identifiers once its parser has read
// them. Readable patterns and large-table keys are written in the engine's
// own identifier syntax and compared by the same rule.
type NameRule int

const (
	// NamesFold compares case-insensitively (DuckDB, SQL Server). It is the
	// zero value.
	NamesFold NameRule = iota
	// NamesExact compares exactly (PostgreSQL): the reader already folded
	// unquoted names to lower case as the parser does, and a pattern's
	// unquoted parts fold the same way while "quoted" parts keep their case.
	NamesExact
	// NamesASCIIFold compares with only the ASCII letters folded (SQLite).
	NamesASCIIFold
)

// String names the rule for messages and tests.
func (r NameRule) String() string {
	switch r {
	case NamesExact:
		return "exact"
	case NamesASCIIFold:
		return "ascii-fold"
	default:
		return "fold"
	}
}

// namePart is one part (schema or name) of a pattern.
type namePart struct {
	text   string // as the engine reads it: unquoted parts folded under NamesExact
	quoted bool
}

// wild reports whether the part holds a '*' wildcard; inside quotes a '*' is
// an ordinary character.
func (n namePart) wild() bool { return !n.quoted && strings.Contains(n.text, "*") }

// pattern is a parsed readable pattern or large-table key.
type pattern struct {
	raw       string
	schema    namePart // zero when not qualified
	name      namePart
	qualified bool
	all       bool // "*" or "*.*": every schema, every table
}

// ValidatePattern reports whether p is a readable pattern (or large-table
// key) the rule can read: "table", "schema.table", "*", "schema.*", with
// parts quoted as the engine quotes identifiers. Configuration loading uses it
// to name a bad pattern instead of letting it match nothing.
func ValidatePattern(p string, rule NameRule) error {
	_, err := parsePattern(p, rule)
	return err
}

// parsePattern splits p into its schema and name in the rule's syntax:
// "double quotes" everywhere, [brackets] for NamesFold and NamesASCIIFold,
// `backticks` for NamesASCIIFold. A dot inside quotes is part of the name.
func parsePattern(p string, rule NameRule) (pattern, error) {
	parts, err := splitName(p, rule)
	if err != nil {
		return pattern{}, err
	}
	out := pattern{raw: p}
	switch len(parts) {
	case 1:
		out.name = parts[0]
		out.all = !parts[0].quoted && parts[0].text == "*"
	case 2:
		out.schema, out.name, out.qualified = parts[0], parts[1], true
		out.all = !parts[0].quoted && parts[0].text == "*" && !parts[1].quoted && parts[1].text == "*"
	default:
		return pattern{}, fmt.Errorf("table pattern %q has %d parts; write table or schema.table", p, len(parts))
	}
	return out, nil
}

// splitName reads dot-separated identifier parts.
func splitName(s string, rule NameRule) ([]namePart, error) {
	var parts []namePart
	i := 0
	for {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return nil, fmt.Errorf("table pattern %q has an empty part", s)
		}
		var part namePart
		if closer, ok := quoteCloser(s[i], rule); ok {
			text, next, closed := ReadQuoted(s, i, closer)
			if !closed {
				return nil, fmt.Errorf("table pattern %q has an unclosed %c", s, s[i])
			}
			if text == "" {
				return nil, fmt.Errorf("table pattern %q has an empty quoted part", s)
			}
			part = namePart{text: text, quoted: true}
			i = next
		} else {
			j := i
			for j < len(s) && s[j] != '.' && !isSpace(s[j]) {
				if c := s[j]; !(c == '_' || c == '$' || c == '#' || c == '@' || c == '*' || c >= 0x80 ||
					'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
					return nil, fmt.Errorf("table pattern %q: %q cannot appear in an unquoted name; quote the name as the engine does", s, c)
				}
				j++
			}
			if j == i {
				return nil, fmt.Errorf("table pattern %q has an empty part", s)
			}
			part = namePart{text: s[i:j]}
			if rule == NamesExact {
				part.text = asciiLower(part.text) // as PostgreSQL's parser folds an unquoted name
			}
			i = j
		}
		parts = append(parts, part)
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i == len(s) {
			return parts, nil
		}
		if s[i] != '.' {
			return nil, fmt.Errorf("table pattern %q: expected a dot after %q", s, s[:i])
		}
		i++
	}
}

func quoteCloser(c byte, rule NameRule) (byte, bool) {
	switch {
	case c == '"':
		return '"', true
	case c == '[' && rule != NamesExact:
		return ']', true
	case c == '`' && rule == NamesASCIIFold:
		return '`', true
	}
	return 0, false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// strict is the comparison that admits: names the engine certainly treats as
// one. Under NamesFold only ASCII letters fold, since collations differ on the
// rest; a name that differs beyond that is refused, never admitted.
func (r NameRule) strict(s string) string {
	if r == NamesExact {
		return s
	}
	return asciiLower(s)
}

// loose is the comparison that marks large tables: any two names that some
// case folding could make one, so that a bound is asked for whenever the
// engine might read the large table.
func loose(s string) string {
	var b strings.Builder
	for _, r := range s {
		min := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < min {
				min = f
			}
		}
		b.WriteRune(min)
	}
	return b.String()
}

// match compares one part with a name under the canonical form canon. A '*'
// in an unquoted part matches any run of characters within the part; it can
// never reach across a dot because schema and name are matched separately.
func (n namePart) match(s string, canon func(string) string) bool {
	if !n.wild() {
		return canon(n.text) == canon(s)
	}
	return glob(strings.Split(canon(n.text), "*"), canon(s))
}

// glob matches s against the segments between a pattern's stars: the first
// as a prefix, the last as a suffix, the rest in order between them.
func glob(segs []string, s string) bool {
	if len(segs) == 1 {
		return s == segs[0]
	}
	if !strings.HasPrefix(s, segs[0]) {
		return false
	}
	s = s[len(segs[0]):]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return strings.HasSuffix(s, segs[len(segs)-1])
}

// matches reports whether the pattern names schema.name under canon; an
// unqualified pattern lives in the default schema.
func (p pattern) matches(schema, name, defaultSchema string, canon func(string) string) bool {
	if p.all {
		return true
	}
	if p.qualified {
		if !p.schema.match(schema, canon) {
			return false
		}
	} else if canon(schema) != canon(defaultSchema) {
		return false
	}
	return p.name.match(name, canon)
}

// namesSystem reports whether the pattern may admit a System table in
// schema: its schema part is literal, and so is its name part unless the
// schema is not the default one. A wildcard meant for the user's tables of
// the default schema (main.*) never reaches the catalog views the engine
// resolves there (sqlite_schema, duckdb_columns); pg_catalog.* or
// main.sqlite_master names them on purpose.
func (p pattern) namesSystem(schema, defaultSchema string, r NameRule) bool {
	if p.all || p.schema.wild() {
		return false
	}
	return !p.name.wild() || p.qualified && r.strict(schema) != r.strict(defaultSchema)
}

// largeKey is a parsed large-table key and the column it must be bounded on.
type largeKey struct {
	pattern
	column namePart
}

// matcher applies one policy under one name rule.
type matcher struct {
	rule     NameRule
	p        Policy
	patterns []pattern
	large    []largeKey
}

func newMatcher(rule NameRule, p Policy) *matcher {
	m := &matcher{rule: rule, p: p}
	for _, s := range p.Readable {
		if pat, err := parsePattern(s, rule); err == nil {
			m.patterns = append(m.patterns, pat)
		}
	}
	keys := make([]string, 0, len(p.LargeTables))
	for k := range p.LargeTables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pat, err := parsePattern(k, rule)
		if err != nil {
			continue
		}
		col, err := splitName(p.LargeTables[k], rule)
		if err != nil || len(col) != 1 {
			col = []namePart{{text: p.LargeTables[k]}}
		}
		m.large = append(m.large, largeKey{pattern: pat, column: col[0]})
	}
	return m
}

func (m *matcher) schemaOf(t Table) string {
	if t.Schema == "" {
		return m.p.DefaultSchema
	}
	return t.Schema
}

// display writes schema.name so that the name reads back as the same table.
func (m *matcher) display(t Table) string {
	return m.quote(m.schemaOf(t)) + "." + m.quote(t.Name)
}

func (m *matcher) quote(s string) string {
	plain := s != ""
	for i, c := range s {
		switch {
		case c == '_' || 'a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '$'):
		case 'A' <= c && c <= 'Z' && m.rule != NamesExact:
		default:
			plain = false
		}
	}
	if plain {
		return s
	}
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}

// readable refuses a table outside the connection's catalog or patterns.
func (m *matcher) readable(t Table) *contracts.Refusal {
	if t.Catalog != "" && !strings.EqualFold(t.Catalog, m.p.Catalog) {
		return Refuse(contracts.RefuseTableNotReadable,
			fmt.Sprintf("%s.%s is in another database (%s)", t.Catalog, m.display(t), t.Catalog),
			"read only this connection's own database")
	}
	schema := m.schemaOf(t)
	if len(m.p.Readable) == 0 && !t.System {
		return nil
	}
	for _, pat := range m.patterns {
		if pat.matches(schema, t.Name, m.p.DefaultSchema, m.rule.strict) &&
			(!t.System || pat.namesSystem(schema, m.p.DefaultSchema, m.rule)) {
			return nil
		}
	}
	fix := "read only tables matching: " + strings.Join(m.p.Readable, ", ")
	if len(m.p.Readable) == 0 {
		fix = "read the connection's own tables"
	}
	if t.System {
		return Refuse(contracts.RefuseTableNotReadable,
			fmt.Sprintf("%s is a system catalog; it is readable only when a readable pattern names it", m.display(t)),
			fix+"; inspect_schema describes the tables and their columns")
	}
	return Refuse(contracts.RefuseTableNotReadable,
		fmt.Sprintf("%s is not readable on this connection", m.display(t)), fix)
}

// checkBounds holds every large table of a scope to a lower bound on its
// column in that same scope; with several tables the bound must be
// qualified, and a bound that limits only some of the scope's tables (the ON
// of an outer join) counts only for those.
func (m *matcher) checkBounds(sc Scope) *contracts.Refusal {
	if len(m.large) == 0 {
		return nil
	}
	several := len(sc.Tables) > 1
	for _, t := range sc.Tables {
		schema := m.schemaOf(t)
		ref := t.Alias
		if ref == "" {
			ref = t.Name
		}
		for _, k := range m.large {
			if !k.matches(schema, t.Name, m.p.DefaultSchema, loose) {
				continue
			}
			if m.bounded(sc.Bounds, k.column, ref, several) {
				continue
			}
			col := m.quote(m.rule.strict(k.column.text))
			if k.column.quoted {
				col = `"` + strings.ReplaceAll(k.column.text, `"`, `""`) + `"`
			}
			example := col
			if several {
				example = m.quote(ref) + "." + col
			}
			if why := m.vacuous(sc.Bounds, k.column, ref, several); why != "" {
				return m.refuseVacuous(t, col, example, why)
			}
			return Refuse(contracts.RefuseLargeTableUnbounded,
				fmt.Sprintf("%s is a large table: bound %s from below in the WHERE of the query that reads it (a condition in an outer join's ON bounds only the side that join does not preserve)", m.display(t), col),
				fmt.Sprintf("add WHERE %s >= <a value> (a top-level AND, on the column itself, against a constant%s)", example,
					map[bool]string{true: "; qualify it, several tables are read there", false: ""}[several]))
		}
	}
	return nil
}

// bounded reports whether one of bounds limits the table known as ref on col.
func (m *matcher) bounded(bounds []Bound, col namePart, ref string, several bool) bool {
	eq := func(a, b string) bool { return m.rule.strict(a) == m.rule.strict(b) }
	for _, b := range bounds {
		if b.Vacuous != "" || !eq(b.Column, col.text) {
			continue
		}
		if !(b.Qualifier == "" && !several || b.Qualifier != "" && eq(b.Qualifier, ref)) {
			continue
		}
		if b.Limits == nil {
			return true
		}
		for _, l := range b.Limits {
			if eq(l, ref) {
				return true
			}
		}
	}
	return false
}

// CanRead reports whether p's readable patterns admit t under rule: the
// check Apply makes, for code that lists tables rather than reading a
// statement (a schema listing keeps only the tables a statement could read).
func (p Policy) CanRead(rule NameRule, t Table) bool {
	return newMatcher(rule, p).readable(t) == nil
}
