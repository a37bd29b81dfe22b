package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// The driver (duckdb-go) materialises a whole result before the first row
// reaches Go, and DuckDB keeps a materialised result outside its
// memory_limit: a statement returning a thousand 1 MB values took the
// process past 1.5 GB before rowset's bounds could stop it. So a read runs
// wrapped in a statement that makes DuckDB itself produce no more than the
// bounds can use:
//
//	SELECT CASE WHEN <over> THEN NULL ELSE COLUMNS(*) END, <over>
//	FROM (SELECT * FROM (<statement>) LIMIT <MaxRows+1>) AS sonde_q(sonde_c0, …)
//
// The inner LIMIT ends the statement at one row past the row bound (DuckDB
// pushes it down where it can, so fewer rows are even built). <over> is true
// once the running total of the rows' sizes passes the byte bound; such rows
// come back emptied (all NULL) with the last column true, so nothing past
// the bound is held. DuckDB runs the running total as a streaming window,
// which keeps the statement's order (an inner ORDER BY holds) and holds no
// rows of its own. The columns are renamed by position (the statement's own
// names come from its prepare), so no name of the statement's can stand in
// for the wrapper's.
//
// A row's size is its values' text: a VARCHAR's length and a BLOB's, read
// without a copy; any other value cast to VARCHAR. That text is never more
// than about twice a value's JSON form (a list's ", " against ","), so the
// byte bound is twice the result's: rowset's exact count passes the
// result's bound first, and DuckDB holds at most about twice the bound. An
// emptied row that arrives anyway is read as the bound passed.
//
// What this does not bound: DuckDB works a vector (up to 2048 rows) at a
// time, and the strings of a vector are outside its memory_limit; the
// guard's cap on a built value (guardduckdb.MaxBuiltValue) and the widest
// value the file holds bound that.

// boundFactor is how many times the result's byte bound DuckDB's estimate
// may reach before it empties rows.
const boundFactor = 2

// column is a result column: its name, and its type as the driver names it
// (DatabaseTypeName; only VARCHAR and BLOB are told apart, any other value
// is measured as its text).
type column struct {
	name, typ string
}

// preparedColumns names and types the columns of a prepared statement. A
// parameter's type is known only once bound, and a statement with one in
// its select list reports a single column of no type: then it returns nil.
func preparedColumns(s *duckdb.Stmt) ([]column, error) {
	n, err := s.ColumnCount()
	if err != nil {
		return nil, err
	}
	cols := make([]column, n)
	for i := range cols {
		t, err := s.ColumnType(i)
		if err != nil {
			return nil, err
		}
		if t == duckdb.TYPE_INVALID {
			return nil, nil
		}
		if cols[i].name, err = s.ColumnName(i); err != nil {
			return nil, err
		}
		switch t {
		case duckdb.TYPE_VARCHAR:
			cols[i].typ = "VARCHAR"
		case duckdb.TYPE_BLOB:
			cols[i].typ = "BLOB"
		default:
			cols[i].typ = "other"
		}
	}
	return cols, nil
}

// probeColumns reads the columns of stmt, with its parameters bound, from a
// result of no rows. Their names are the subquery's, where a duplicate
// gains a suffix (a, a_1).
func probeColumns(ctx context.Context, conn *sql.Conn, stmt string, params []any) ([]column, error) {
	rows, err := conn.QueryContext(ctx, "SELECT * FROM (\n"+stmt+"\n) LIMIT 0", params...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	types, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	cols := make([]column, len(types))
	for i, t := range types {
		cols[i] = column{name: t.Name(), typ: t.DatabaseTypeName()}
	}
	return cols, rows.Close()
}

// boundedSQL wraps stmt, whose result has the columns cols, so that DuckDB
// returns at most limits.MaxRows+1 rows and empties those past the byte
// bound.
func boundedSQL(stmt string, cols []column, limits rowset.Limits) string {
	var size, rename strings.Builder
	size.WriteString("0")
	for i, c := range cols {
		name := fmt.Sprintf("sonde_c%d", i)
		if i > 0 {
			rename.WriteString(", ")
		}
		rename.WriteString(name)
		// One for the comma between values (JSON's null has four).
		switch c.typ {
		case "VARCHAR":
			fmt.Fprintf(&size, " + 1 + coalesce(strlen(%s), 0)", name)
		case "BLOB":
			fmt.Fprintf(&size, " + 1 + coalesce(octet_length(%s), 0)", name)
		default:
			fmt.Fprintf(&size, " + 1 + coalesce(strlen(%s::VARCHAR), 0)", name)
		}
	}
	over := fmt.Sprintf("(sum(%s) OVER (ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) > %d)",
		size.String(), boundFactor*int64(limits.MaxBytes))
	// The statement stands on lines of its own: a trailing line comment ends
	// before the wrapper goes on.
	return fmt.Sprintf("SELECT CASE WHEN %s THEN NULL ELSE COLUMNS(*) END, %s FROM (SELECT * FROM (\n%s\n) LIMIT %d) AS sonde_q(%s)",
		over, over, stmt, limits.MaxRows+1, rename.String())
}

// collectBounded reads the rows of a boundedSQL statement into a set under
// limits, with the statement's own column names (DuckDB renames duplicates
// in a subquery: a, a_1). An emptied row (its last column true) ends the
// read as the byte bound passed. Errors as for rowset.Collect.
func collectBounded(rows *sql.Rows, prepared []column, limits rowset.Limits) (*rowset.Set, error) {
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, errors.New("duckdb: the bounded statement returned no columns")
	}
	n := len(cols) - 1
	if len(prepared) != n {
		return nil, fmt.Errorf("duckdb: the bounded statement has %d columns, the statement %d", n, len(prepared))
	}
	names := make([]string, n)
	for i, c := range prepared {
		names[i] = c.name
	}
	columns := make([]contracts.Column, n)
	types := make([]string, n)
	for i := range columns {
		types[i] = cols[i].DatabaseTypeName()
		columns[i] = contracts.Column{Name: names[i], Type: types[i]}
	}
	set := rowset.New(columns, limits)
	raw := make([]any, n+1)
	dest := make([]any, n+1)
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return set, err
		}
		if over, _ := raw[n].(bool); over {
			return set, passed(set, limits)
		}
		row := make([]any, n)
		for i, v := range raw[:n] {
			if row[i], err = value(v, types[i]); err != nil {
				return set, &rowset.ValueError{Row: len(set.Rows) + 1, Column: names[i], Err: err}
			}
		}
		more, err := set.Add(row)
		if err != nil || !more {
			return set, err
		}
	}
	if err := rows.Err(); err != nil {
		return set, err
	}
	return set, rows.Close()
}

// passed ends a read whose rows went on past DuckDB's byte bound, as
// rowset.Set.Add ends one past its own: truncated where the profile
// truncates, *rowset.TooLargeError where it refuses. The row bound, when
// reached as well, is named first, as Add does.
func passed(set *rowset.Set, limits rowset.Limits) error {
	by, limit := rowset.ByBytes, limits.MaxBytes
	if len(set.Rows) >= limits.MaxRows {
		by, limit = rowset.ByRows, limits.MaxRows
	}
	if limits.Truncate {
		set.Truncated, set.TruncatedBy = true, []string{by}
		return nil
	}
	return &rowset.TooLargeError{By: by, Limit: limit, Rows: len(set.Rows)}
}
