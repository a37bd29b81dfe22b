package duckdb

import (
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// node is one object of json_serialize_sql's tree.
type node = map[string]any

// Query node types: a SELECT, a set operation, a recursive CTE body and a
// materialized CTE node.
var queryNodes = map[string]bool{
	"SELECT_NODE": true, "SET_OPERATION_NODE": true, "RECURSIVE_CTE_NODE": true, "CTE_NODE": true,
}

// Table reference types the parser writes in a FROM.
var tableRefs = map[string]bool{
	"BASE_TABLE": true, "JOIN": true, "SUBQUERY": true, "TABLE_FUNCTION": true, "EMPTY": true,
	"EXPRESSION_LIST": true, "PIVOT": true, "SHOW_REF": true, "COLUMN_DATA": true, "DELIM_GET": true,
	"BOUND_NODE": true, "CTE": true,
}

// walker reduces a parse tree to scopes. It fails closed: a node in a place
// it does not know is refused as unsupported, never skipped.
type walker struct {
	scopes []guard.Scope
	depth  int
	// sized counts the expressions being walked whose whole tree was
	// already sized (builtSize); a subquery starts afresh.
	sized int
	// derives is set once the statement reads from a derived table (a CTE,
	// a subquery, VALUES, unnest or a pivot in FROM) or has a lambda: a
	// column there may be a value the statement built (work.go).
	derives bool
	// cur is the SELECT whose clauses are being walked for column uses, nil
	// where a column reference is no use of one (ORDER BY, a PIVOT); clause
	// is the clause being walked. selects counts the SELECTs enclosing the
	// point being walked; hidden is above zero inside a lambda or a star
	// expression, whose column references are left out.
	cur     *colScope
	clause  string
	selects int
	hidden  int
}

// colScope collects one SELECT's column references until its Columns are
// known.
type colScope struct {
	idx     int
	uses    []colUse
	aliases map[string]bool // the select list's output names, lower case
	refs    map[string]bool // the names of its FROM items, lower case
}

// colUse is a column reference and the clause it was written in.
type colUse struct {
	guard.ColumnUse
	clause string
}

// sqlValueKeywords are the names DuckDB's binder maps to a call when no
// column answers to them (GetSQLValueFunctionName).
var sqlValueKeywords = map[string]bool{
	"current_catalog": true, "current_date": true, "current_schema": true, "current_role": true,
	"current_time": true, "current_timestamp": true, "current_user": true, "localtime": true,
	"localtimestamp": true, "session_user": true, "user": true,
}

// useClauses are the SELECT clauses whose column references name input
// columns; QUALIFY, ORDER BY and the sample are left out.
var useClauses = map[string]bool{
	"select_list": true, "from_table": true, "where_clause": true, "group_expressions": true, "having": true,
}

// maxDepth bounds the recursion; DuckDB's own expression depth limit is 1000.
const maxDepth = 2000

// ctes is the chain of CTE names visible at a point, innermost last.
type ctes struct {
	names  map[string]bool
	parent *ctes
}

func (c *ctes) has(name string) bool {
	for ; c != nil; c = c.parent {
		if c.names[strings.ToLower(name)] {
			return true
		}
	}
	return false
}

func unsupported(what string) *contracts.Refusal {
	return guard.Refuse(contracts.RefuseUnsupported,
		"the guard cannot follow this query's structure: "+what,
		"write the query more plainly: one SELECT with joins, subqueries and CTEs")
}

func str(n node, key string) string {
	s, _ := n[key].(string)
	return s
}

func obj(v any) node {
	n, _ := v.(node)
	return n
}

// query walks a query node; every SELECT in it becomes a scope.
func (w *walker) query(n node, visible *ctes) *contracts.Refusal {
	if w.depth++; w.depth > maxDepth {
		return unsupported("it is nested too deeply")
	}
	defer func() { w.depth-- }()
	sized := w.sized
	w.sized = 0
	defer func() { w.sized = sized }()
	cur := w.cur
	w.cur = nil
	defer func() { w.cur = cur }()

	// The CTEs of this node: each body sees the ones before it, and a
	// recursive one sees itself (its body is a RECURSIVE_CTE_NODE naming it).
	// Fewer names than DuckDB sees is safe: a CTE taken for a table is
	// checked as a table, never the other way round.
	if cm := obj(n["cte_map"]); cm != nil {
		entries, _ := cm["map"].([]any)
		if len(entries) > 0 {
			scope := &ctes{names: map[string]bool{}, parent: visible}
			for _, e := range entries {
				entry := obj(e)
				name := strings.ToLower(str(entry, "key"))
				value := obj(entry["value"])
				body := obj(obj(value["query"])["node"])
				if name == "" || body == nil {
					return unsupported("a CTE without a name or a body")
				}
				if ref := w.query(body, scope); ref != nil {
					return ref
				}
				scope.names[name] = true
			}
			visible = scope
		}
	}

	switch t := str(n, "type"); t {
	case "SELECT_NODE":
		if ref := w.selectNode(n, visible); ref != nil {
			return ref
		}
	case "SET_OPERATION_NODE":
		children := []any{n["left"], n["right"]}
		if list, ok := n["children"].([]any); ok {
			children = append(children, list...)
		}
		for _, c := range children {
			if c == nil {
				continue
			}
			child := obj(c)
			if child == nil {
				return unsupported("a set operation branch of an unknown shape")
			}
			if ref := w.query(child, visible); ref != nil {
				return ref
			}
		}
	case "RECURSIVE_CTE_NODE":
		self := &ctes{names: map[string]bool{strings.ToLower(str(n, "cte_name")): true}, parent: visible}
		for _, k := range []string{"left", "right"} {
			child := obj(n[k])
			if child == nil {
				return unsupported("a recursive CTE without both branches")
			}
			if ref := w.query(child, self); ref != nil {
				return ref
			}
		}
	case "CTE_NODE":
		for _, k := range []string{"query", "child"} {
			if child := obj(n[k]); child != nil {
				if ref := w.query(child, visible); ref != nil {
					return ref
				}
			}
		}
	default:
		return unsupported(fmt.Sprintf("a query node of type %q", t))
	}
	// ORDER BY, LIMIT, DISTINCT ON of any query node.
	return w.exprs(n["modifiers"], visible)
}

// selectNode walks one SELECT: its FROM into a new scope, its WHERE and join
// conditions into that scope's bounds, and every expression for functions
// and subqueries.
func (w *walker) selectNode(n node, visible *ctes) *contracts.Refusal {
	idx := len(w.scopes)
	w.scopes = append(w.scopes, guard.Scope{Nested: w.selects > 0})
	cs := &colScope{idx: idx, aliases: map[string]bool{}, refs: map[string]bool{}}
	list, _ := n["select_list"].([]any)
	for _, e := range list {
		if a := str(obj(e), "alias"); a != "" {
			cs.aliases[strings.ToLower(a)] = true
		}
	}
	saved, clause := w.cur, w.clause
	w.cur, w.clause = cs, "from_table"
	w.selects++
	defer func() { w.cur, w.clause = saved, clause; w.selects-- }()
	var conds []cond
	if from := obj(n["from_table"]); from != nil {
		if ref := w.tableRef(from, idx, visible, &conds); ref != nil {
			return ref
		}
	} else if n["from_table"] != nil {
		return unsupported("a FROM of an unknown shape")
	}
	if where := obj(n["where_clause"]); where != nil {
		conds = append(conds, cond{n: where})
	}
	for _, c := range conds {
		for _, b := range bounds(c.n) {
			b.Limits = c.limits
			w.scopes[idx].Bounds = append(w.scopes[idx].Bounds, b)
		}
	}
	for _, k := range []string{"select_list", "where_clause", "group_expressions", "having", "qualify", "sample"} {
		w.clause = k
		if ref := w.exprs(n[k], visible); ref != nil {
			return ref
		}
	}
	w.scopes[idx].Columns = cs.columns()
	return nil
}

// columns reduces a SELECT's column references to its column uses, once
// each. An unqualified name is left out where it may be no input column: an
// output alias (DuckDB reads them in WHERE and GROUP BY too), the name of a
// FROM item (a whole row as a struct), and anywhere in HAVING.
func (cs *colScope) columns() []guard.ColumnUse {
	var out []guard.ColumnUse
	seen := map[guard.ColumnUse]bool{}
	for _, u := range cs.uses {
		if u.Qualifier == "" {
			l := strings.ToLower(u.Name)
			if u.clause == "having" || cs.aliases[l] || cs.refs[l] {
				continue
			}
		}
		if !seen[u.ColumnUse] {
			seen[u.ColumnUse] = true
			out = append(out, u.ColumnUse)
		}
	}
	return out
}

// use records a column use of the SELECT being walked, where the clause
// names input columns. rowid is every table's, listed or not, and an
// unqualified SQL value keyword (current_date, user, …) is a COLUMN_REF in
// the parse that the binder calls as a function when no column has the name.
func (w *walker) use(qualifier, name string) {
	if w.cur == nil || w.hidden > 0 || !useClauses[w.clause] || strings.EqualFold(name, "rowid") ||
		qualifier == "" && sqlValueKeywords[strings.ToLower(name)] {
		return
	}
	w.cur.uses = append(w.cur.uses, colUse{guard.ColumnUse{Qualifier: qualifier, Name: name}, w.clause})
}

// derived records a FROM item that is not a table under the name it is
// referred to by ("" when none).
func (w *walker) derived(idx int, name string) {
	w.derives = true
	w.scopes[idx].Derived = append(w.scopes[idx].Derived, name)
	if w.cur != nil && w.cur.idx == idx && name != "" {
		w.cur.refs[strings.ToLower(name)] = true
	}
}

// columnRef records a COLUMN_REF of one or two names; a longer one
// (t.col.field, s.t.col) is left to a miss.
func (w *walker) columnRef(n node) {
	names, _ := n["column_names"].([]any)
	var parts []string
	for _, v := range names {
		s, ok := v.(string)
		if !ok || s == "" {
			return
		}
		parts = append(parts, s)
	}
	switch len(parts) {
	case 1:
		w.use("", parts[0])
	case 2:
		w.use(parts[0], parts[1])
	}
}

// using records the columns of a join's USING as uses of each side that is
// one table: a USING column is a column of both sides.
func (w *walker) using(n node) {
	cols, _ := n["using_columns"].([]any)
	for _, k := range []string{"left", "right"} {
		side := obj(n[k])
		if str(side, "type") != "BASE_TABLE" {
			continue
		}
		ref := str(side, "alias")
		if ref == "" {
			ref = str(side, "table_name")
		}
		for _, c := range cols {
			if col, ok := c.(string); ok && col != "" {
				w.use(ref, col)
			}
		}
	}
}

// cond is a condition that bounds columns of a scope: a WHERE, or a join's
// ON, which for an outer join limits only the tables of the side the join
// does not preserve (see guard.Bound.Limits; nil limits every table).
type cond struct {
	n      node
	limits []string
}

// onLimits returns the Limits of a bound in the ON of a join of joinType
// between the tables known as left and right: an inner or semi join limits
// both sides, LEFT and ANTI (which keeps the left rows no right row
// matches) only the right, RIGHT only the left, FULL — and any join type
// this reader does not know — neither.
func onLimits(joinType string, left, right []string) []string {
	switch strings.ToUpper(joinType) {
	case "INNER", "SEMI":
		return nil
	case "LEFT", "ANTI":
		return append([]string{}, right...)
	case "RIGHT":
		return append([]string{}, left...)
	}
	return []string{}
}

// refs are the names bounds qualify the tables of a scope from index from on
// by: the alias, or the name as written when there is none.
func (w *walker) refs(idx, from int) []string {
	var out []string
	for _, t := range w.scopes[idx].Tables[from:] {
		if t.Alias != "" {
			out = append(out, t.Alias)
		} else {
			out = append(out, t.Name)
		}
	}
	return out
}

// tableRef walks one FROM item of the SELECT whose scope is scopes[idx].
// Join conditions are collected into conds.
func (w *walker) tableRef(n node, idx int, visible *ctes, conds *[]cond) *contracts.Refusal {
	if w.depth++; w.depth > maxDepth {
		return unsupported("it is nested too deeply")
	}
	defer func() { w.depth-- }()

	switch t := str(n, "type"); t {
	case "EMPTY":
		return nil
	case "BASE_TABLE":
		if at := n["at_clause"]; at != nil {
			return unsupported("time travel (AT …) on a table")
		}
		tbl := guard.Table{
			Catalog: str(n, "catalog_name"),
			Schema:  str(n, "schema_name"),
			Name:    str(n, "table_name"),
			Alias:   str(n, "alias"),
		}
		if tbl.Catalog == "" && tbl.Schema == "" && visible.has(tbl.Name) {
			ref := tbl.Alias
			if ref == "" {
				ref = tbl.Name
			}
			w.derived(idx, ref)
			return w.exprs(n["sample"], visible) // a CTE, not a table
		}
		if looksLikeFile(tbl.Name) {
			return guard.Refuse(contracts.RefuseTableFunction,
				fmt.Sprintf("%q names a file or URL, which DuckDB would read through a replacement scan; files are not readable here", tbl.Name),
				"read a table of this database by its name (inspect_schema lists them)")
		}
		resolveSystem(&tbl)
		w.scopes[idx].Tables = append(w.scopes[idx].Tables, tbl)
		if w.cur != nil && w.cur.idx == idx {
			w.cur.refs[strings.ToLower(tbl.Ref())] = true
		}
		return w.exprs(n["sample"], visible)
	case "JOIN":
		var sides [2][]string
		for i, k := range []string{"left", "right"} {
			side := obj(n[k])
			if side == nil {
				return unsupported("a join without both sides")
			}
			from := len(w.scopes[idx].Tables)
			if ref := w.tableRef(side, idx, visible, conds); ref != nil {
				return ref
			}
			sides[i] = w.refs(idx, from)
		}
		if c := obj(n["condition"]); c != nil {
			*conds = append(*conds, cond{n: c, limits: onLimits(str(n, "join_type"), sides[0], sides[1])})
		}
		w.using(n)
		return w.exprs(n["condition"], visible)
	case "SUBQUERY":
		sub := obj(obj(n["subquery"])["node"])
		if sub == nil {
			return unsupported("a subquery in FROM without a body")
		}
		w.derived(idx, str(n, "alias"))
		return w.query(sub, visible)
	case "TABLE_FUNCTION":
		fn := obj(n["function"])
		name := strings.ToLower(str(fn, "function_name"))
		if fn == nil || str(fn, "class") != "FUNCTION" {
			return unsupported("a table function of an unknown shape")
		}
		if !allowedTableFunctions[name] || str(fn, "catalog") != "" || !defaultSchema(str(fn, "schema")) {
			return refuseTableFunction(name)
		}
		before := w.derives
		w.derived(idx, str(n, "alias"))
		if listRanges[name] {
			w.derives = before // range and generate_series yield only numbers
		}
		for _, k := range []string{"children", "filter", "order_bys"} {
			if ref := w.exprs(fn[k], visible); ref != nil {
				return ref
			}
		}
		return nil
	case "EXPRESSION_LIST":
		w.derived(idx, str(n, "alias"))
		w.hidden++
		defer func() { w.hidden-- }()
		return w.exprs(n["values"], visible)
	case "PIVOT":
		// The pivot's source is read in a scope of its own: a bound outside
		// the pivot does not bound it.
		src := obj(n["source"])
		if src == nil {
			return unsupported("a PIVOT without a source")
		}
		w.derived(idx, str(n, "alias"))
		w.hidden++
		defer func() { w.hidden-- }()
		sub := len(w.scopes)
		w.scopes = append(w.scopes, guard.Scope{})
		var none []cond
		if ref := w.tableRef(src, sub, visible, &none); ref != nil {
			return ref
		}
		for _, k := range []string{"aggregates", "pivots", "groups"} {
			if ref := w.exprs(n[k], visible); ref != nil {
				return ref
			}
		}
		return nil
	case "SHOW_REF":
		what := strings.ToUpper(str(n, "show_type"))
		if what == "" {
			what = "SHOW"
		}
		return guard.Refuse(contracts.RefuseNotASelect,
			fmt.Sprintf("%s is not a SELECT; only reads of tables run here", what),
			"use inspect_schema to see a table's columns, or write the aggregate you need as a SELECT")
	default:
		return unsupported(fmt.Sprintf("a FROM item of type %q", t))
	}
}

// exprs walks any value of the tree for expressions: functions are held to
// the allowlist and subqueries walked as queries with their own scopes.
func (w *walker) exprs(v any, visible *ctes) *contracts.Refusal {
	switch x := v.(type) {
	case []any:
		for _, c := range x {
			if ref := w.exprs(c, visible); ref != nil {
				return ref
			}
		}
		return nil
	case node:
		return w.expr(x, visible)
	}
	return nil
}

func (w *walker) expr(n node, visible *ctes) *contracts.Refusal {
	if w.depth++; w.depth > maxDepth {
		return unsupported("it is nested too deeply")
	}
	defer func() { w.depth-- }()

	class := str(n, "class")
	if class != "" && w.sized == 0 {
		// The outermost expression: bound what its whole tree builds.
		if _, ref := builtSize(n, 0); ref != nil {
			return ref
		}
		w.sized++
		defer func() { w.sized-- }()
	}
	switch class {
	case "":
		t := str(n, "type")
		if queryNodes[t] {
			return w.query(n, visible)
		}
		if tableRefs[t] {
			return unsupported(fmt.Sprintf("a FROM item (%s) in an expression", t))
		}
		// Containers: modifiers, ORDER BY items, CASE arms, sample options.
	case "CONSTANT":
		return nil
	case "COLUMN_REF":
		w.columnRef(n)
	case "LAMBDA", "STAR":
		// A lambda's parameters are column references of no table; a star's
		// COLUMNS(…), EXCLUDE and REPLACE are left to a miss.
		if class == "LAMBDA" {
			w.derives = true
		}
		w.hidden++
		defer func() { w.hidden-- }()
	case "FUNCTION":
		if ref := checkFunction(str(n, "function_name"), str(n, "schema"), str(n, "catalog")); ref != nil {
			return ref
		}
	case "WINDOW":
		if ref := checkFunction(str(n, "function_name"), str(n, "schema"), str(n, "catalog")); ref != nil {
			return ref
		}
	case "SUBQUERY":
		sub := obj(obj(n["subquery"])["node"])
		if sub == nil {
			return unsupported("a subquery without a body")
		}
		if ref := w.query(sub, visible); ref != nil {
			return ref
		}
		return w.exprs(n["child"], visible)
	}
	for _, c := range n {
		switch c.(type) {
		case node, []any:
			if ref := w.exprs(c, visible); ref != nil {
				return ref
			}
		}
	}
	return nil
}

// looksLikeFile reports a table name DuckDB would take for a file or URL
// when no table has it: a path, an extension, a scheme or a glob.
func looksLikeFile(name string) bool {
	return strings.ContainsAny(name, "./\\:*?")
}

func defaultSchema(s string) bool {
	return s == "" || strings.EqualFold(s, "main")
}
