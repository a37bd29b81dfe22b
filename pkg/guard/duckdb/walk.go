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
	w.scopes = append(w.scopes, guard.Scope{})
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
		if ref := w.exprs(n[k], visible); ref != nil {
			return ref
		}
	}
	return nil
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
			return w.exprs(n["sample"], visible) // a CTE, not a table
		}
		if looksLikeFile(tbl.Name) {
			return guard.Refuse(contracts.RefuseTableFunction,
				fmt.Sprintf("%q names a file or URL, which DuckDB would read through a replacement scan; files are not readable here", tbl.Name),
				"read a table of this database by its name (inspect_schema lists them)")
		}
		resolveSystem(&tbl)
		w.scopes[idx].Tables = append(w.scopes[idx].Tables, tbl)
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
		return w.exprs(n["condition"], visible)
	case "SUBQUERY":
		sub := obj(obj(n["subquery"])["node"])
		if sub == nil {
			return unsupported("a subquery in FROM without a body")
		}
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
		for _, k := range []string{"children", "filter", "order_bys"} {
			if ref := w.exprs(fn[k], visible); ref != nil {
				return ref
			}
		}
		return nil
	case "EXPRESSION_LIST":
		return w.exprs(n["values"], visible)
	case "PIVOT":
		// The pivot's source is read in a scope of its own: a bound outside
		// the pivot does not bound it.
		src := obj(n["source"])
		if src == nil {
			return unsupported("a PIVOT without a source")
		}
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
