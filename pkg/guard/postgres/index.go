package postgres

import (
	"fmt"
	"strings"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// Index is a CREATE INDEX statement read for planning as if the index
// existed (a hypothetical index: nothing is created). Its text came from the
// caller and is attacker text like any statement; what the engine is given
// is Text, written back from the parse with only the parts read here, never
// the caller's text.
type Index struct {
	// Text is the index as the engine receives it: CREATE INDEX ON
	// schema.table USING method (columns) [INCLUDE (columns)] [WHERE …],
	// no name, options or tablespace.
	Text string
	// Probe is SELECT of the index's columns FROM its table WHERE its
	// predicate, as the guard read it: apply the connection's readable
	// patterns to it (the table must be one a read could read), and check
	// Uses against the live catalog as for a read, since the planner
	// evaluates the predicate's functions and operators.
	Probe *guard.Statement
	// Uses are what the predicate calls (see Uses).
	Uses Uses
}

// indexMethods are the access methods a hypothetical index may use: those
// hypopg plans with that PostgreSQL ships.
var indexMethods = map[string]bool{"btree": true, "hash": true, "brin": true}

// indexFix is the shape every refusal of a hypothetical index points to.
const indexFix = "send one CREATE INDEX on plain columns of a readable table, e.g. CREATE INDEX ON public.orders (customer_id, created_at)"

// ReadIndex reads sql, which must be exactly one CREATE INDEX of a table on
// plain columns (optionally ordered), with optional INCLUDE columns and a
// WHERE predicate the guard accepts as it would in a read. It refuses
// expressions, operator classes, collations, UNIQUE, CONCURRENTLY, ONLY,
// TABLESPACE and WITH options: what it does not read it does not vouch
// for. The index's name and IF NOT EXISTS are dropped (nothing is created).
func (r Reader) ReadIndex(sql string) (*Index, *contracts.Refusal) {
	if ref := guard.CheckShape(sql, guard.LexPostgres); ref != nil {
		return nil, ref
	}
	if strings.IndexByte(sql, 0) >= 0 {
		return nil, guard.Refuse(contracts.RefuseUnparsable, "the index statement holds a NUL byte", "send it as plain text")
	}
	tree, err := pg_query.Parse(sql)
	if err != nil {
		return nil, guard.Refuse(contracts.RefuseUnparsable,
			"PostgreSQL cannot read the index statement: "+err.Error(), indexFix)
	}
	switch n := len(tree.Stmts); {
	case n == 0:
		return nil, guard.Refuse(contracts.RefuseEmpty, "the index statement is blank, or only comments and semicolons", indexFix)
	case n > 1:
		return nil, guard.Refuse(contracts.RefuseNotOneStatement,
			fmt.Sprintf("the index statement holds %d statements", n), indexFix)
	}
	stmt := tree.Stmts[0].GetStmt()
	ix := stmt.GetIndexStmt()
	if ix == nil {
		return nil, guard.Refuse(contracts.RefuseBadRequest,
			fmt.Sprintf("the hypothetical index is %s, not a CREATE INDEX", kind(stmt)), indexFix)
	}
	if ref := indexOptions(ix); ref != nil {
		return nil, ref
	}
	rel := ix.GetRelation()
	if rel == nil || rel.Relname == "" {
		return nil, guard.Refuse(contracts.RefuseBadRequest, "the index names no table", indexFix)
	}
	if !rel.Inh {
		return nil, unsupportedIndex("ON ONLY", "drop ONLY: the index is planned on the table as named")
	}
	keys, cols, ref := indexColumns(ix.IndexParams, true)
	if ref != nil {
		return nil, ref
	}
	if len(keys) == 0 {
		return nil, guard.Refuse(contracts.RefuseBadRequest, "the index has no columns", indexFix)
	}
	incl, inclCols, ref := indexColumns(ix.IndexIncludingParams, false)
	if ref != nil {
		return nil, ref
	}

	// The probe reads the table, its columns and the predicate as a read
	// would: the guard's table resolution, allowlist and uses.
	probe, err := pg_query.Deparse(&pg_query.ParseResult{Version: tree.Version, Stmts: []*pg_query.RawStmt{{Stmt: probeSelect(rel, append(cols, inclCols...), ix.WhereClause)}}})
	if err != nil {
		return nil, guard.Refuse(contracts.RefuseUnsupported, "the guard cannot write the index's predicate back: "+err.Error(), indexFix)
	}
	st, uses, ref := r.ReadUses(probe)
	if ref != nil {
		return nil, ref
	}
	if len(st.Scopes) != 1 || len(st.Scopes[0].Tables) != 1 {
		// PostgreSQL allows no subquery in an index predicate either.
		return nil, guard.Refuse(contracts.RefuseUnsupported, "the index's predicate holds a subquery",
			"write the predicate over the table's own columns and constants")
	}
	t := st.Scopes[0].Tables[0]
	schema := t.Schema
	if schema == "" {
		schema = DefaultSchema
	}
	method := ix.AccessMethod
	if method == "" {
		method = "btree"
	}
	out := &pg_query.IndexStmt{
		Relation:             &pg_query.RangeVar{Schemaname: schema, Relname: t.Name, Inh: true, Relpersistence: "p", Location: -1},
		AccessMethod:         method,
		IndexParams:          keys,
		IndexIncludingParams: incl,
		WhereClause:          ix.WhereClause,
	}
	text, err := pg_query.Deparse(&pg_query.ParseResult{Version: tree.Version, Stmts: []*pg_query.RawStmt{{Stmt: &pg_query.Node{Node: &pg_query.Node_IndexStmt{IndexStmt: out}}}}})
	if err != nil {
		return nil, guard.Refuse(contracts.RefuseUnsupported, "the guard cannot write the index back: "+err.Error(), indexFix)
	}
	return &Index{Text: text, Probe: st, Uses: uses}, nil
}

// indexOptions refuses the parts of a CREATE INDEX that are not a plain
// index on columns.
func indexOptions(ix *pg_query.IndexStmt) *contracts.Refusal {
	switch {
	case ix.Unique || ix.Primary || ix.Isconstraint || ix.NullsNotDistinct:
		return unsupportedIndex("UNIQUE", "drop UNIQUE: a hypothetical index asserts nothing about the data")
	case ix.Concurrent:
		return unsupportedIndex("CONCURRENTLY", "drop CONCURRENTLY: nothing is built")
	case ix.TableSpace != "":
		return unsupportedIndex("TABLESPACE", "drop TABLESPACE: nothing is stored")
	case len(ix.Options) > 0:
		return unsupportedIndex("WITH (storage parameters)", "drop the WITH clause")
	case len(ix.ExcludeOpNames) > 0:
		return unsupportedIndex("an exclusion constraint", indexFix)
	}
	m := ix.AccessMethod
	if m != "" && !indexMethods[m] {
		return guard.Refuse(contracts.RefuseUnsupported,
			fmt.Sprintf("a hypothetical index cannot use the access method %q", m),
			"use USING btree (the default), hash or brin")
	}
	return nil
}

func unsupportedIndex(what, fix string) *contracts.Refusal {
	return guard.Refuse(contracts.RefuseUnsupported, "a hypothetical index cannot hold "+what, fix)
}

// indexColumns reads the key (or INCLUDE) columns of an index: plain column
// names only, keys with their order. It returns fresh elements holding only
// what was read, and the column names.
func indexColumns(params []*pg_query.Node, key bool) ([]*pg_query.Node, []string, *contracts.Refusal) {
	var out []*pg_query.Node
	var cols []string
	for _, p := range params {
		el := p.GetIndexElem()
		if el == nil {
			return nil, nil, guard.Refuse(contracts.RefuseUnsupported, "the guard cannot read an index column", indexFix)
		}
		switch {
		case el.Expr != nil || el.Name == "":
			return nil, nil, guard.Refuse(contracts.RefuseUnsupported,
				"a hypothetical index may hold plain columns only, not expressions (nor a column in parentheses)",
				"index the column itself: CREATE INDEX ON table (column)")
		case len(el.Opclass) > 0 || len(el.Opclassopts) > 0:
			return nil, nil, unsupportedIndex("an operator class", "drop the operator class: the column's default one is planned")
		case len(el.Collation) > 0:
			return nil, nil, unsupportedIndex("a COLLATE clause", "drop COLLATE: the column's collation is planned")
		}
		fresh := &pg_query.IndexElem{Name: el.Name,
			Ordering: pg_query.SortByDir_SORTBY_DEFAULT, NullsOrdering: pg_query.SortByNulls_SORTBY_NULLS_DEFAULT}
		if key {
			fresh.Ordering, fresh.NullsOrdering = el.Ordering, el.NullsOrdering
		}
		out = append(out, &pg_query.Node{Node: &pg_query.Node_IndexElem{IndexElem: fresh}})
		cols = append(cols, el.Name)
	}
	return out, cols, nil
}

// probeSelect is SELECT cols FROM rel WHERE pred, from fresh nodes.
func probeSelect(rel *pg_query.RangeVar, cols []string, pred *pg_query.Node) *pg_query.Node {
	targets := make([]*pg_query.Node, len(cols))
	for i, c := range cols {
		targets[i] = pg_query.MakeResTargetNodeWithVal(pg_query.MakeColumnRefNode([]*pg_query.Node{pg_query.MakeStrNode(c)}, -1), -1)
	}
	from := &pg_query.RangeVar{Catalogname: rel.Catalogname, Schemaname: rel.Schemaname, Relname: rel.Relname,
		Inh: true, Relpersistence: "p", Location: -1}
	return &pg_query.Node{Node: &pg_query.Node_SelectStmt{SelectStmt: &pg_query.SelectStmt{
		TargetList:  targets,
		FromClause:  []*pg_query.Node{{Node: &pg_query.Node_RangeVar{RangeVar: from}}},
		WhereClause: pred,
		LimitOption: pg_query.LimitOption_LIMIT_OPTION_DEFAULT,
		Op:          pg_query.SetOperation_SETOP_NONE,
	}}}
}
