package postgres

import (
	"slices"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/pkg/guard"
)

// Uses are the names through which a statement runs code: the functions it
// calls, the operators it writes or implies and the names it writes in
// attribute position (t.f, c.f, (expr).f), any of which PostgreSQL may read
// as a call. The guard checks them against the allowlist and PostgreSQL's
// built-ins; the executor checks them again against the live server's
// catalog, where a user-defined function or operator of one of these names
// would be the one that runs (Reader.ReadUses).
type Uses struct {
	// Functions are the names of every function called, without schema,
	// qualified or not: a call the grammar spells pg_catalog.f (EXTRACT,
	// SUBSTRING … FROM, the legacy json_object(…)) is a plain call of f on
	// an older server, resolved through the search path.
	Functions []string
	// Qualified are the calls written with a schema (s.f(…), pg_catalog
	// included, and the pg_catalog calls the grammar makes of SQL syntax:
	// EXTRACT, TRIM, AT TIME ZONE, …): the executor checks that each names a
	// built-in function of that schema, whatever the guard's own schema rule.
	Qualified []QualifiedFunction
	// Operators are the operator symbols the statement writes and those
	// PostgreSQL looks up by name without them being written:
	//   - "=" for a simple CASE (CASE x WHEN v: x = v), JOIN … USING and
	//     NATURAL JOIN (the join columns compared), IN (subquery) and
	//     = ANY (subquery) written without an operator;
	//   - ">=" and "<=" for BETWEEN and BETWEEN SYMMETRIC, "<" and ">" for
	//     NOT BETWEEN (SYMMETRIC);
	//   - "<>" for a recursive WITH's CYCLE clause (the cycle mark's values
	//     compared).
	// The rest carry their operator in the parse tree and are listed as
	// written: IN (list) "=", NOT IN (list) "<>", NULLIF and IS [NOT]
	// DISTINCT FROM "=", LIKE "~~", NOT LIKE "!~~", ILIKE "~~*", NOT ILIKE
	// "!~~*", SIMILAR TO "~" (with pg_catalog.similar_to_escape), row
	// comparisons their operator for each column, ORDER BY … USING its
	// operator.
	Operators []string
	// Attributes are the names written in attribute position.
	Attributes []Attribute
	// Casts are the names of the types the statement casts to (CAST, ::),
	// without schema: a user-defined cast into one of them runs its
	// function.
	Casts []string
	// Ordering is true when the statement compares, sorts, groups or
	// hashes values through an operator class or family that PostgreSQL
	// picks itself — the type's default btree or hash class, or the
	// families of an operator — rather than an operator written by name, so
	// a user-defined class for a type without a built-in one (json, xml,
	// point, …) runs its support functions: ORDER BY, GROUP BY (grouping
	// sets too), DISTINCT, DISTINCT ON, UNION, INTERSECT and EXCEPT
	// (UNION ALL alone compares nothing), window PARTITION BY and ORDER BY,
	// an aggregate's ORDER BY, DISTINCT or WITHIN GROUP, JSON_ARRAYAGG and
	// JSON_OBJECTAGG with ORDER BY, min and max, range_agg and
	// range_intersect_agg, array_position(s), array_remove and array_replace
	// (element equality), GREATEST and LEAST, a recursive WITH's SEARCH and
	// CYCLE, a simple CASE, JOIN … USING and NATURAL JOIN, and every
	// comparison (=, <>, <, >, <=, >=, the array comparisons @>, <@ and &&,
	// IN, ANY/ALL, subquery comparisons, IS [NOT] DISTINCT FROM, NULLIF,
	// BETWEEN): an array, record or range value is compared element by
	// element through the element type's default class, an IN list or IN
	// (subquery) may be hashed, and a join on a comparison may become a
	// merge or hash join over the operator's families. A join alone (a
	// cross join, a comma) compares nothing and does not set it. The index
	// classes of the tables read are a property of those tables, not of the
	// statement, and are not reported here.
	Ordering bool
	// Parameters is the highest parameter number written ($3 makes 3): the
	// number of values PostgreSQL expects bound to the statement.
	Parameters int
}

// QualifiedFunction is a function call written with a schema.
type QualifiedFunction struct {
	Schema, Name string
}

// Attribute is a name in attribute position. When the name before it is a
// table the statement reads, Schema and Table name that table: if it has a
// column of that name, PostgreSQL reads the column, never a call.
type Attribute struct {
	Name          string
	Schema, Table string
}

func (u *Uses) addFunction(name string)          { u.Functions = appendNew(u.Functions, name) }
func (u *Uses) addOperator(op string)            { u.Operators = appendNew(u.Operators, op) }
func (u *Uses) addCast(name string)              { u.Casts = appendNew(u.Casts, name) }
func (u *Uses) addQualified(f QualifiedFunction) { u.Qualified = appendNew(u.Qualified, f) }
func (u *Uses) addAttribute(a Attribute)         { u.Attributes = appendNew(u.Attributes, a) }

// appendNew appends v unless s already holds it.
func appendNew[T comparable](s []T, v T) []T {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

// resolve turns the attribute references into Attributes, now that every
// FROM has been read. In t.f the name f belongs to the table t when t is a
// table of a SELECT in view (the innermost first, as PostgreSQL looks); in
// s.t.f when s.t is one read without an alias. Any further name, and f of
// (expr).f, belongs to no table.
func (w *walker) resolve() {
	for _, a := range w.attrs {
		if a.field {
			w.uses.addAttribute(Attribute{Name: a.fields[0]})
			continue
		}
		f := a.fields
		k, t := 1, guard.Table{}
		if tt, ok := lookupQualified(a.chain, f[0], f[1]); ok && len(f) >= 3 {
			k, t = 2, tt
		} else if tt, ok := lookup(a.chain, f[0]); ok {
			t = tt
		}
		for i := k; i < len(f); i++ {
			at := Attribute{Name: f[i]}
			if i == k && t.Name != "" {
				at.Schema, at.Table = t.Schema, t.Name
			}
			w.uses.addAttribute(at)
		}
	}
}

// lookup finds the table a name refers to in the SELECTs in view; a
// subquery, function or join of that name hides tables further out.
func lookup(chain []*scope, ref string) (guard.Table, bool) {
	for i := len(chain) - 1; i >= 0; i-- {
		if t, ok := chain[i].tables[ref]; ok {
			return t, true
		}
		if chain[i].others[ref] {
			return guard.Table{}, false
		}
	}
	return guard.Table{}, false
}

// lookupQualified finds a table read as schema.name without an alias.
func lookupQualified(chain []*scope, schema, name string) (guard.Table, bool) {
	for i := len(chain) - 1; i >= 0; i-- {
		if t, ok := chain[i].tables[name]; ok && t.Alias == "" && t.Schema == schema {
			return t, true
		}
	}
	return guard.Table{}, false
}

// joinBounds are the bounds of a join's ON with the tables they limit: a
// condition in the ON of an outer join filters only the side that is not
// preserved.
func joinBounds(j *pg_query.JoinExpr) []guard.Bound {
	bs := bounds(j.Quals)
	var limits []string
	switch j.Jointype {
	case pg_query.JoinType_JOIN_LEFT:
		limits = refsOf(j.Rarg, []string{})
	case pg_query.JoinType_JOIN_RIGHT:
		limits = refsOf(j.Larg, []string{})
	case pg_query.JoinType_JOIN_FULL:
		limits = []string{}
	default:
		return bs
	}
	for i := range bs {
		bs[i].Limits = limits
	}
	return bs
}

// refsOf lists the names the tables and subqueries of one side of a join
// are referred to by.
func refsOf(n *pg_query.Node, out []string) []string {
	switch x := n.GetNode().(type) {
	case *pg_query.Node_RangeVar:
		if x.RangeVar.Alias != nil && x.RangeVar.Alias.Aliasname != "" {
			return append(out, x.RangeVar.Alias.Aliasname)
		}
		return append(out, x.RangeVar.Relname)
	case *pg_query.Node_JoinExpr:
		out = refsOf(x.JoinExpr.Larg, out)
		return refsOf(x.JoinExpr.Rarg, out)
	case *pg_query.Node_RangeSubselect:
		if x.RangeSubselect.Alias != nil {
			return append(out, x.RangeSubselect.Alias.Aliasname)
		}
	case *pg_query.Node_RangeFunction:
		if x.RangeFunction.Alias != nil {
			return append(out, x.RangeFunction.Alias.Aliasname)
		}
	}
	return out
}
