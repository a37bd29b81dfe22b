package executor

import (
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// guardCheck reads sql with the engine's guard reader and the connection's
// policy, as a read would be read, and reports the classification and the
// names it found. A statement the reader refuses still has its names
// reported where the reader can list them without compiling it
// (guard.NameLister): an unknown table is exactly what a planning run's
// identifier check is for.
func guardCheck(reader guard.Reader, pol guard.Policy, sql string) *contracts.StatementCheck {
	st, ref := reader.Read(sql)
	if ref == nil {
		ref = guard.Apply(st, pol)
	}
	chk := &contracts.StatementCheck{ReadOnly: ref == nil, Refusal: ref}
	if st == nil {
		if nl, ok := reader.(guard.NameLister); ok {
			st, _ = nl.Names(sql)
		}
	}
	if st == nil {
		return chk
	}
	chk.FoldCase = st.Names != guard.NamesExact
	seen := map[contracts.NameRef]bool{}
	for _, sc := range st.Scopes {
		for _, t := range sc.Tables {
			n := contracts.NameRef{Schema: t.Schema, Name: t.Name, System: t.System}
			if n.Schema == "" {
				n.Schema = pol.DefaultSchema
			}
			if !seen[n] {
				seen[n] = true
				chk.Relations = append(chk.Relations, n)
			}
		}
	}
	chk.ColumnsRead = st.ColumnsRead
	for _, c := range st.ColumnRefs(pol.DefaultSchema) {
		if c.System {
			continue
		}
		chk.Columns = append(chk.Columns, contracts.ColumnRef{
			Relation: contracts.NameRef{Schema: c.Schema, Name: c.Table}, Column: c.Column})
	}
	return chk
}
