package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// Operator is implemented by engines that take operational readings
// (contracts.OpOperations): what the engine reports about itself — its
// sessions, costly statements, table and index statistics, storage and
// health — read with curated statements only, never a caller's SQL, under
// the same read-only envelope and the request's timeout as the catalog
// reads. An engine (or a database) that cannot give a kind fails with a
// *KindUnsupportedError saying why; otherwise errors are as for Read, a
// *rowset.TooLargeError meaning the raw reading passed OperationsLimits.
type Operator interface {
	Operations(ctx context.Context, req Request, kind contracts.OperationsKind) (Reading, error)
}

// Reading is one operational reading as the engine took it.
type Reading struct {
	// Rows are in contracts.OperationsColumns[kind] order, one value per
	// declared column (nil where the engine cannot give the figure), in the
	// kind's order (the largest, slowest or longest-running first).
	Rows [][]any
	// Schemas holds, per row, the schema of the relation the row names;
	// "" for a row that names none (a session, a health check). The
	// executor narrows a reading by it.
	Schemas []string
	// Hidden counts the rows left out because they name a relation the
	// connection's readable patterns hide; Withheld the statement texts
	// replaced by NULL because they name one.
	Hidden, Withheld int
	// Notes are the engine's words about the reading (what is NULL and why,
	// where a figure comes from). They name no object of the database.
	Notes []string
	// SQL is the statements sent, for the record.
	SQL []string
	// Duration is the time spent at the database; Statements counts the
	// statements sent.
	Duration   time.Duration
	Statements int
}

// Add appends one row and the schema it names.
func (r *Reading) Add(schema string, row ...any) {
	r.Rows = append(r.Rows, row)
	r.Schemas = append(r.Schemas, schema)
}

// Note appends a note once.
func (r *Reading) Note(s string) {
	for _, n := range r.Notes {
		if n == s {
			return
		}
	}
	r.Notes = append(r.Notes, s)
}

// Sent records one statement sent and the time it took.
func (r *Reading) Sent(sql string, res Result) {
	r.SQL = append(r.SQL, sql)
	r.Statements += res.Statements
	r.Duration += res.Duration
}

// KindUnsupportedError says an engine, or this database, cannot give an
// operational reading of Kind: the executor refuses the request with
// contracts.RefuseKindUnsupported, Reason and Fix.
type KindUnsupportedError struct {
	Kind   contracts.OperationsKind
	Reason string
	Fix    string
}

func (e *KindUnsupportedError) Error() string {
	return fmt.Sprintf("the %s reading is not available: %s", e.Kind, e.Reason)
}

// OperationsScanRows bounds the rows an engine reads for one reading before
// the executor narrows it (the engines order and cut their statements to it).
const OperationsScanRows = 10000

// OperationsLimits bound the raw rows of one operational statement: a
// reading past them is refused (reading_over_budget), never cut short.
func OperationsLimits(opMem int64) rowset.Limits {
	return rowset.Limits{MaxRows: OperationsScanRows + 1, MaxBytes: int(max(min(opMem, 64<<20), 1<<20))}
}

// Unsupported is the KindUnsupportedError of kind with reason, and a fix
// naming the kinds this engine does answer.
func Unsupported(kind contracts.OperationsKind, reason string, answered ...contracts.OperationsKind) *KindUnsupportedError {
	names := make([]string, len(answered))
	for i, k := range answered {
		names[i] = string(k)
	}
	fix := "take another reading"
	if len(names) > 0 {
		fix = "take a reading this engine answers: " + strings.Join(names, ", ")
	}
	return &KindUnsupportedError{Kind: kind, Reason: reason, Fix: fix}
}

// NamesAny reports whether text (a statement, an engine message) holds one
// of names (lower-cased keys) as an identifier: a run of letters, digits,
// '_' and '$', bare or inside "…", […] or `…` quotes, compared
// case-insensitively. It errs on the side of finding: a name inside a
// string literal or a comment counts too, so a statement that might name a
// hidden relation is withheld rather than shown.
func NamesAny(text string, names map[string]bool) bool {
	if len(names) == 0 || text == "" {
		return false
	}
	check := func(word string) bool { return word != "" && names[strings.ToLower(word)] }
	isWord := func(r rune) bool { return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	// Bare words.
	for _, w := range strings.FieldsFunc(text, func(r rune) bool { return !isWord(r) }) {
		if check(w) {
			return true
		}
	}
	// Quoted identifiers, whose names may hold any character (a doubled
	// closing quote stands for itself).
	for _, q := range [][2]byte{{'"', '"'}, {'[', ']'}, {'`', '`'}} {
		for i := 0; i < len(text); i++ {
			if text[i] != q[0] {
				continue
			}
			var name strings.Builder
			j := i + 1
			for ; j < len(text); j++ {
				if text[j] == q[1] {
					if j+1 < len(text) && text[j+1] == q[1] {
						name.WriteByte(q[1])
						j++
						continue
					}
					break
				}
				name.WriteByte(text[j])
			}
			if j >= len(text) {
				break
			}
			if check(name.String()) {
				return true
			}
			i = j
		}
	}
	// A name that is not one word (spaces, punctuation) is looked for as
	// written, whatever surrounds it.
	lower := strings.ToLower(text)
	for n := range names {
		if strings.ContainsFunc(n, func(r rune) bool { return !isWord(r) }) && strings.Contains(lower, n) {
			return true
		}
	}
	return false
}

// Readings is an engine's table of operational readings, walked by Take:
// how each kind it answers is taken, and why it cannot give each of the
// others. S is what one reading holds (the engine, the statements' context,
// the schema asked for).
type Readings[S any] struct {
	// Engine names the engine in the refusal of a kind it has no reading of
	// ("PostgreSQL has no such reading").
	Engine string
	// Take takes the reading of each kind the engine answers into r.
	Take map[contracts.OperationsKind]func(s S, r *Reading) error
	// Refused says why the engine cannot give a kind it knows.
	Refused map[contracts.OperationsKind]string
}

// Answered lists the kinds the table takes, in contracts.OperationsKinds
// order.
func (t Readings[S]) Answered() []contracts.OperationsKind {
	var out []contracts.OperationsKind
	for _, k := range contracts.OperationsKinds {
		if t.Take[k] != nil {
			out = append(out, k)
		}
	}
	return out
}

// Check returns the *KindUnsupportedError of a kind the table does not
// take, naming the kinds it does; nil for one it takes.
func (t Readings[S]) Check(kind contracts.OperationsKind) error {
	if t.Take[kind] != nil {
		return nil
	}
	reason, ok := t.Refused[kind]
	if !ok {
		reason = t.Engine + " has no such reading"
	}
	return Unsupported(kind, reason, t.Answered()...)
}

// Read takes the reading of kind with s into r, or refuses it (Check).
func (t Readings[S]) Read(s S, r *Reading, kind contracts.OperationsKind) error {
	if err := t.Check(kind); err != nil {
		return err
	}
	return t.Take[kind](s, r)
}

// AddReadable adds each row whose relation readable allows — its schema
// and name being the row's first two values — as add makes it (nil adds
// the row as read), under that schema; a row it refuses is left out and
// counted in Hidden.
func (r *Reading) AddReadable(rows [][]any, readable func(schema, name string) bool, add func(row []any) []any) {
	for _, row := range rows {
		s, n := text(row[0]), text(row[1])
		if !readable(s, n) {
			r.Hidden++
			continue
		}
		if add != nil {
			row = add(row)
		}
		r.Add(s, row...)
	}
}

// AddStatements adds rows that each hold a statement text at col: one that
// names a relation of hidden is added with that text NULL and counted in
// Withheld, or, with drop, left out and counted in Hidden.
func (r *Reading) AddStatements(rows [][]any, col int, hidden map[string]bool, drop bool) {
	for _, row := range rows {
		if q, ok := row[col].(string); ok && NamesAny(q, hidden) {
			if drop {
				r.Hidden++
				continue
			}
			row[col] = nil
			r.Withheld++
		}
		r.Add("", row...)
	}
}

// Rows sends a reading's statement with s, records it in r and returns the
// rows it read.
type Rows[S any] func(s S, r *Reading) ([][]any, error)

// RelationRows is the Take of a reading whose rows each name a relation
// (Reading.AddReadable): rows read them, readable says what s may show, add
// shapes a row (nil: as read), and notes are the reading's notes.
func RelationRows[S any](rows Rows[S], readable func(s S) func(schema, name string) bool, add func(row []any) []any, notes ...string) func(S, *Reading) error {
	return func(s S, r *Reading) error {
		got, err := rows(s, r)
		if err != nil {
			return err
		}
		r.AddReadable(got, readable(s), add)
		for _, n := range notes {
			r.Note(n)
		}
		return nil
	}
}

// StatementRows is the Take of a reading whose rows each hold a statement
// text at col (Reading.AddStatements): rows read them, then hidden the
// relations a text must not name; notes are the reading's notes.
func StatementRows[S any](rows Rows[S], hidden func(s S, r *Reading) (map[string]bool, error), col int, drop bool, notes ...string) func(S, *Reading) error {
	return func(s S, r *Reading) error {
		got, err := rows(s, r)
		if err != nil {
			return err
		}
		h, err := hidden(s, r)
		if err != nil {
			return err
		}
		r.AddStatements(got, col, h, drop)
		for _, n := range notes {
			r.Note(n)
		}
		return nil
	}
}

// HiddenNames lists, lower-cased, the relations of rows (schema and name
// first) that readable refuses, and the schemas where it refuses every
// relation: a statement text naming one is withheld.
func HiddenNames(rows [][]any, readable func(schema, name string) bool) map[string]bool {
	hidden, shown := map[string]bool{}, map[string]bool{}
	for _, row := range rows {
		s, n := strings.ToLower(text(row[0])), text(row[1])
		if readable(text(row[0]), n) {
			shown[s] = true
			continue
		}
		hidden[s] = true
		hidden[strings.ToLower(n)] = true
	}
	// A schema is hidden with its relations only when none of them is
	// readable; a relation's name stays hidden even where it equals the
	// name of a schema shown.
	for s := range shown {
		delete(hidden, s)
	}
	for _, row := range rows {
		if s, n := text(row[0]), text(row[1]); !readable(s, n) {
			hidden[strings.ToLower(n)] = true
		}
	}
	return hidden
}

// NumText is an integer figure as text (nil stays nil; another value as
// fmt prints it).
func NumText(v any) any {
	switch x := v.(type) {
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return nil
	}
	return fmt.Sprint(v)
}

func text(v any) string {
	s, _ := v.(string)
	return s
}
