package mssql

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// MaxBuiltValue is the largest value a statement may build from sizes it
// states: REPLICATE of a max value, REPLACE that grows one, STRING_ESCAPE,
// CONCAT and + of max values, STRING_AGG over generated rows. SQL Server
// caps a value of a non-max type at 8,000 bytes, but a value cast to
// varchar(max), nvarchar(max) or varbinary(max) grows to 2 GB, and a read
// that builds one holds the server's memory and tempdb before any result
// limit applies.
const MaxBuiltValue = 1 << 20

// MaxGeneratedRows is the most rows one SELECT may generate from its own
// constants: GENERATE_SERIES, STRING_SPLIT of a built value, VALUES, and
// derived tables and CTEs of these, multiplied over its FROM and APPLY (a
// cross join of two million-row series is a trillion rows).
const MaxGeneratedRows = 1 << 20

// maxGeneratedBesideTables is the most rows a SELECT that also reads a
// table may generate: each generated row multiplies the table's rows.
const maxGeneratedBesideTables = 1 << 16

// maxRepeatOfData is the most times a max value read from the database,
// whose length the reader cannot know, may be repeated or grown.
const maxRepeatOfData = 1024

// nonMax is the most bytes a value of a type that is not max holds.
const nonMax = 8000

// size is an upper bound on the bytes an expression builds.
type size struct {
	bytes float64
	lob   bool // may be of a max type, so not capped at nonMax
	data  bool // holds a value read from the database, of a length unknown here
}

func small() size { return size{bytes: 16} }

// join is the size of values built together (concatenated, or a function
// of them): the sum, capped at nonMax unless one may be a max value.
func join(ss ...size) size {
	var out size
	for _, s := range ss {
		out.bytes += s.bytes
		out.lob = out.lob || s.lob
		out.data = out.data || s.data
	}
	return out.capped()
}

func (s size) capped() size {
	if !s.lob && s.bytes > nonMax {
		s.bytes = nonMax
	}
	return s
}

func largest(ss ...size) size {
	var out size
	for _, s := range ss {
		out.bytes = math.Max(out.bytes, s.bytes)
		out.lob = out.lob || s.lob
		out.data = out.data || s.data
	}
	return out
}

// checkSize refuses a value past MaxBuiltValue.
func (p *parser) checkSize(what string, s size) size {
	if s.bytes > MaxBuiltValue {
		p.fail(contracts.RefuseResultTooLarge,
			fmt.Sprintf("%s builds a value of about %s, more than the %d bytes a value may be built to here: the server would hold it in memory and tempdb before any result limit applies", what, human(s.bytes), MaxBuiltValue),
			fmt.Sprintf("build shorter values (at most %d bytes), or read the length instead (LEN, DATALENGTH)", MaxBuiltValue))
	}
	return s
}

func human(b float64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.1f GB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f bytes", b)
}

// typ is a data type as a CAST or CONVERT names it.
type typ struct {
	name   string // lower case, without sys.
	max    bool   // (max), or text, ntext, image, xml
	length float64
}

// builtinTypes are SQL Server's own data types. Any other type name is a
// user type — an alias or a CLR type whose Parse and ToString are user .NET
// code run by the cast.
var builtinTypes = set(`bigint int smallint tinyint bit decimal numeric dec money smallmoney float real
date time datetime datetime2 datetimeoffset smalldatetime char varchar text nchar nvarchar ntext binary
varbinary image uniqueidentifier xml sql_variant rowversion timestamp integer character national double
hierarchyid geometry geography`)

// stringTypes are the types whose values are text or bytes.
var stringTypes = set(`char varchar text nchar nvarchar ntext binary varbinary image xml sql_variant character national`)

// dateTypes are the types a number casts to as days after 1900-01-01.
var dateTypes = set(`datetime smalldatetime`)

// castSize is the size of x cast to t.
func castSize(x size, t typ) size {
	switch {
	case t.max:
		return size{bytes: x.bytes, lob: true, data: x.data}
	case stringTypes[t.name]:
		n := float64(nonMax)
		if t.length > 0 {
			n = math.Min(2*t.length, nonMax)
		}
		return size{bytes: math.Min(math.Max(x.bytes, 0), n), data: x.data}
	}
	return size{bytes: 16, data: x.data}
}

// castValue is what a bound's value becomes when cast to t: a number cast
// to datetime is that many days after 1900-01-01.
func castValue(v guard.BoundValue, t typ) guard.BoundValue {
	if v.Kind == guard.BoundNumber && dateTypes[t.name] {
		d := time.Date(1900, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(v.Number * 24 * float64(time.Hour)))
		if v.Number < -1e5 || v.Number > 1e6 {
			return guard.BoundValue{Kind: guard.BoundNumber, Number: v.Number}
		}
		return guard.BoundValue{Kind: guard.BoundString, Text: d.Format("2006-01-02")}
	}
	return v
}

// datepartUnits are how long one unit of a DATEADD date part is, at most.
var datepartUnits = map[string]time.Duration{}

func init() {
	day := 24 * time.Hour
	for parts, d := range map[string]time.Duration{
		"year yy yyyy": guard.BoundYear, "quarter qq q": 92 * day, "month mm m": 31 * day,
		"dayofyear dy y day dd d weekday dw w": day, "week wk ww iso_week isowk isoww": 7 * day,
		"hour hh": time.Hour, "minute mi n": time.Minute, "second ss s": time.Second,
		"millisecond ms": time.Millisecond, "microsecond mcs": time.Microsecond, "nanosecond ns": time.Nanosecond,
	} {
		for _, p := range strings.Fields(parts) {
			datepartUnits[p] = d
		}
	}
}

// nowFunctions give the current date and time.
var nowFunctions = set(`GETDATE GETUTCDATE SYSDATETIME SYSUTCDATETIME SYSDATETIMEOFFSET CURRENT_TIMESTAMP CURRENT_DATE`)

// offset moves a BoundNow value n units of part forward (back when n < 0).
func offset(v guard.BoundValue, part string, n guard.BoundValue) guard.BoundValue {
	unit, ok := datepartUnits[strings.ToLower(part)]
	if v.Kind != guard.BoundNow || n.Kind != guard.BoundNumber || !ok {
		return guard.BoundValue{}
	}
	back := float64(v.Back) - n.Number*float64(unit)
	if back > float64(math.MaxInt64/2) || back < -float64(math.MaxInt64/2) {
		back = math.Copysign(float64(math.MaxInt64/2), back)
	}
	return guard.BoundValue{Kind: guard.BoundNow, Back: time.Duration(back)}
}

// callValue reduces a call of constants to a bound's value where the
// guard knows what the function gives: the current time, DATEADD of it,
// EOMONTH and DATETRUNC of it, and DATEFROMPARTS of numbers.
func callValue(name, part string, args []*node) guard.BoundValue {
	switch {
	case nowFunctions[name] && len(args) == 0:
		return guard.BoundValue{Kind: guard.BoundNow}
	case name == "DATEADD" && len(args) == 2:
		return offset(args[1].bv, part, args[0].bv)
	case name == "DATETRUNC" && len(args) == 1 && args[0].bv.Kind == guard.BoundNow:
		v := args[0].bv
		v.Back += datepartUnits[strings.ToLower(part)]
		return v
	case name == "EOMONTH" && len(args) >= 1 && args[0].bv.Kind == guard.BoundNow:
		if len(args) == 1 {
			return args[0].bv
		}
		return offset(args[0].bv, "month", args[1].bv)
	case strings.HasSuffix(name, "FROMPARTS") && name != "TIMEFROMPARTS" && len(args) >= 3:
		var ymd [3]float64
		for i := range ymd {
			if args[i].bv.Kind != guard.BoundNumber {
				return guard.BoundValue{}
			}
			ymd[i] = args[i].bv.Number
		}
		return guard.BoundValue{Kind: guard.BoundString, Text: fmt.Sprintf("%04.0f-%02.0f-%02.0f", ymd[0], ymd[1], ymd[2])}
	}
	return guard.BoundValue{}
}

// arith folds l op r where both are numbers, and moves the current time by
// a number of days (datetime + n is n days later).
func arith(op string, l, r guard.BoundValue) guard.BoundValue {
	if l.Kind == guard.BoundNull || r.Kind == guard.BoundNull {
		return guard.BoundValue{Kind: guard.BoundNull}
	}
	if l.Kind == guard.BoundNumber && r.Kind == guard.BoundNumber {
		a, b := l.Number, r.Number
		switch op {
		case "+":
			return num(a + b)
		case "-":
			return num(a - b)
		case "*":
			return num(a * b)
		case "/":
			if b != 0 {
				return num(a / b)
			}
		}
		return guard.BoundValue{}
	}
	if l.Kind == guard.BoundNow && r.Kind == guard.BoundNumber && (op == "+" || op == "-") {
		n := r.Number
		if op == "-" {
			n = -n
		}
		return offset(l, "day", num(n))
	}
	if r.Kind == guard.BoundNow && l.Kind == guard.BoundNumber && op == "+" {
		return offset(r, "day", l)
	}
	return guard.BoundValue{}
}

func num(f float64) guard.BoundValue { return guard.BoundValue{Kind: guard.BoundNumber, Number: f} }

// literal reads a number, string or binary token as a bound's value and a
// size.
func literal(t token) (guard.BoundValue, size) {
	switch t.kind {
	case tNumber:
		f, err := strconv.ParseFloat(strings.TrimRight(strings.TrimRight(t.text, "+-"), "eE"), 64)
		if err != nil {
			return guard.BoundValue{}, small()
		}
		return num(f), small()
	case tString:
		s := t.text
		if s[0] == 'N' || s[0] == 'n' {
			s = s[1:]
		}
		s = strings.ReplaceAll(s[1:len(s)-1], "''", "'")
		return guard.BoundValue{Kind: guard.BoundString, Text: s}, size{bytes: float64(len(s)), lob: len(s) > nonMax}
	case tBinary:
		return guard.BoundValue{}, size{bytes: float64(len(t.text)-2) / 2, lob: len(t.text) > 2*nonMax+2}
	}
	return guard.BoundValue{}, small()
}

// passThrough are the functions whose result is at most as large as their
// arguments together (a part, a case change, a choice among them).
var passThrough = set(`LEFT RIGHT SUBSTRING LOWER UPPER LTRIM RTRIM TRIM REVERSE TRANSLATE COALESCE ISNULL IIF
CHOOSE NULLIF GREATEST LEAST MIN MAX FIRST_VALUE LAST_VALUE LAG LEAD STUFF CONCAT JSON_QUERY JSON_MODIFY
JSON_OBJECT JSON_ARRAY COMPRESS`)

// lobResults are the functions that return a max type whatever they read.
var lobResults = set(`JSON_QUERY JSON_MODIFY JSON_OBJECT JSON_ARRAY COMPRESS STRING_ESCAPE`)

// callSize bounds the bytes a call builds, and refuses the calls that
// build past MaxBuiltValue or that could from a size only the data knows.
func (p *parser) callSize(name string, args []*node) size {
	sizes := make([]size, len(args))
	for i, a := range args {
		sizes[i] = a.sz
	}
	arg := func(i int) *node {
		if i < len(args) {
			return args[i]
		}
		return value(true)
	}
	var out size
	switch {
	case name == "REPLICATE":
		s, n := arg(0), arg(1)
		if !s.sz.lob {
			return size{bytes: nonMax, data: s.sz.data}
		}
		if n.bv.Kind != guard.BoundNumber {
			p.fail(contracts.RefuseResultTooLarge,
				"REPLICATE repeats a max value a number of times the guard cannot read: a count the data decides could build a value of gigabytes",
				fmt.Sprintf("write the count as a number (the value built at most %d bytes), or repeat a value that is not varchar(max)/nvarchar(max)/varbinary(max)", MaxBuiltValue))
		}
		if s.sz.data && n.bv.Number > maxRepeatOfData {
			p.fail(contracts.RefuseResultTooLarge,
				fmt.Sprintf("REPLICATE repeats a max value read from the database %.0f times; at most %d times", n.bv.Number, maxRepeatOfData),
				fmt.Sprintf("repeat it at most %d times", maxRepeatOfData))
		}
		out = size{bytes: math.Max(s.sz.bytes, 1) * math.Max(n.bv.Number, 0), lob: true, data: s.sz.data}
	case name == "REPLACE":
		s, from, to := arg(0), arg(1), arg(2)
		out = join(s.sz, to.sz)
		if s.sz.lob && to.sz.bytes > 0 {
			grow := to.sz.bytes
			if from.bv.Kind == guard.BoundString && len(from.bv.Text) > 0 {
				grow /= float64(len(from.bv.Text))
			}
			if s.sz.data && grow > maxRepeatOfData {
				p.fail(contracts.RefuseResultTooLarge,
					fmt.Sprintf("REPLACE grows a max value read from the database up to %.0f times; at most %d times", grow, maxRepeatOfData),
					"replace with a shorter string")
			}
			out = size{bytes: math.Max(s.sz.bytes, 1) * math.Max(grow, 1), lob: true, data: s.sz.data || to.sz.data}
		}
	case name == "STRING_ESCAPE":
		out = size{bytes: 6 * arg(0).sz.bytes, lob: true, data: arg(0).sz.data}
		if arg(0).sz.data && arg(0).sz.lob {
			out.bytes = 6 * math.Max(arg(0).sz.bytes, 1)
		}
	case name == "CONCAT_WS":
		out = join(sizes...)
		if len(args) > 2 {
			out.bytes += float64(len(args)-2) * arg(0).sz.bytes
		}
	case name == "DECOMPRESS":
		if a := arg(0); a.op != "col" {
			p.fail(contracts.RefuseResultTooLarge,
				"DECOMPRESS expands a value the statement builds itself (a literal, COMPRESS, another DECOMPRESS): a few bytes can expand to gigabytes",
				"DECOMPRESS only a column the database stores, as DECOMPRESS(t.col)")
		}
		return size{lob: true, data: true}
	case name == "STRING_AGG":
		out = join(sizes...)
		out.bytes = arg(0).sz.bytes + arg(1).sz.bytes
		if n := len(p.aggs); n > 0 && arg(0).sz.lob {
			p.aggs[n-1] = append(p.aggs[n-1], out)
		}
		if !arg(0).sz.lob {
			out = size{bytes: nonMax, data: out.data}
		}
	case name == "SPACE" || name == "STR" || name == "FORMAT" || name == "QUOTENAME":
		return size{bytes: nonMax, data: join(sizes...).data}
	case passThrough[name]:
		out = join(sizes...)
	default:
		return size{bytes: 64, data: join(sizes...).data}
	}
	if lobResults[name] {
		out.lob = true
	}
	return p.checkSize(name+"(…)", out.capped())
}

// rows bounds the rows a query or a source generates from its own
// constants: n, multiplied over a SELECT's sources; tables is set when it
// also reads a table (whose rows each generated row multiplies), recursive
// when it reads the recursive CTE being defined.
type rows struct {
	n         float64
	tables    bool
	recursive bool
}

func (r rows) times(o rows) rows {
	return rows{n: r.n * o.n, tables: r.tables || o.tables, recursive: r.recursive || o.recursive}
}

func (r rows) plus(o rows) rows {
	return rows{n: r.n + o.n, tables: r.tables || o.tables, recursive: r.recursive || o.recursive}
}

func tooManyRows(reason, fix string) *contracts.Refusal {
	return guard.Refuse(contracts.RefuseResultTooLarge, reason, fix)
}

// checkRows refuses a SELECT whose sources generate more rows than a read
// may: past MaxGeneratedRows, past maxGeneratedBesideTables beside a table,
// or more than one generated row per row of a recursive CTE (each level of
// the recursion multiplies by it).
func (p *parser) checkRows(g rows) {
	fix := fmt.Sprintf("generate fewer rows (at most %d in one SELECT, %d beside a table): narrow GENERATE_SERIES, or join on a condition instead of crossing", MaxGeneratedRows, maxGeneratedBesideTables)
	switch {
	case g.recursive && g.n > 1:
		panic(bail{tooManyRows(
			fmt.Sprintf("the recursive member of a CTE reads %.0f generated rows for each row of the CTE: every level of the recursion multiplies the rows", g.n),
			"join the recursive member only to tables, on a condition")})
	case g.n > MaxGeneratedRows:
		panic(bail{tooManyRows(
			fmt.Sprintf("the SELECT generates up to %.0f rows from its own constants (GENERATE_SERIES, STRING_SPLIT, VALUES and what crosses them), more than %d", g.n, MaxGeneratedRows), fix)})
	case g.tables && g.n > maxGeneratedBesideTables:
		panic(bail{tooManyRows(
			fmt.Sprintf("the SELECT multiplies a table's rows by up to %.0f generated rows, more than %d", g.n, maxGeneratedBesideTables), fix)})
	}
}

// checkAggs refuses a STRING_AGG of max values over generated rows whose
// result passes MaxBuiltValue.
func (p *parser) checkAggs(aggs []size, g rows) {
	for _, a := range aggs {
		per := a.bytes
		if a.data {
			per = math.Max(per, 1)
		}
		n := g.n
		if g.tables {
			n *= maxRepeatOfData
		}
		p.checkSize("STRING_AGG over the SELECT's rows", size{bytes: per * n})
	}
}

// seriesRows is the number of rows GENERATE_SERIES(start, stop[, step])
// generates; its bounds must be constant numbers.
func (p *parser) seriesRows(args []*node) rows {
	var v []float64
	for _, a := range args {
		if a.bv.Kind != guard.BoundNumber {
			p.fail(contracts.RefuseResultTooLarge,
				"GENERATE_SERIES takes bounds the guard cannot read: bounds the data decides could generate billions of rows",
				fmt.Sprintf("write its start, stop and step as numbers (at most %d rows); to repeat a row n times join GENERATE_SERIES(1, <the largest n>) AS g ON g.value <= t.n", MaxGeneratedRows))
		}
		v = append(v, a.bv.Number)
	}
	if len(v) < 2 {
		return rows{n: 1}
	}
	step := 1.0
	if len(v) > 2 && v[2] != 0 {
		step = math.Abs(v[2])
	}
	return rows{n: math.Floor(math.Abs(v[1]-v[0])/step) + 1}
}
