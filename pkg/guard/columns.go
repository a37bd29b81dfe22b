package guard

import "sort"

// ResolvedColumn is a column use tied to the table it belongs to.
type ResolvedColumn struct {
	// Schema and Table name the table, the default schema filled in.
	Schema, Table string
	Column        string
	// System is the table's System mark.
	System bool
}

// ColumnRefs ties each column use of the statement's scopes to a table of
// that same scope, for a check of the names a statement writes against an
// inventory. It prefers leaving a use out to tying it wrongly, since a wrong
// tie reports a column as missing that is not:
//   - a qualified use is tied to the one table of its scope whose alias (its
//     name when it has none) matches the qualifier under st.Names; a
//     qualifier naming anything else — a CTE, a subquery, an enclosing
//     SELECT's table, a composite column — ties nothing;
//   - an unqualified use is tied only when its scope is not Nested, reads
//     exactly one table and has no Derived item: then the column can belong
//     to nothing else.
//
// The result holds each (schema, table, column) once, sorted; nil when the
// reader does not report columns (ColumnsRead unset).
func (st *Statement) ColumnRefs(defaultSchema string) []ResolvedColumn {
	if !st.ColumnsRead {
		return nil
	}
	canon := st.Names.strict
	seen := map[[3]string]bool{}
	var out []ResolvedColumn
	for _, sc := range st.Scopes {
		for _, u := range sc.Columns {
			t, ok := sc.tableOf(u, canon)
			if !ok || u.Name == "" {
				continue
			}
			schema := t.Schema
			if schema == "" {
				schema = defaultSchema
			}
			k := [3]string{canon(schema), canon(t.Name), canon(u.Name)}
			if seen[k] {
				continue
			}
			seen[k] = true
			out = append(out, ResolvedColumn{Schema: schema, Table: t.Name, Column: u.Name, System: t.System})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Schema != b.Schema {
			return a.Schema < b.Schema
		}
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		return a.Column < b.Column
	})
	return out
}

// tableOf finds the table of the scope a column use belongs to, by the rules
// of ColumnRefs.
func (sc Scope) tableOf(u ColumnUse, canon func(string) string) (Table, bool) {
	if u.Qualifier == "" {
		if sc.Nested || len(sc.Derived) > 0 || len(sc.Tables) != 1 {
			return Table{}, false
		}
		return sc.Tables[0], true
	}
	q := canon(u.Qualifier)
	for _, d := range sc.Derived {
		if d != "" && canon(d) == q {
			return Table{}, false
		}
	}
	var found []Table
	for _, t := range sc.Tables {
		if canon(t.Ref()) == q {
			found = append(found, t)
		}
	}
	if len(found) != 1 {
		return Table{}, false
	}
	return found[0], true
}

// Ref is the name a scope refers to the table by: its alias, or its name
// when it has none.
func (t Table) Ref() string {
	if t.Alias != "" {
		return t.Alias
	}
	return t.Name
}
