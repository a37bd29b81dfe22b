package executor

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// largeTableWarnings holds the connection's large_tables to its catalog
// (issue 17, item 10). A key that names no readable table holds no read to
// a bound — a misspelt name leaves the real table unbounded — and a key
// whose column its table lacks refuses every read of that table, since no
// statement can bound a column that does not exist. Each is a warning on
// the connection, in words that name tables and columns but no host, path
// or credential. An engine without a catalog or a guard policy is not
// checked.
func largeTableWarnings(ctx context.Context, eng engine.Engine) ([]string, error) {
	g, ok := eng.(engine.Guarded)
	cat, ok2 := eng.(engine.Cataloger)
	if !ok || !ok2 {
		return nil, nil
	}
	reader, pol, err := g.Guard(ctx)
	if err != nil || len(pol.LargeTables) == 0 {
		return nil, err
	}
	rule := guard.NamesFold
	if st, ref := reader.Read("SELECT 1"); ref == nil {
		rule = st.Names
	}
	req := engine.Request{Profile: contracts.ProfileInspect}
	c, err := cat.Relations(ctx, req)
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(pol.LargeTables))
	for k := range pol.LargeTables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var warnings []string
	for _, k := range keys {
		one := guard.Policy{LargeTables: map[string]string{k: pol.LargeTables[k]}, DefaultSchema: pol.DefaultSchema}
		var matched []contracts.Relation
		for _, r := range c.Relations {
			if _, large := one.LargeColumn(rule, guard.Table{Schema: r.Schema, Name: r.Name}); large {
				matched = append(matched, r)
			}
		}
		if len(matched) == 0 {
			warnings = append(warnings, fmt.Sprintf("large_tables names %s, which matches no readable table: no read is held to a bound there; write the table as the catalog names it", k))
			continue
		}
		described, err := cat.Describe(ctx, req, matched[:min(len(matched), contracts.DefaultInventoryObjects)])
		if err != nil {
			return warnings, err
		}
		for _, r := range described.Relations {
			col, _ := one.LargeColumn(rule, guard.Table{Schema: r.Schema, Name: r.Name})
			if !hasColumn(r, col, rule) {
				warnings = append(warnings, fmt.Sprintf("large_tables bounds %s on %s, a column it does not have: every read of it is refused; name one of its columns (%s)",
					r.QualifiedName(), col, columnList(r)))
			}
		}
	}
	return warnings, nil
}

func hasColumn(r contracts.Relation, col string, rule guard.NameRule) bool {
	for _, c := range r.Columns {
		if c.Name == col || rule != guard.NamesExact && strings.EqualFold(c.Name, col) {
			return true
		}
	}
	return false
}

func columnList(r contracts.Relation) string {
	names := make([]string, 0, len(r.Columns))
	for _, c := range r.Columns {
		names = append(names, c.Name)
	}
	if len(names) > 12 {
		names = append(names[:12], "…")
	}
	return strings.Join(names, ", ")
}
