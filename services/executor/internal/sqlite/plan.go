package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"regexp"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardsqlite "github.com/sondehq/sonde/pkg/guard/sqlite"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

var _ engine.Planner = (*Engine)(nil)

// explainPrefix is what the executor puts before a guarded statement to read
// its plan. A caller never writes it: the guard refuses a statement that
// begins with EXPLAIN like any that is not a SELECT.
const explainPrefix = "EXPLAIN QUERY PLAN "

// planNote is what a SQLite plan cannot tell.
const planNote = "SQLite's query plans carry no cost or row estimates"

// guardRead is the guard of a read, as Read applies it, on conn: the
// request's limits, SQLite's own reading under the connection's policy, the
// policy's rules, the run's failed statements and the result's columns. It
// returns the reading; on a refusal or a
// database error it returns the Result to report (its Fingerprint set where
// the statement was read).
func (e *Engine) guardRead(ctx context.Context, conn *sql.Conn, req engine.Request) (*guardsqlite.Reading, Result, error) {
	reader := guardsqlite.Reader{Compiler: guardsqlite.ConnCompiler(ctx, conn), Policy: e.policy}
	rd, err := reader.Inspect(req.SQL)
	var (
		ref        *contracts.Refusal
		compileErr *guardsqlite.CompileError
	)
	switch {
	case errors.As(err, &ref):
		return nil, Result{}, ref
	case errors.As(err, &compileErr):
		dbErr := classify(compileErr.Err, req.Timeout, "")
		if dbErr.Class == contracts.DBSyntax {
			return nil, Result{}, refuse.New(refuse.Unparsable, "SQLite cannot read the statement: "+dbErr.Message,
				"write it in SQLite's dialect (LIMIT n, not TOP; IFNULL, not ISNULL); a quote inside a literal is written twice ('it''s')")
		}
		if ref := req.Repeated(compileErr.Fingerprint); ref != nil {
			return nil, Result{}, ref
		}
		return nil, Result{Fingerprint: compileErr.Fingerprint}, dbErr
	case err != nil:
		return nil, Result{}, classify(err, req.Timeout, "")
	}
	if ref := guard.Apply(&rd.Statement, e.policy); ref != nil {
		return nil, Result{}, ref
	}
	if ref := req.Repeated(rd.Fingerprint()); ref != nil {
		return nil, Result{}, ref
	}
	if ref := checkColumns(rd.Columns); ref != nil {
		return nil, Result{}, ref
	}
	return rd, Result{}, nil
}

// Plan guards req.SQL exactly as Read does, then sends EXPLAIN QUERY PLAN of
// the guarded text on the same connection, under the statement's authorizer
// (SQLite compiles the statement again to plan it, and every table, column
// and function it compiles is held to the connection's rules), with the
// read's limits and deadline. SQLite plans the statement and never runs it.
// Result.Rows holds the plan as SQLite wrote it: one row per step, columns
// id, parent and detail.
func (e *Engine) Plan(ctx context.Context, req engine.Request) (Result, contracts.PlanSummary, error) {
	sum := contracts.PlanSummary{Engine: contracts.EngineSQLite, Access: []contracts.RelationAccess{}, Note: planNote}
	params, ref := checkRequest(req)
	if ref != nil {
		return Result{}, sum, ref
	}
	db, dbErr := e.current(ctx)
	if dbErr != nil {
		return Result{}, sum, dbErr
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return Result{}, sum, classify(err, req.Timeout, "")
	}
	defer conn.Close()
	if err := setLimits(conn, e.valueLimit); err != nil {
		return Result{}, sum, classify(err, req.Timeout, "")
	}
	rd, res, err := e.guardRead(ctx, conn, req)
	if err != nil {
		return res, sum, err
	}
	res, err = e.run(ctx, conn, explainPrefix+rd.Text, rd.CTEs, params, req.Limits, req.Timeout)
	res.Fingerprint = rd.Fingerprint()
	if err != nil {
		return res, sum, err
	}
	res.Rows = planRows(res.Rows)
	summarizeSQLite(res.Rows, tablesRead(rd), &sum)
	return res, sum, nil
}

// planRows keeps EXPLAIN QUERY PLAN's id, parent and detail columns (the
// fourth, notused, is SQLite's own).
func planRows(set *rowset.Set) *rowset.Set {
	if set == nil {
		return nil
	}
	keep := []int{}
	for i, c := range set.Columns {
		if c.Name != "notused" {
			keep = append(keep, i)
		}
	}
	if len(keep) == len(set.Columns) {
		return set
	}
	out := *set
	out.Columns = make([]contracts.Column, len(keep))
	for j, i := range keep {
		out.Columns[j] = set.Columns[i]
	}
	out.Rows = make([][]any, len(set.Rows))
	for r, row := range set.Rows {
		nr := make([]any, len(keep))
		for j, i := range keep {
			if i < len(row) {
				nr[j] = row[i]
			}
		}
		out.Rows[r] = nr
	}
	return &out
}

// The detail lines the summary reads. SQLite writes "SCAN t", "SCAN t AS a",
// "SCAN t USING COVERING INDEX i", "SCAN t USING INDEX i", "SEARCH t USING
// INDEX i (a=?)", "SEARCH t USING INTEGER PRIMARY KEY (rowid=?)", "SEARCH t
// USING PRIMARY KEY (a=?)" (a WITHOUT ROWID table) and "SEARCH t USING
// AUTOMATIC COVERING INDEX (a=?)" (older versions: "SCAN TABLE t").
var (
	scanRe  = regexp.MustCompile(`^(SCAN|SEARCH)(?: TABLE)? ("(?:[^"]|"")*"|\S+)(?: AS \S+)?(?: (.*))?$`)
	indexRe = regexp.MustCompile(`^USING (?:COVERING )?INDEX ("(?:[^"]|"")*"|\S+)`)
)

// tablesRead is the set of tables (lower case) SQLite's authorizer saw the
// statement read, CTEs that name no table left out: a SCAN or SEARCH of
// another name (a subquery, a CTE, constant rows) reads no relation.
func tablesRead(rd *guardsqlite.Reading) map[string]bool {
	ctes := map[string]bool{}
	for _, c := range rd.CTEs {
		ctes[strings.ToLower(c)] = true
	}
	out := map[string]bool{}
	for _, r := range rd.Reads {
		if t := strings.ToLower(r.Table); t != "" && !ctes[t] {
			out[t] = true
		}
	}
	return out
}

// summarizeSQLite reads the detail column of the plan into sum; tables are
// the relations the statement reads (tablesRead).
func summarizeSQLite(set *rowset.Set, tables map[string]bool, sum *contracts.PlanSummary) {
	if set == nil {
		return
	}
	detail := -1
	for i, c := range set.Columns {
		if c.Name == "detail" {
			detail = i
		}
	}
	if detail < 0 {
		return
	}
	// Names the plan gives to what is not a relation: the subqueries and
	// CTEs it materializes or runs as co-routines.
	steps := map[string]bool{}
	for _, row := range set.Rows {
		d, _ := row[detail].(string)
		for _, p := range []string{"MATERIALIZE ", "CO-ROUTINE "} {
			if name, ok := strings.CutPrefix(d, p); ok {
				steps[strings.ToLower(unquote(name))] = true
			}
		}
	}
	// With one table read, a name the plan gives it is an alias of it (with
	// more, the summary names the relation by the alias, as the plan does).
	only := ""
	if len(tables) == 1 {
		for t := range tables {
			only = t
		}
	}
	at := map[string]int{}
	seen := map[string]bool{}
	for _, row := range set.Rows {
		d, _ := row[detail].(string)
		rel, kind, index, ok := readDetail(d)
		if ok && !tables[strings.ToLower(rel)] {
			// An alias (SQLite names a table by its alias: SCAN a), unless
			// the name is a step's or the line reads constant rows.
			ok = !steps[strings.ToLower(rel)] && !strings.HasPrefix(rel, "(")
			if ok && only != "" {
				rel = only
			}
		}
		if !ok {
			if !seen[d] {
				seen[d] = true
				sum.Uninterpreted = append(sum.Uninterpreted, d)
			}
			continue
		}
		i, known := at[rel]
		if !known {
			at[rel] = len(sum.Access)
			sum.Access = append(sum.Access, contracts.RelationAccess{Relation: rel, Access: kind, Index: index})
			continue
		}
		ra := &sum.Access[i]
		if ra.Access != kind {
			ra.Access = contracts.AccessMixed
		}
		if ra.Index == "" {
			ra.Index = index
		}
	}
}

// readDetail reads one detail line: the relation it reads, how, and the
// index; ok is false for a line that reads no relation the summary knows
// how to read (a temporary B-tree, a co-routine, a compound query, …).
//
// SCAN and SEARCH are SQLite's own words for the two: a SCAN visits every
// row of the table, or every entry of an index when it names one (USING
// COVERING INDEX to avoid the table, USING INDEX for the index's order), so
// it is a full scan whatever it reads through — the index is kept in Index.
// Only a SEARCH, which seeks into an index or the rowid, reads by index.
func readDetail(d string) (rel string, kind contracts.AccessKind, index string, ok bool) {
	m := scanRe.FindStringSubmatch(d)
	if m == nil {
		return "", "", "", false
	}
	rel = unquote(m[2])
	using := m[3]
	if rel == "CONSTANT" && using == "ROW" || strings.HasPrefix(using, "CONSTANT ROW") {
		return "", "", "", false
	}
	if strings.HasPrefix(using, "VIRTUAL TABLE ") {
		// A virtual table's module decides how it reads (SCAN is written
		// for every virtual table, constrained or not).
		return rel, contracts.AccessUnknown, "", true
	}
	switch {
	case strings.HasPrefix(using, "USING AUTOMATIC "):
		index = "automatic"
	case strings.HasPrefix(using, "USING INTEGER PRIMARY KEY"):
		index = "INTEGER PRIMARY KEY"
	case strings.HasPrefix(using, "USING PRIMARY KEY"):
		index = "PRIMARY KEY"
	default:
		if im := indexRe.FindStringSubmatch(using); im != nil {
			index = unquote(im[1])
		}
	}
	switch {
	case m[1] == "SCAN" && (using == "" || index != ""):
		return rel, contracts.AccessFullScan, index, true
	case m[1] == "SEARCH" && index != "":
		return rel, contracts.AccessIndex, index, true
	}
	// A SEARCH that names no index, or a form this summary does not know.
	return rel, contracts.AccessUnknown, index, true
}

func unquote(s string) string {
	if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return s
}
