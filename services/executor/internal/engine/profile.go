package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
)

// ProfileSampleRows is how many rows a profile of a large table counts: a
// table under the connection's large-table rule is profiled over its first
// ProfileSampleRows rows as the engine returns them (a LIMIT or TOP, never
// a random sample), and the profile says so (TableProfile.Sampled).
const ProfileSampleRows = 100_000

// The shapes a pattern-depth profile counts, inside the database.
const (
	// EmailPattern is the LIKE pattern of an email-shaped value: something,
	// an @, something, a dot, something.
	EmailPattern = "%_@_%._%"
	// DigitRunLength is the shortest run of consecutive digits counted as a
	// digit run (account, card, phone and national numbers).
	DigitRunLength = 9
)

// Profiler is implemented by engines that profile a relation (OpProfile):
// one composed aggregate statement of counts, never a value from the table,
// run under the same read-only envelope and timeout as the engine's catalog
// reads. Errors as for Read.
type Profiler interface {
	// Profile counts the rows of p.Relation (a relation Describe returned)
	// and, per column of p.Columns, what p.Depth asks for. The statement
	// names the relation by its stored schema and name, each quoted by the
	// engine. A relation under the connection's large-table rule is counted
	// over ProfileSampleRows rows at most.
	Profile(ctx context.Context, req Request, p ProfileRequest) (ProfileResult, error)
	// Unprofilable lists the named objects that hold no rows to profile and
	// that a model may still name (sequences, macros, indexes, triggers),
	// each with its Schema, Name and EngineKind (the engine's word for it);
	// ones the readable patterns do not allow are counted, never named. The
	// executor asks only when a spelling names no relation.
	Unprofilable(ctx context.Context, req Request) (Catalog, error)
}

// ProfileRequest is what one profile measures.
type ProfileRequest struct {
	Relation contracts.Relation
	// Columns are the columns to cover, in the relation's order.
	Columns []contracts.RelationColumn
	Depth   contracts.ProfileDepth
}

// ColumnCounts are one column's counts; a nil count was not measured.
type ColumnCounts struct {
	Present    int64
	Distinct   *int64
	NoDistinct string
	EmailLike  *int64
	DigitRun   *int64
}

// ProfileResult is what one profile counted and what it cost.
type ProfileResult struct {
	// SQL is the statement sent.
	SQL  string
	Rows int64
	// Sampled is set when the relation is large and at most SampleRows
	// rows were counted.
	Sampled    bool
	SampleRows int64
	// Columns are ProfileRequest.Columns' counts, in the same order.
	Columns    []ColumnCounts
	Duration   time.Duration
	Statements int
}

// Dialect is how an engine writes the parts of a profile statement.
type Dialect struct {
	// Quote writes one identifier quoted.
	Quote func(ident string) string
	// Count is the counting aggregate's name ("count", "COUNT_BIG").
	Count string
	// NoDistinct says why a column of the declared type gets no distinct
	// count (the type has no equality the engine can count distinct
	// values by); "" when it gets one.
	NoDistinct func(typ string) string
	// Text reports whether a column of the declared type holds text, the
	// columns the shape tests apply to.
	Text func(typ string) bool
	// EmailLike and DigitRun write the predicate over the quoted column
	// that a value is email-shaped, or holds DigitRunLength digits in a row.
	EmailLike, DigitRun func(col string) string
	// Sample writes a query reading at most n rows of the columns cols
	// (quoted) from the relation from (quoted); cols may be empty.
	Sample func(cols []string, from string, n int64) string
}

// ProfilePlan is a composed profile statement and how its one row reads.
type ProfilePlan struct {
	SQL        string
	SampleRows int64
	columns    []slot
}

// slot is where a column's counts stand in the row (-1: not composed).
type slot struct {
	present, distinct, email, digits int
	noDistinct                       string
}

// ComposeProfile writes the one aggregate statement of p in d: count(*),
// and per column count(col), at distribution depth and past count(DISTINCT
// col) (unless the type has no equality: NoDistinct), at pattern depth the
// counts of email-shaped values and digit runs in text columns. sample > 0
// counts the first sample rows only. Every name is quoted from the stored
// schema and name; nothing of a request's spelling reaches the text.
func ComposeProfile(d Dialect, p ProfileRequest, sample int64) ProfilePlan {
	plan := ProfilePlan{SampleRows: sample}
	from := d.Quote(p.Relation.Schema) + "." + d.Quote(p.Relation.Name)
	var b strings.Builder
	b.WriteString("SELECT " + d.Count + "(*) AS n")
	n := 1
	add := func(expr, alias string, i int) int {
		fmt.Fprintf(&b, ",\n       %s AS %s%d", expr, alias, i)
		n++
		return n - 1
	}
	quoted := make([]string, len(p.Columns))
	for i, c := range p.Columns {
		col := d.Quote(c.Name)
		quoted[i] = col
		s := slot{present: -1, distinct: -1, email: -1, digits: -1}
		s.present = add(d.Count+"("+col+")", "p", i)
		if p.Depth == contracts.DepthDistribution || p.Depth == contracts.DepthPattern {
			if s.noDistinct = d.NoDistinct(c.Type); s.noDistinct == "" {
				s.distinct = add(d.Count+"(DISTINCT "+col+")", "d", i)
			}
		}
		if p.Depth == contracts.DepthPattern && d.Text(c.Type) {
			s.email = add(d.Count+"(CASE WHEN "+d.EmailLike(col)+" THEN 1 END)", "e", i)
			s.digits = add(d.Count+"(CASE WHEN "+d.DigitRun(col)+" THEN 1 END)", "g", i)
		}
		plan.columns = append(plan.columns, s)
	}
	if sample > 0 {
		from = "(" + d.Sample(quoted, from, sample) + ") AS sampled"
	}
	b.WriteString("\n  FROM " + from)
	plan.SQL = b.String()
	return plan
}

// Distinct reports whether the plan counts a distinct value anywhere.
func (plan ProfilePlan) Distinct() bool {
	for _, s := range plan.columns {
		if s.distinct >= 0 {
			return true
		}
	}
	return false
}

// Read turns what running the plan returned into the profile's counts.
func (plan ProfilePlan) Read(res Result, err error) (ProfileResult, error) {
	out := ProfileResult{SQL: plan.SQL, Duration: res.Duration, Statements: res.Statements,
		Sampled: plan.SampleRows > 0, SampleRows: plan.SampleRows}
	if err != nil {
		return out, err
	}
	if res.Rows == nil || len(res.Rows.Rows) != 1 {
		return out, &contracts.DBError{Class: contracts.DBOther, Message: "the profile statement did not return its one row of counts"}
	}
	row := res.Rows.Rows[0]
	at := func(i int) (int64, error) {
		if i < 0 || i >= len(row) {
			return 0, fmt.Errorf("count %d of %d missing", i+1, len(row))
		}
		return Count(row[i])
	}
	var cerr error
	ptr := func(i int) *int64 {
		if i < 0 {
			return nil
		}
		v, err := at(i)
		if err != nil && cerr == nil {
			cerr = err
		}
		return &v
	}
	rows, err := at(0)
	if err != nil {
		cerr = err
	}
	out.Rows = rows
	for _, s := range plan.columns {
		c := ColumnCounts{NoDistinct: s.noDistinct, Distinct: ptr(s.distinct), EmailLike: ptr(s.email), DigitRun: ptr(s.digits)}
		c.Present = *ptr(s.present)
		out.Columns = append(out.Columns, c)
	}
	if cerr != nil {
		return out, &contracts.DBError{Class: contracts.DBOther, Message: "reading the profile's counts: " + cerr.Error()}
	}
	return out, nil
}

// Count reads one count as an engine's driver returns it.
func Count(v any) (int64, error) {
	switch x := v.(type) {
	case int64:
		return x, nil
	case int32:
		return int64(x), nil
	case int:
		return int64(x), nil
	case float64:
		if x >= 0 && x == float64(int64(x)) {
			return int64(x), nil
		}
	case json.Number:
		return x.Int64()
	case string:
		return strconv.ParseInt(x, 10, 64)
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("a count of type %T", v)
}

// QuoteDouble writes an identifier in double quotes, doubling any inside:
// PostgreSQL's, SQLite's and DuckDB's quoting.
func QuoteDouble(ident string) string {
	return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`
}

// SampleLimit is Dialect.Sample for the engines that write LIMIT.
func SampleLimit(cols []string, from string, n int64) string {
	list := "1 AS one"
	if len(cols) > 0 {
		list = strings.Join(cols, ", ")
	}
	return "SELECT " + list + " FROM " + from + " LIMIT " + strconv.FormatInt(n, 10)
}
