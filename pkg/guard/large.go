package guard

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
)

// LargeColumn reports whether p's large-table rule covers t under rule, and
// the column that rule bounds: the same loose comparison the bound check
// makes (checkBounds), so code that reads a table without a statement of
// the model's (a table profile) treats as large exactly what a statement
// would have to bound.
func (p Policy) LargeColumn(rule NameRule, t Table) (string, bool) {
	m := newMatcher(rule, p)
	schema := m.schemaOf(t)
	for _, k := range m.large {
		if k.matches(schema, t.Name, p.DefaultSchema, loose) {
			return k.column.text, true
		}
	}
	return "", false
}

// BoundFloor is the earliest point in time a lower bound on a large table's
// column may name: a bound at or before it ('-infinity', '0001-01-01',
// SQL Server's '1753-01-01', the Unix epoch, now() - interval '100 years')
// is a sentinel that limits no row of a real table, and does not count.
var BoundFloor = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)

// BoundKind says what a reader made of the value a bound compares its
// column with.
type BoundKind int

const (
	// BoundUnknown is a value the reader could not reduce to a literal or
	// to the current time: a function of constants it does not evaluate.
	// It bounds nothing the guard can vouch for.
	BoundUnknown BoundKind = iota
	// BoundNull is NULL: a comparison with it holds for no row.
	BoundNull
	// BoundNumber is a numeric literal (Number).
	BoundNumber
	// BoundString is a string literal (Text), a date or time written as one
	// included.
	BoundString
	// BoundNow is the current date or time, Back before it.
	BoundNow
	// BoundParam is a parameter: its value comes with the statement.
	BoundParam
)

// BoundValue is the value a bound compares its column with, reduced by an
// engine's reader to what decides whether it limits anything.
type BoundValue struct {
	Kind   BoundKind
	Number float64
	Text   string
	// Back is how long before the current time a BoundNow value is
	// (negative: after it).
	Back time.Duration
}

// BoundYear is the length of a year in a bound's reach: 366 days, so that a
// reach in years is never taken as shorter than it is.
const BoundYear = 366 * 24 * time.Hour

// Vacuous says why v bounds nothing, or "" when it is a real lower limit:
// a number above zero, a date or time after BoundFloor (a string that reads
// as one), the current time minus a reach that stays after BoundFloor, or a
// parameter. NULL, non-finite and non-positive numbers, strings that are
// neither dates nor numbers (”, '\x00', '-infinity'), dates at or before the
// floor and values the reader could not reduce do not count.
func (v BoundValue) Vacuous(now time.Time) string {
	switch v.Kind {
	case BoundParam:
		return ""
	case BoundNull:
		return "NULL is no lower limit: a comparison with it holds for no row"
	case BoundNumber:
		return vacuousNumber(v.Number, strconv.FormatFloat(v.Number, 'g', -1, 64))
	case BoundString:
		return vacuousString(v.Text, now)
	case BoundNow:
		if t := now.Add(-v.Back); !t.After(BoundFloor) {
			return fmt.Sprintf("the current time minus %s reaches back to %s, not after %s", reach(v.Back), t.Format("2006-01-02"), BoundFloor.Format("2006-01-02"))
		}
		return ""
	}
	return "the guard cannot work out the value it is compared with"
}

func vacuousNumber(f float64, text string) string {
	if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return fmt.Sprintf("%s is no lower limit: a bound on a large table's column must be above zero (a date after %s, an id above 0)", text, BoundFloor.Format("2006-01-02"))
	}
	return ""
}

func reach(d time.Duration) string {
	if d >= BoundYear {
		return fmt.Sprintf("about %.0f years", float64(d)/float64(BoundYear))
	}
	return fmt.Sprintf("%.0f days", d.Hours()/24)
}

// nowWords are the strings PostgreSQL and DuckDB read as the current date.
var nowWords = map[string]time.Duration{"now": 0, "today": 0, "tomorrow": -24 * time.Hour, "yesterday": 24 * time.Hour}

var (
	yearFirst = regexp.MustCompile(`^(\d{4,})(?:[-/.](\d{1,2})(?:[-/.](\d{1,2}))?)?(?:$|[ T\d:+Zz.-])`)
	compact   = regexp.MustCompile(`^(\d{4})(\d{2})(\d{2})(?:$|[ T])`)
	yearLast  = regexp.MustCompile(`^(\d{1,2})[-/.](\d{1,2})[-/.](\d{2,4})(?:$|[ T])`)
	yearWord  = regexp.MustCompile(`(?i)^[^\d]*[a-z]{3}[^\d]*\d{1,2}\D+(\d{2,4})\b|^\d{1,2}\s*[a-z]{3}[a-z]*[\s,.-]*(\d{2,4})\b`)
)

// vacuousString reads a string as a date, a time or a number; one that is
// neither must not sort before every date and number written as text.
func vacuousString(s string, now time.Time) string {
	t := strings.ToLower(strings.TrimSpace(s))
	if back, ok := nowWords[t]; ok {
		return BoundValue{Kind: BoundNow, Back: back}.Vacuous(now)
	}
	floor := BoundFloor.Format("2006-01-02")
	switch t {
	case "-infinity", "infinity", "+infinity", "epoch":
		return fmt.Sprintf("'%s' is a sentinel, not a lower limit: name a date after %s", s, floor)
	}
	if strings.HasSuffix(t, " bc") {
		return fmt.Sprintf("'%s' is before the common era: name a date after %s", s, floor)
	}
	if y, m, d, ok := readDate(t); ok {
		if !time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).After(BoundFloor) {
			return fmt.Sprintf("'%s' is at or before %s: it limits no row of a real table; name a later date", s, floor)
		}
		return ""
	}
	if f, err := strconv.ParseFloat(t, 64); err == nil {
		return vacuousNumber(f, "'"+s+"'")
	}
	if r, _ := utf8.DecodeRuneInString(s); s == "" || r < '0' {
		return fmt.Sprintf("%q sorts before every date and number written as text (it is empty or begins with a space, punctuation or a control character)", s)
	}
	return ""
}

// readDate finds the year, month and day a date string names: year first
// (2026-01-31, 2026/1/31, 2026, 20260131, 0001-01-01 00:00), year last
// (1/31/2026, 31.01.26) or with a month's name (Jan 1 1753, 1 January 1753).
// A two-digit year is read as SQL Server reads it (cutoff 2049).
func readDate(t string) (y, m, d int, ok bool) {
	atoi := func(s string) int { n, _ := strconv.Atoi(s); return n }
	or1 := func(s string) int {
		if s == "" {
			return 1
		}
		return atoi(s)
	}
	if x := compact.FindStringSubmatch(t); x != nil {
		return atoi(x[1]), atoi(x[2]), atoi(x[3]), true
	}
	if x := yearFirst.FindStringSubmatch(t); x != nil && len(x[1]) <= 9 {
		return atoi(x[1]), or1(x[2]), or1(x[3]), true
	}
	if x := yearLast.FindStringSubmatch(t); x != nil {
		a, b := atoi(x[1]), atoi(x[2])
		if a > 12 { // day first
			a, b = b, a
		}
		return twoDigit(x[3]), a, b, true
	}
	if x := yearWord.FindStringSubmatch(t); x != nil {
		ys := x[1] + x[2]
		return twoDigit(ys), 1, 1, true
	}
	return 0, 0, 0, false
}

func twoDigit(s string) int {
	n, _ := strconv.Atoi(s)
	if len(s) == 2 {
		if n <= 49 {
			return 2000 + n
		}
		return 1900 + n
	}
	return n
}

// vacuous returns why a bound that would limit the table known as ref on
// col bounds nothing, or "" when no such bound was written.
func (m *matcher) vacuous(bounds []Bound, col namePart, ref string, several bool) string {
	for _, b := range bounds {
		if b.Vacuous == "" {
			continue
		}
		why := b.Vacuous
		b.Vacuous = ""
		if m.bounded([]Bound{b}, col, ref, several) {
			return why
		}
	}
	return ""
}

// refuseVacuous is the refusal of a large table whose only lower bound
// bounds nothing.
func (m *matcher) refuseVacuous(t Table, col, example, why string) *contracts.Refusal {
	return Refuse(contracts.RefuseLargeTableUnbounded,
		fmt.Sprintf("%s is a large table and its bound on %s bounds nothing: %s", m.display(t), col, why),
		fmt.Sprintf("bound it with a real lower limit: WHERE %s >= '<a date after %s>', or the current date minus an interval (at most back to %s), or a number above zero",
			example, BoundFloor.Format("2006-01-02"), BoundFloor.Format("2006-01-02")))
}

// intervalUnits are the units an interval or a date modifier names, at
// their longest.
var intervalUnits = map[string]float64{}

func init() {
	day := float64(24 * time.Hour)
	year := float64(BoundYear)
	for words, d := range map[string]float64{
		"millennium millenniums millennia": 1000 * year, "century centuries": 100 * year, "decade decades": 10 * year,
		"year years y yr yrs": year, "quarter quarters": 92 * day, "month months mon mons": 31 * day,
		"week weeks w": 7 * day, "day days d": day, "hour hours h hr hrs": float64(time.Hour),
		"minute minutes min mins m": float64(time.Minute), "second seconds sec secs s": float64(time.Second),
	} {
		for _, w := range strings.Fields(words) {
			intervalUnits[w] = d
		}
	}
}

var intervalPart = regexp.MustCompile(`^([-+]?\d+(?:\.\d*)?)\s*([a-z]+)$`)

// ParseInterval reads an interval as PostgreSQL, DuckDB and SQLite's date
// modifiers write one: "7 days", "-1 year 2 months", "100 years ago",
// "3 day". It reports false for anything else. A reach too long for a
// Duration is clamped, which keeps it past BoundFloor.
func ParseInterval(s string) (time.Duration, bool) {
	f := strings.Fields(strings.ToLower(strings.TrimSpace(s)))
	ago := len(f) > 0 && f[len(f)-1] == "ago"
	if ago {
		f = f[:len(f)-1]
	}
	var total float64
	for i := 0; i < len(f); i++ {
		part := f[i]
		if i+1 < len(f) && intervalPart.FindStringSubmatch(part) == nil {
			part += f[i+1]
			i++
		}
		x := intervalPart.FindStringSubmatch(part)
		if x == nil {
			return 0, false
		}
		unit, ok := intervalUnits[x[2]]
		n, err := strconv.ParseFloat(x[1], 64)
		if !ok || err != nil {
			return 0, false
		}
		total += n * unit
	}
	if len(f) == 0 {
		return 0, false
	}
	if ago {
		total = -total
	}
	return clamp(total), true
}

// clamp turns nanoseconds into a Duration, holding a reach past about 146
// years at about 146 years.
func clamp(ns float64) time.Duration {
	const most = float64(math.MaxInt64 / 2)
	return time.Duration(math.Max(-most, math.Min(most, ns)))
}

// Behind is v moved back by d when it is the current time (a date minus an
// interval); anything else is not reduced.
func (v BoundValue) Behind(d time.Duration) BoundValue {
	if v.Kind != BoundNow {
		return BoundValue{}
	}
	return BoundValue{Kind: BoundNow, Back: clamp(float64(v.Back) + float64(d))}
}
