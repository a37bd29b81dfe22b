package rowset

import (
	"database/sql"
	"fmt"

	"github.com/sondehq/sonde/contracts"
)

// ValueError is a value a result cannot carry as read (invalid UTF-8, a
// non-finite number, a type with no JSON form). It names where it was.
type ValueError struct {
	Row    int
	Column string
	Err    error
}

func (e *ValueError) Error() string {
	return fmt.Sprintf("row %d, column %q: %v", e.Row, e.Column, e.Err)
}

func (e *ValueError) Unwrap() error { return e.Err }

// Convert turns one scanned value into what a result carries, given the
// column's database type name.
type Convert func(v any, dbType string) (any, error)

// Collect reads rows into a Set under limits. Each value passes through
// convert; keep, when not nil, drops the rows it returns false for. It stops
// at the first row a truncating profile cannot keep. Its error is a
// *TooLargeError (a refusing profile's bound), a *ValueError, or the
// driver's own error; the set read so far is returned either way.
func Collect(rows *sql.Rows, limits Limits, convert Convert, keep func([]any) bool) (*Set, error) {
	cols, err := rows.ColumnTypes()
	if err != nil {
		return nil, err
	}
	columns := make([]contracts.Column, len(cols))
	types := make([]string, len(cols))
	for i, c := range cols {
		types[i] = c.DatabaseTypeName()
		columns[i] = contracts.Column{Name: c.Name(), Type: types[i]}
	}
	set := New(columns, limits)
	raw := make([]any, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return set, err
		}
		row := make([]any, len(raw))
		for i, v := range raw {
			if row[i], err = convert(v, types[i]); err != nil {
				return set, &ValueError{Row: len(set.Rows) + 1, Column: columns[i].Name, Err: err}
			}
		}
		if keep != nil && !keep(row) {
			continue
		}
		more, err := set.Add(row)
		if err != nil {
			return set, err
		}
		if !more {
			return set, nil
		}
	}
	if err := rows.Err(); err != nil {
		return set, err
	}
	return set, rows.Close()
}
