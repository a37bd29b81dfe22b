// Package rowset collects the rows of one result under a profile's bounds,
// in the shape artifacts store them: each value JSON-ready, a BLOB as
// {"type":"blob","hex":…,"bytes":N}.
package rowset

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/exectext"
)

// Truncation reasons, as ArtifactSummary.TruncatedBy names them: the row
// bound, or the size of the answer (its JSON encoding).
const (
	ByRows  = "rows"
	ByBytes = "answer_characters"
)

// Limits bound a result.
type Limits struct {
	// MaxRows and MaxBytes bound the rows kept and the size of their JSON
	// encoding; both must be positive.
	MaxRows  int
	MaxBytes int
	// Truncate keeps what fits and marks the set truncated; otherwise passing
	// a bound fails with *TooLargeError.
	Truncate bool
}

// Set is one result being collected.
type Set struct {
	Columns []contracts.Column
	Rows    [][]any
	// Bytes is the size of the rows' JSON encoding, as stored.
	Bytes       int
	Truncated   bool
	TruncatedBy []string
	limits      Limits
}

// New starts a set with its columns and bounds.
func New(columns []contracts.Column, limits Limits) *Set {
	return &Set{Columns: columns, Rows: [][]any{}, limits: limits}
}

// TooLargeError reports a result that passed a bound under a profile that
// refuses rather than truncates.
type TooLargeError struct {
	// By is ByRows or ByBytes.
	By string
	// Limit is the bound passed.
	Limit int
	// Rows counts the rows that fitted before it was passed.
	Rows int
}

func (e *TooLargeError) Error() string {
	if e.By == ByRows {
		return fmt.Sprintf("result has more than %d rows", e.Limit)
	}
	return fmt.Sprintf("result is larger than %d bytes after %d rows", e.Limit, e.Rows)
}

// Add appends row, whose values come from Value. It returns false when the
// set is full and truncated (stop reading), and *TooLargeError when a bound
// is passed under a refusing profile.
func (s *Set) Add(row []any) (bool, error) {
	size, err := encodedSize(row)
	if err != nil {
		return false, err
	}
	by, limit := "", 0
	switch {
	case len(s.Rows) >= s.limits.MaxRows:
		by, limit = ByRows, s.limits.MaxRows
	case s.Bytes+size > s.limits.MaxBytes:
		by, limit = ByBytes, s.limits.MaxBytes
	}
	if by != "" {
		if !s.limits.Truncate {
			return false, &TooLargeError{By: by, Limit: limit, Rows: len(s.Rows)}
		}
		s.Truncated, s.TruncatedBy = true, []string{by}
		return false, nil
	}
	s.Rows = append(s.Rows, row)
	s.Bytes += size
	return true, nil
}

// Summary describes the set for an artifact with correlation id cid.
func (s *Set) Summary(cid string) contracts.ArtifactSummary {
	return contracts.ArtifactSummary{
		CorrelationID: cid,
		Columns:       s.Columns,
		Rows:          len(s.Rows),
		Bytes:         s.Bytes,
		Truncated:     s.Truncated,
		TruncatedBy:   s.TruncatedBy,
	}
}

// Cells writes every row's values with Text: the rows as a model reads
// them, what a reply carries for the orchestrator to render.
func (s *Set) Cells() [][]string {
	out := make([][]string, len(s.Rows))
	for r, row := range s.Rows {
		out[r] = make([]string, len(row))
		for i, v := range row {
			out[r][i] = Text(v)
		}
	}
	return out
}

// encodedSize is the size row adds to the JSON array of rows: its encoding
// and a separating comma.
func encodedSize(row []any) (int, error) {
	b, err := json.Marshal(row)
	if err != nil {
		return 0, fmt.Errorf("rowset: encode row: %w", err)
	}
	return len(b) + 1, nil
}

// Blob is a BLOB value as results carry it.
type Blob struct {
	// Type is always "blob".
	Type string `json:"type"`
	// Hex is the value, hex-encoded.
	Hex string `json:"hex"`
	// Bytes is the value's length.
	Bytes int `json:"bytes"`
}

// NewBlob wraps b.
func NewBlob(b []byte) Blob { return Blob{Type: "blob", Hex: hex.EncodeToString(b), Bytes: len(b)} }

// ErrInvalidUTF8 reports a text value that is not valid UTF-8. It is never
// replaced silently: the caller reports it, and the query can read the value
// as a BLOB instead.
var ErrInvalidUTF8 = errors.New("text value is not valid UTF-8")

// Value converts a database/sql driver value into its result form: nil,
// int64, float64, bool, string or Blob. A non-finite float becomes the string
// "Infinity", "-Infinity" or "NaN" (JSON has no such numbers); a time becomes
// its SQLite text form.
func Value(v any) (any, error) {
	switch x := v.(type) {
	case nil, int64, bool:
		return x, nil
	case float64:
		switch {
		case math.IsInf(x, 1):
			return "Infinity", nil
		case math.IsInf(x, -1):
			return "-Infinity", nil
		case math.IsNaN(x):
			return "NaN", nil
		}
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, ErrInvalidUTF8
		}
		return x, nil
	case []byte:
		return NewBlob(x), nil
	case time.Time:
		return timeText(x), nil
	}
	return nil, fmt.Errorf("rowset: unexpected value type %T", v)
}

// timeText writes a time the way SQLite's date functions do: a date alone
// when it is midnight UTC, else date and time, with fractions and zone only
// when present.
func timeText(t time.Time) string {
	if t.Location() == time.UTC && t.Hour() == 0 && t.Minute() == 0 && t.Second() == 0 && t.Nanosecond() == 0 {
		return t.Format(time.DateOnly)
	}
	layout := "2006-01-02 15:04:05.999999999"
	if t.Location() != time.UTC {
		layout += "Z07:00"
	}
	return t.Format(layout)
}

// Text renders a result value on one line for a model to read: NULL for
// nil, a BLOB as its JSON form, and line breaks, tabs and other control
// characters in text escaped.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		return exectext.Line(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	case Blob:
		b, _ := json.Marshal(x)
		return string(b)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return exectext.Line(string(b))
}
