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
	refusal *contracts.Refusal
	scopes  []guard.Scope
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
}

// scope collects one SELECT's tables and bounds.
type scope struct {
	guard.Scope
	refs map[string]bool // the names the SELECT's tables are referred to by
	// tables maps the name a table is referred to by to the table; others
	// holds the names of its subqueries, functions and joins in FROM.
	tables map[string]guard.Table
	others map[string]bool
}

// attrRef is a column reference or field selection seen in a SELECT, with
// the SELECTs that were in view there, innermost last.
type attrRef struct {
	fields []string // a ColumnRef's names; for (expr).f, just f
	field  bool     // written (expr).f
	chain  []*scope
}

func (w *walker) refuse(code, reason, fix string) {
	if w.refusal == nil {
		w.refusal = guard.Refuse(code, reason, fix)
	}
}

// selectStmt reads one SELECT (or set operation) with its WITH.
func (w *walker) selectStmt(s *pg_query.SelectStmt) {
	if s == nil || w.refusal != nil {
		return
	}
	if wc := s.WithClause; wc != nil {
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
			if body == nil {
				w.refuse(contracts.RefuseNotReadOnly,
					fmt.Sprintf("the WITH query %s is %s: a data-modifying CTE writes even inside a SELECT", cte.Ctename, kind(cte.Ctequery)),
					"keep every WITH query a SELECT")
				return
			}
			saved := w.cur
			w.cur = nil
			w.selectStmt(body)
			w.cur = saved
			frame[cte.Ctename] = true
		}
	}
	if w.refusal != nil {
		return
	}

	saved := w.cur
	defer func() { w.cur = saved }()
	if s.Op != pg_query.SetOperation_SETOP_NONE && s.Op != pg_query.SetOperation_SET_OPERATION_UNDEFINED {
		w.selectStmt(s.Larg)
		w.selectStmt(s.Rarg)
		w.cur = nil
		w.fields(s.ProtoReflect())
		return
	}
	sc := &scope{refs: map[string]bool{}, tables: map[string]guard.Table{}, others: map[string]bool{}}
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
	w.scopes = append(w.scopes, sc.Scope)
}

// fields walks a SELECT's clauses other than its WITH and set-operation
// branches, which selectStmt reads itself.
func (w *walker) fields(m protoreflect.Message) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		switch fd.Name() {
		case "with_clause", "larg", "rarg":
			return true
		}
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
	case *pg_query.RangeTableFunc:
		w.refuse(contracts.RefuseTableFunction, "the query reads from XMLTABLE, a table function not allowed here",
			"read from tables; the only table functions allowed in FROM are generate_series and unnest")
	case *pg_query.JsonTable:
		w.refuse(contracts.RefuseTableFunction, "the query reads from JSON_TABLE, a table function not allowed here",
			"read from tables; the only table functions allowed in FROM are generate_series and unnest")
	case *pg_query.JoinExpr:
		if w.cur != nil {
			w.cur.Bounds = append(w.cur.Bounds, joinBounds(x)...)
			if x.Alias != nil {
				w.cur.others[x.Alias.Aliasname] = true
			}
		}
	case *pg_query.RangeSubselect:
		if w.cur != nil && x.Alias != nil {
			w.cur.others[x.Alias.Aliasname] = true
		}
	case *pg_query.ColumnRef:
		w.columnRef(x)
	case *pg_query.A_Indirection:
		for _, f := range x.Indirection {
			if s := f.GetString_(); s != nil {
				w.attribute(s.Sval)
				w.attrs = append(w.attrs, attrRef{fields: []string{s.Sval}, field: true})
			}
		}
	case *pg_query.A_Expr:
		switch x.Kind {
		case pg_query.A_Expr_Kind_AEXPR_BETWEEN, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN,
			pg_query.A_Expr_Kind_AEXPR_BETWEEN_SYM, pg_query.A_Expr_Kind_AEXPR_NOT_BETWEEN_SYM:
			// BETWEEN is >= and <= under a keyword's name.
			w.uses.addOperator(">=")
			w.uses.addOperator("<=")
		default:
			w.operator(x.Name)
		}
	case *pg_query.SubLink:
		w.operator(x.OperName)
	case *pg_query.SortBy:
		w.operator(x.UseOp)
	case *pg_query.IntoClause:
		w.refuse(contracts.RefuseNotReadOnly, "SELECT … INTO creates a table", "drop the INTO clause")
	case *pg_query.LockingClause:
		w.refuse(contracts.RefuseNotReadOnly, "the query locks rows (FOR UPDATE/SHARE)", "drop the FOR UPDATE/FOR SHARE clause")
	default:
		if name := string(m.Descriptor().Name()); strings.HasSuffix(name, "Stmt") {
			w.refuse(contracts.RefuseNotReadOnly, "the SELECT holds another statement: a "+strings.TrimSuffix(name, "Stmt"),
				"keep the query one plain SELECT")
		}
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
	if w.cur != nil && r.Alias != nil {
		w.cur.others[r.Alias.Aliasname] = true
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
