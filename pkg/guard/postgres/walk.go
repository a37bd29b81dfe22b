package postgres

import (
	"fmt"
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
	// ctes holds the CTE names visible here, one frame per enclosing WITH.
	ctes []map[string]bool
}

// scope collects one SELECT's tables and bounds.
type scope struct {
	guard.Scope
	refs map[string]bool // the names the SELECT's tables are referred to by
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
	sc := &scope{refs: map[string]bool{}}
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
			w.cur.Bounds = append(w.cur.Bounds, bounds(x.Quals)...)
		}
	case *pg_query.ColumnRef:
		if len(x.Fields) > 1 {
			w.attribute(x.Fields[len(x.Fields)-1])
		}
	case *pg_query.A_Indirection:
		for _, f := range x.Indirection {
			w.attribute(f)
		}
	case *pg_query.A_Expr:
		w.operator(x.Name)
	case *pg_query.SubLink:
		w.operator(x.OperName)
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
	if t.Schema == "" && strings.HasPrefix(t.Name, "pg_") {
		t.Schema = "pg_catalog"
	}
	w.cur.Tables = append(w.cur.Tables, t)
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

// attribute refuses a qualified column reference whose last name is a
// denied function: t.f may call f(t).
func (w *walker) attribute(n *pg_query.Node) {
	s := n.GetString_()
	if s == nil {
		return
	}
	if fam, denied := familyOf(strings.ToLower(s.Sval)); denied {
		w.refuse(fam.code, fmt.Sprintf("%s, written as an attribute, calls the function %s(), which %s", s.Sval, s.Sval, fam.reason), fam.fix)
	}
}

// operator refuses an operator named in a schema other than pg_catalog:
// OPERATOR(myschema.+) runs whatever function that operator wraps.
func (w *walker) operator(name []*pg_query.Node) {
	if len(name) < 2 {
		return
	}
	ns, ok := names(name)
	if !ok || len(ns) != 2 || ns[0] != "pg_catalog" {
		w.refuse(contracts.RefuseFunctionDenied, "the query names an operator outside pg_catalog",
			"use the built-in operators")
	}
}

func (w *walker) typeName(t *pg_query.TypeName) {
	ns, ok := names(t.Names)
	if !ok || len(ns) == 0 {
		return
	}
	name := ns[len(ns)-1]
	shown := strings.Join(ns, ".")
	switch {
	case regTypes[strings.ToLower(name)]:
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("a cast to %s looks up a database object named in a string", shown),
			"name the table in FROM; list_tables shows what is readable")
	case len(ns) > 2 || len(ns) == 2 && ns[0] != "pg_catalog", !builtinTypes[name]:
		w.refuse(contracts.RefuseFunctionDenied,
			fmt.Sprintf("a cast to %s runs that type's own functions; only built-in types are allowed", shown),
			"cast to a built-in type (text, numeric, date, timestamptz, jsonb, …)")
	}
}

func (w *walker) rangeFunction(r *pg_query.RangeFunction) {
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
