package guard

// LargeColumn reports whether p's large-table rule covers t under rule, and
// the column that rule bounds: the same loose comparison the bound check
// makes (checkBounds), so code that reads a table without a statement of
// the model's (a table profile) treats as large exactly what a statement
// would have to bound.
func (p Policy) LargeColumn(rule NameRule, t Table) (string, bool) {
	m := newMatcher(rule, p)
	schema := m.schemaOf(t)
	for _, k := range m.large {
		if k.matches(schema, t.Name, p.DefaultSchema, loose) {
			return k.column.text, true
		}
	}
	return "", false
}
