package postgres

import (
	"fmt"
	"slices"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// walker visits every node of a SELECT's parse tree once. It stops at the
// first refusal.
type walker struct {
	// version is the server's server_version_num, 0 when unknown.
	version int
	// slowOnColumns names an uninterruptible operation applied to columns
	// (slow.go), and builds is true when the statement calls a function
	// that grows values, recurses or builds an ARRAY of a query.
	slowOnColumns string
	builds        bool
	refusal       *contracts.Refusal
	scopes        []guard.Scope
	// cur is the SELECT whose FROM and join conditions are being read; nil
	// between SELECTs (a set operation's ORDER BY, say).
	cur *scope
	// outer holds the SELECTs enclosing cur, innermost last: a column
	// reference may name a table of any of them.
	outer []*scope
	// ctes holds the CTE names visible here, one frame per enclosing WITH.
	ctes []map[string]bool
	// uses collects the functions, operators and attributes the statement
	// names; attrs are its attribute references, resolved once every FROM
	// has been read.
	uses  Uses
	attrs []attrRef
	// clause is the field of cur's SelectStmt being walked ("where_clause"):
	// it decides whether a column reference there is a column use.
	clause string
	// hidden counts the SELECTs that enclose a CTE body being walked, which
	// cur and outer do not show there.
	hidden int
	// plain holds the SELECTs that see no enclosing SELECT's columns
	// although one encloses them: a FROM subquery that is not LATERAL, in a
	// SELECT that is not Nested itself, with its branches and CTE bodies.
	plain map[*pg_query.SelectStmt]bool
}

// scope collects one SELECT's tables and bounds.
type scope struct {
	guard.Scope
	refs map[string]bool // the names the SELECT's tables are referred to by
	// tables maps the name a table is referred to by to the table; others
	// holds the names of its subqueries, functions and joins in FROM.
	tables map[string]guard.Table
	others map[string]bool
	// uses are the column references of the clauses that name input
	// columns, and aliases the select list's output names: selectStmt
	// reduces them to Columns once the whole SELECT has been read.
	uses    []columnUse
	aliases map[string]bool
}

// columnUse is a column reference and the clause it was written in.
type columnUse struct {
	guard.ColumnUse
	clause string
}

// useClauses are the SelectStmt fields whose column references name the
// SELECT's input columns. ORDER BY and DISTINCT ON may name output columns,
// and the window and VALUES clauses are left to a miss.
var useClauses = map[string]bool{
	"target_list": true, "from_clause": true, "where_clause": true, "group_clause": true, "having_clause": true,
}

// rowFunctions are PostgreSQL's functions that one whole row may be passed
// to (an argument of type any, anyelement, record, …), so that q.f may call
// f(q); read from pg_proc on PostgreSQL 15, with any_value (16) and
// pg_column_toast_chunk_id (17):
//
//	SELECT DISTINCT proname FROM pg_proc WHERE pronamespace = 'pg_catalog'::regnamespace
//	   AND pronargs >= 1 AND pronargs - pronargdefaults <= 1
//	   AND proargtypes[0]::regtype::text IN ('"any"', 'anyelement', 'record', 'anynonarray',
//	       'anycompatible', 'anycompatiblenonarray')
var rowFunctions = setOf("array_agg", "concat", "count", "cume_dist", "dense_rank", "first_value", "hash_record",
	"json_agg", "json_build_array", "json_build_object", "jsonb_agg", "jsonb_build_array", "jsonb_build_object",
	"lag", "last_value", "lead", "mode", "num_nonnulls", "num_nulls", "percent_rank", "pg_collation_for",
	"pg_column_compression", "pg_column_size", "pg_typeof", "quote_literal", "quote_nullable", "rank",
	"record_out", "record_send", "row_to_json", "to_json", "to_jsonb", "any_value", "pg_column_toast_chunk_id")

// systemColumns are the columns every PostgreSQL table has without listing
// them.
var systemColumns = setOf("ctid", "xmin", "xmax", "cmin", "cmax", "tableoid")

// comparingFunctions are the built-ins that compare their arguments'
// values through the type's default operator class (Uses.Ordering).
var comparingFunctions = setOf("min", "max", "range_agg", "range_intersect_agg", "array_position",
	"array_positions", "array_remove", "array_replace")

// comparisonOperators are the operators that compare two values which may
// be arrays, records or ranges, compared element by element through the
// element type's default operator class (Uses.Ordering).
var comparisonOperators = setOf("=", "<>", "!=", "<", ">", "<=", ">=", "@>", "<@", "&&")

// comparing reports whether an operator expression compares values
// (Uses.Ordering): a comparison operator, IN, ANY/ALL, IS [NOT] DISTINCT
// FROM and NULLIF.
func comparing(x *pg_query.A_Expr) bool {
	switch x.Kind {
	case pg_query.A_Expr_Kind_AEXPR_IN, pg_query.A_Expr_Kind_AEXPR_OP_ANY, pg_query.A_Expr_Kind_AEXPR_OP_ALL,
		pg_query.A_Expr_Kind_AEXPR_DISTINCT, pg_query.A_Expr_Kind_AEXPR_NOT_DISTINCT, pg_query.A_Expr_Kind_AEXPR_NULLIF:
		return true
	}
	ns, ok := names(x.Name)
	return ok && len(ns) > 0 && comparisonOperators[ns[len(ns)-1]]
}

// attrRef is a column reference or field selection seen in a SELECT, with
// the SELECTs that were in view there, innermost last.
type attrRef struct {
	fields []string // a ColumnRef's names; for (expr).f, just f
	field  bool     // written (expr).f
	chain  []*scope
}

func (w *walker) refuse(code contracts.Code, reason, fix string) {
	if w.refusal == nil {
		w.refusal = guard.Refuse(code, reason, fix)
	}
}

// selectStmt reads one SELECT (or set operation) with its WITH.
func (w *walker) selectStmt(s *pg_query.SelectStmt) {
	if s == nil || w.refusal != nil {
		return
	}
	plain := w.plain[s]
	if wc := s.WithClause; wc != nil {
		if wc.Recursive {
			w.builds = true // a recursive CTE can double a value each round
		}
		frame := map[string]bool{}
		w.ctes = append(w.ctes, frame)
		defer func() { w.ctes = w.ctes[:len(w.ctes)-1] }()
		if wc.Recursive {
			for _, n := range wc.Ctes {
				frame[n.GetCommonTableExpr().GetCtename()] = true
			}
		}
		for _, n := range wc.Ctes {
			cte := n.GetCommonTableExpr()
			if cte == nil {
				w.refuse(contracts.RefuseUnsupported, "the WITH clause holds something other than a common table expression",
					"write the query more plainly")
				return
			}
			body := cte.GetCtequery().GetSelectStmt()
			if plain {
				w.markPlain(body)
			}
			if body == nil {
				w.refuse(contracts.RefuseNotReadOnly,
					fmt.Sprintf("the WITH query %s is %s: a data-modifying CTE writes even inside a SELECT", cte.Ctename, kind(cte.Ctequery)),
					"keep every WITH query a SELECT")
				return
			}
			saved := w.cur
			w.cur = nil
			if saved != nil {
				w.hidden++
			}
			w.selectStmt(body)
			if saved != nil {
				w.hidden--
			}
			w.cteClauses(cte)
			w.cur = saved
			frame[cte.Ctename] = true
		}
	}
	if w.refusal != nil {
		return
	}

	if len(s.SortClause) > 0 || len(s.GroupClause) > 0 || len(s.DistinctClause) > 0 ||
		s.Op == pg_query.SetOperation_SETOP_UNION && !s.All ||
		s.Op == pg_query.SetOperation_SETOP_INTERSECT || s.Op == pg_query.SetOperation_SETOP_EXCEPT {
		w.uses.Ordering = true
	}
	saved := w.cur
	defer func() { w.cur = saved }()
	if s.Op != pg_query.SetOperation_SETOP_NONE && s.Op != pg_query.SetOperation_SET_OPERATION_UNDEFINED {
		if plain {
			w.markPlain(s.Larg)
			w.markPlain(s.Rarg)
		}
		w.selectStmt(s.Larg)
		w.selectStmt(s.Rarg)
		w.cur = nil
		w.fields(s.ProtoReflect())
		return
	}
	sc := &scope{refs: map[string]bool{}, tables: map[string]guard.Table{}, others: map[string]bool{}, aliases: map[string]bool{}}
	sc.Nested = (saved != nil || len(w.outer) > 0 || w.hidden > 0) && !plain
	for _, n := range s.TargetList {
		if rt := n.GetResTarget(); rt != nil && rt.Name != "" {
			sc.aliases[rt.Name] = true
		}
	}
	if saved != nil {
		w.outer = append(w.outer, saved)
		defer func() { w.outer = w.outer[:len(w.outer)-1] }()
	}
	w.cur = sc
	w.fields(s.ProtoReflect())
	if w.refusal != nil {
		return
	}
	sc.Bounds = append(sc.Bounds, bounds(s.WhereClause)...)
	sc.Columns = sc.columns()
	w.scopes = append(w.scopes, sc.Scope)
}

// cteClauses walks what a CTE holds besides its query: the SEARCH and
// CYCLE clauses, whose cycle mark values are expressions (a typed literal
// casts to a type). SEARCH orders rows and CYCLE compares them through the
// default classes, and CYCLE compares its mark values with <>, found by
// name.
func (w *walker) cteClauses(cte *pg_query.CommonTableExpr) {
	if cte.SearchClause != nil {
		w.uses.Ordering = true
	}
	if cte.CycleClause != nil {
		w.uses.Ordering = true
		w.uses.addOperator("<>")
	}
	cte.ProtoReflect().Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Name() != "ctequery" {
			w.value(fd, v)
		}
		return w.refusal == nil
	})
}

func (w *walker) markPlain(s *pg_query.SelectStmt) {
	if s == nil {
		return
	}
	if w.plain == nil {
		w.plain = map[*pg_query.SelectStmt]bool{}
	}
	w.plain[s] = true
}

// columns reduces a SELECT's column references to its column uses, once
// each. An unqualified name is left out where it may be no input column: an
// output alias, a name of something in FROM (a whole-row reference), and
// anywhere in HAVING.
func (sc *scope) columns() []guard.ColumnUse {
	var out []guard.ColumnUse
	seen := map[guard.ColumnUse]bool{}
	for _, u := range sc.uses {
		if u.Qualifier == "" && (u.clause == "having_clause" || sc.aliases[u.Name] || sc.refs[u.Name] || sc.others[u.Name]) {
			continue
		}
		if !seen[u.ColumnUse] {
			seen[u.ColumnUse] = true
			out = append(out, u.ColumnUse)
		}
	}
	return out
}

// use records a column use of the SELECT being read, when the clause being
// walked names input columns.
func (w *walker) use(qualifier, name string) {
	if w.cur == nil || !useClauses[w.clause] || systemColumns[name] {
		return
	}
	w.cur.uses = append(w.cur.uses, columnUse{guard.ColumnUse{Qualifier: qualifier, Name: name}, w.clause})
}

// fields walks a SELECT's clauses other than its WITH and set-operation
// branches, which selectStmt reads itself.
func (w *walker) fields(m protoreflect.Message) {
	saved := w.clause
	defer func() { w.clause = saved }()
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch fd.Name() {
		case "with_clause", "larg", "rarg":
			return true
		}
		w.clause = string(fd.Name())
		w.value(fd, v)
		return w.refusal == nil
	})
}

// value walks one field's messages.
func (w *walker) value(fd protoreflect.FieldDescriptor, v protoreflect.Value) {
	if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
		return
	}
	if fd.IsList() {
		l := v.List()
		for i := 0; i < l.Len() && w.refusal == nil; i++ {
			w.walk(l.Get(i).Message())
		}
		return
	}
	if fd.IsMap() {
		return
	}
	w.walk(v.Message())
}

// walk visits one node and, unless it reads the node itself, its children.
func (w *walker) walk(m protoreflect.Message) {
	if w.refusal != nil || !m.IsValid() {
		return
	}
	if code, reason, fix, refused := w.nodeRefusal(m); refused {
		w.refuse(code, reason, fix)
		return
	}
	switch x := m.Interface().(type) {
	case *pg_query.SelectStmt:
		w.selectStmt(x)
		return
	case *pg_query.RangeVar:
		w.rangeVar(x)
		return
	case *pg_query.FuncCall:
		w.funcCall(x)
	case *pg_query.TypeName:
		w.typeName(x)
	case *pg_query.RangeFunction:
		w.rangeFunction(x)
	case *pg_query.RangeTableSample:
		w.tableSample(x)
	case *pg_query.JoinExpr:
		if len(x.UsingClause) > 0 || x.IsNatural {
			// The join columns are compared with =, found by name.
			w.uses.addOperator("=")
			w.uses.Ordering = true
		}
		if w.cur != nil {
			w.cur.Bounds = append(w.cur.Bounds, joinBounds(x)...)
			if x.Alias != nil {
				w.cur.others[x.Alias.Aliasname] = true
				w.cur.Derived = append(w.cur.Derived, x.Alias.Aliasname)
			}
			w.using(x)
		}
	case *pg_query.RangeSubselect:
		if w.cur != nil {
			alias := ""
			if x.Alias != nil {
				alias = x.Alias.Aliasname
				w.cur.others[alias] = true
			}
			w.cur.Derived = append(w.cur.Derived, alias)
			if !x.Lateral && !w.cur.Nested {
				w.markPlain(x.Subquery.GetSelectStmt())
			}
		}
	case *pg_query.ColumnRef:
		w.columnRef(x)
	case *pg_query.ParamRef:
		w.uses.Parameters = max(w.uses.Parameters, int(x.Number))
	case *pg_query.A_Indirection:
		for _, f := range x.Indirection {
			if s := f.GetString_(); s != nil {
				w.attribute(s.Sval)
				w.attrs = append(w.attrs, attrRef{fields: []string{s.Sval}, field: true})
			}
		}
	case *pg_query.A_Expr:
		switch x.Kind {
		case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM:
			// BETWEEN is >= and <= under a keyword's name …
			w.uses.addOperator(">=")
			w.uses.addOperator("<=")
			w.uses.Ordering = true
		case pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
			// … and NOT BETWEEN is < or >.
			w.uses.addOperator("<")
			w.uses.addOperator(">")
			w.uses.Ordering = true
		default:
			w.operator(x.Name)
			if comparing(x) {
				w.uses.Ordering = true
			}
			if ns, ok := names(x.Name); ok && len(ns) > 0 && slowOperators[ns[len(ns)-1]] {
				w.slowOperation(slowName(ns[len(ns)-1]), []*pg_query.Node{x.Lexpr, x.Rexpr})
			}
		}
	case *pg_query.SubLink:
		if x.SubLinkType == pg_query.SubLinkType_ARRAY_SUBLINK {
			w.builds = true
		}
		switch x.SubLinkType {
		case pg_query.SubLinkType_ANY_SUBLINK, pg_query.SubLinkType_ALL_SUBLINK, pg_query.SubLinkType_ROWCOMPARE_SUBLINK:
			w.uses.Ordering = true
			if len(x.OperName) == 0 {
				// x IN (SELECT …) is x = ANY (SELECT …).
				w.uses.addOperator("=")
			}
		}
		w.operator(x.OperName)
	case *pg_query.CaseExpr:
		if x.Arg != nil {
			// CASE x WHEN v compares x = v, an operator found by name.
			w.uses.addOperator("=")
			w.uses.Ordering = true
		}
	case *pg_query.MinMaxExpr:
		// GREATEST and LEAST compare through the type's default class.
		w.uses.Ordering = true
	case *pg_query.WindowDef:
		if len(x.PartitionClause) > 0 || len(x.OrderClause) > 0 {
			w.uses.Ordering = true
		}
	case *pg_query.SortBy:
		// Every ORDER BY — a SELECT's, an aggregate's, a window's, WITHIN
		// GROUP's — sorts through an operator class.
		w.operator(x.UseOp)
		w.uses.Ordering = true
	}
	if w.refusal != nil {
		return
	}
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		w.value(fd, v)
		return w.refusal == nil
	})
}

// rangeVar records a table the current SELECT reads, unless it names a CTE
// in scope.
func (w *walker) rangeVar(r *pg_query.RangeVar) {
	if w.cur == nil {
		w.refuse(contracts.RefuseUnsupported, fmt.Sprintf("the guard cannot tell which query reads %s", r.Relname),
			"write the query more plainly")
		return
	}
	ref := r.Relname
	if r.Alias != nil && r.Alias.Aliasname != "" {
		ref = r.Alias.Aliasname
	}
	if w.cur.refs[ref] {
		w.refuse(contracts.RefuseUnsupported, fmt.Sprintf("two tables of one query are both called %s", ref),
			"give each table its own alias")
		return
	}
	w.cur.refs[ref] = true
	if r.Schemaname == "" && r.Catalogname == "" && w.isCTE(r.Relname) {
		w.cur.Derived = append(w.cur.Derived, ref)
		return
	}
	t := guard.Table{Catalog: r.Catalogname, Schema: r.Schemaname, Name: r.Relname}
	if r.Alias != nil {
		t.Alias = r.Alias.Aliasname
	}
	if t.Schema == "" {
		// pg_catalog comes first on every search path; then public, the
		// only schema of the sessions' search path.
		t.Schema = DefaultSchema
		if CatalogRelation(t.Name) {
			t.Schema = "pg_catalog"
		}
	}
	t.System = SystemSchema(t.Schema)
	w.cur.tables[ref] = t
	w.cur.Tables = append(w.cur.Tables, t)
}

// CatalogRelation reports whether an unqualified relation name is one of
// pg_catalog's: a listed one, or any pg_ name (a newer server's view). The
// guard reads it as pg_catalog's even when the search path holds a table of
// that name, since PostgreSQL searches pg_catalog first.
func CatalogRelation(name string) bool {
	return catalogRelations[name] || strings.HasPrefix(name, "pg_")
}

// CatalogRelations lists the pg_catalog relations the guard knows by name,
// sorted; CatalogRelation also takes any other pg_ name as pg_catalog's.
func CatalogRelations() []string {
	out := make([]string, 0, len(catalogRelations))
	for n := range catalogRelations {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// AttributeAllowed reports whether the guard lets a statement write name in
// attribute position (t.name, (expr).name): false when PostgreSQL could read
// it as a call of a built-in function the allowlist refuses.
func AttributeAllowed(name string) bool {
	if _, denied := familyOf(strings.ToLower(name)); denied {
		return false
	}
	return !unaryFunctions[name] || allowed[name]
}

// SystemSchema reports whether a schema is one of PostgreSQL's own:
// pg_catalog, information_schema, and the pg_toast and pg_temp schemas.
func SystemSchema(schema string) bool {
	return schema == "information_schema" || strings.HasPrefix(schema, "pg_")
}

func (w *walker) isCTE(name string) bool {
	for i := len(w.ctes) - 1; i >= 0; i-- {
		if w.ctes[i][name] {
			return true
		}
	}
	return false
}

// names returns a name list's strings; ok is false when one is not a string.
func names(ns []*pg_query.Node) (out []string, ok bool) {
	for _, n := range ns {
		s := n.GetString_()
		if s == nil {
			return nil, false
		}
		out = append(out, s.Sval)
	}
	return out, true
}

func (w *walker) funcCall(f *pg_query.FuncCall) {
	ns, ok := names(f.Funcname)
	if !ok || len(ns) == 0 {
		w.refuse(contracts.RefuseUnsupported, "the query calls a function the guard cannot name", "write the query more plainly")
		return
	}
	name := ns[len(ns)-1]
	shown := strings.Join(ns, ".")
	w.uses.addFunction(name)
	if len(ns) >= 2 {
		w.uses.addQualified(QualifiedFunction{Schema: ns[len(ns)-2], Name: name})
	}
	if f.AggDistinct || len(f.AggOrder) > 0 || f.AggWithinGroup || comparingFunctions[strings.ToLower(name)] {
		w.uses.Ordering = true
	}
	if growing[strings.ToLower(name)] {
		w.builds = true
	}
	if n, slow := slowFunctions[strings.ToLower(name)]; slow {
		w.slowOperation(name+"()", f.Args[:min(n, len(f.Args))])
	}
	if fam, denied := familyOf(strings.ToLower(name)); denied {
		w.refuse(fam.code, fmt.Sprintf("%s() %s", shown, fam.reason), fam.fix)
		return
	}
	if len(ns) > 2 || len(ns) == 2 && ns[0] != "pg_catalog" {
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s() is not a built-in function: only pg_catalog's allowlisted functions may be called", shown),
			"compute it with built-in functions and operators")
		return
	}
	if !allowed[name] {
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s() is not on the PostgreSQL function allowlist", shown),
			"use built-in aggregate, window, math, string, date/time and JSON functions")
	}
}

// columnRef reads a column reference. Every name after the first may be a
// call: PostgreSQL reads t.f, when t has no column f, as f(t), and c.f, when
// c is a column, as f(c).
func (w *walker) columnRef(c *pg_query.ColumnRef) {
	w.columnUse(c)
	var fields []string
	for _, f := range c.Fields {
		s := f.GetString_()
		if s == nil {
			break // t.*
		}
		fields = append(fields, s.Sval)
	}
	if len(fields) < 2 {
		return
	}
	for _, f := range fields[1:] {
		w.attribute(f)
	}
	chain := append(append([]*scope{}, w.outer...), w.cur)
	if w.cur == nil {
		chain = chain[:len(chain)-1]
	}
	w.attrs = append(w.attrs, attrRef{fields: fields, chain: chain})
}

// columnUse records c as a column use when it is col or q.col. A star
// (*, t.*) names no column, and three or more names (s.t.col, t.col.field)
// are left to a miss. In q.col the name col may be a call col(q) when q's
// table has no such column and a function col takes q's row type, so the
// names of PostgreSQL's functions that take any row (rowFunctions) are left
// out; a function of another type is never called so (q.name, q.upper are
// columns or errors).
func (w *walker) columnUse(c *pg_query.ColumnRef) {
	ns, ok := names(c.Fields)
	switch {
	case !ok:
	case len(ns) == 1:
		w.use("", ns[0])
	case len(ns) == 2 && !rowFunctions[ns[1]]:
		w.use(ns[0], ns[1])
	}
}

// using records the columns of a join's USING as uses of each side that is
// one table: a USING column is a column of both sides.
func (w *walker) using(j *pg_query.JoinExpr) {
	cols, ok := names(j.UsingClause)
	if !ok || len(cols) == 0 {
		return
	}
	saved := w.clause
	w.clause = "from_clause"
	defer func() { w.clause = saved }()
	for _, side := range []*pg_query.Node{j.Larg, j.Rarg} {
		r := side.GetRangeVar()
		if r == nil {
			continue
		}
		ref := r.Relname
		if r.Alias != nil && r.Alias.Aliasname != "" {
			ref = r.Alias.Aliasname
		}
		for _, col := range cols {
			w.use(ref, col)
		}
	}
}

// attribute refuses a name written in attribute position (t.f, c.f,
// (expr).f) that would call a function the allowlist refuses: a denied
// family, or any built-in that takes one argument and is not allowlisted.
// A column of that name is refused with it — the parse tree cannot tell
// them apart — and the fix says how to read such a column.
func (w *walker) attribute(name string) {
	lower := strings.ToLower(name)
	if fam, denied := familyOf(lower); denied {
		w.refuse(fam.code, fmt.Sprintf("%s, written as an attribute (x.%s), calls the function %s(x), which %s", name, name, name, fam.reason), fam.fix)
		return
	}
	if unaryFunctions[name] && !allowed[name] {
		// A built-in that takes one argument and is off the allowlist.
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s, written as an attribute (x.%s), may call the built-in function %s(x), which is not on the PostgreSQL function allowlist", name, name, name),
			fmt.Sprintf("if %s is a column, write it without a qualifier, or rename it in a subquery (SELECT %s AS %s_value FROM …)", name, name, name))
	}
}

// operator refuses an operator named in a schema other than pg_catalog —
// OPERATOR(myschema.+) runs whatever function that operator wraps — and any
// symbol that is not a built-in operator's.
func (w *walker) operator(name []*pg_query.Node) {
	if len(name) == 0 {
		return
	}
	ns, ok := names(name)
	if !ok || len(ns) > 2 || len(ns) == 2 && ns[0] != "pg_catalog" {
		w.refuse(contracts.RefuseFunctionDenied, "the query names an operator outside pg_catalog",
			"use the built-in operators")
		return
	}
	op := ns[len(ns)-1]
	w.uses.addOperator(op)
	if !builtinOperators[op] {
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("%s is not one of PostgreSQL's built-in operators: a user-defined operator runs whatever function it was created over", op),
			"use the built-in operators and allowlisted functions")
	}
}

func (w *walker) typeName(t *pg_query.TypeName) {
	ns, ok := names(t.Names)
	if !ok || len(ns) == 0 {
		return
	}
	name := ns[len(ns)-1]
	shown := strings.Join(ns, ".")
	w.uses.addCast(name)
	switch {
	case strings.ToLower(name) == "xml":
		w.refuse(xmlRule.code, "a cast to xml "+strings.TrimPrefix(xmlRule.reason, "XML "), xmlRule.fix)
	case regTypes[strings.ToLower(name)]:
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("a cast to %s looks up a database object named in a string", shown),
			"name the table in FROM; inspect_schema shows what is readable")
	case len(ns) > 2 || len(ns) == 2 && ns[0] != "pg_catalog", !builtinTypes[name]:
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("a cast to %s runs that type's own functions; only built-in types are allowed", shown),
			"cast to a built-in type (text, numeric, date, timestamptz, jsonb, …)")
	}
}

func (w *walker) rangeFunction(r *pg_query.RangeFunction) {
	if w.cur != nil {
		alias := ""
		if r.Alias != nil {
			alias = r.Alias.Aliasname
			w.cur.others[alias] = true
		}
		w.cur.Derived = append(w.cur.Derived, alias)
	}
	for _, item := range r.Functions {
		// Each item is a list: the call and its column definitions.
		var call *pg_query.Node
		if l := item.GetList(); l != nil && len(l.Items) > 0 {
			call = l.Items[0]
		} else {
			call = item
		}
		f := call.GetFuncCall()
		if f == nil {
			w.refuse(contracts.RefuseTableFunction, "the query reads from something other than a table or an allowed table function",
				"read from tables; the only table functions allowed in FROM are generate_series and unnest")
			return
		}
		ns, _ := names(f.Funcname)
		shown := strings.Join(ns, ".")
		ok := len(ns) == 1 || len(ns) == 2 && ns[0] == "pg_catalog"
		if !ok || !tableFunctions[ns[len(ns)-1]] {
			w.refuse(contracts.RefuseTableFunction, fmt.Sprintf("the query reads from %s(), a table function not allowed here", shown),
				"read from tables; the only table functions allowed in FROM are generate_series and unnest")
			return
		}
	}
}

func (w *walker) tableSample(r *pg_query.RangeTableSample) {
	ns, _ := names(r.Method)
	if len(ns) != 1 || ns[0] != "system" && ns[0] != "bernoulli" {
		w.refuse(contracts.RefuseFunctionDenied, "TABLESAMPLE may use only the built-in SYSTEM and BERNOULLI methods",
			"use TABLESAMPLE SYSTEM (…) or BERNOULLI (…)")
	}
}

// builtinTypes are the types a value may be cast to.
var builtinTypes = setOf("bool", "boolean", "int2", "int4", "int8", "smallint", "integer", "bigint", "int",
	"float4", "float8", "real", "numeric", "decimal", "money", "text", "varchar", "bpchar", "char",
	"character", "name", "bytea", "date", "time", "timetz", "timestamp", "timestamptz", "interval",
	"json", "jsonb", "jsonpath", "uuid", "inet", "cidr", "macaddr", "macaddr8", "xml", "tsvector",
	"tsquery", "bit", "varbit", "point", "line", "lseg", "box", "path", "polygon", "circle",
	"int4range", "int8range", "numrange", "tsrange", "tstzrange", "daterange", "int4multirange",
	"int8multirange", "nummultirange", "tsmultirange", "tstzmultirange", "datemultirange", "oid")
