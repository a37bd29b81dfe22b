package sqlite

import (
	"strconv"
	"strings"
	"time"

	"github.com/sondehq/sonde/pkg/guard"
)

// valued marks b Vacuous when one of the values it compares its column with
// limits nothing (see guard.BoundValue.Vacuous).
func valued(b guard.Bound, vals ...[]token) guard.Bound {
	now := time.Now()
	for _, v := range vals {
		if why := boundValue(v).Vacuous(now); why != "" {
			b.Vacuous = why
			break
		}
	}
	return b
}

// boundValue reduces a value's tokens to what decides whether it limits
// anything: literals (through CAST and unary minus), parameters, the
// current date and time (CURRENT_DATE, date('now', …) with its modifiers),
// a date function of a literal date, and arithmetic of these. Anything else
// is guard.BoundUnknown.
func boundValue(x []token) guard.BoundValue {
	r := &valueReader{toks: stripParens(x)}
	v := r.add()
	if r.i != len(r.toks) {
		return guard.BoundValue{}
	}
	return v
}

type valueReader struct {
	toks  []token
	i     int
	depth int
}

func (r *valueReader) peek() token {
	if r.i < len(r.toks) {
		return r.toks[r.i]
	}
	return token{kind: kEOF}
}

func (r *valueReader) add() guard.BoundValue {
	l := r.mul()
	for t := r.peek(); t.op("+") || t.op("-"); t = r.peek() {
		r.i++
		l = arith(t.text, l, r.mul())
	}
	return l
}

func (r *valueReader) mul() guard.BoundValue {
	l := r.unary()
	for t := r.peek(); t.op("*"); t = r.peek() {
		r.i++
		l = arith("*", l, r.unary())
	}
	return l
}

func (r *valueReader) unary() guard.BoundValue {
	r.depth++
	defer func() { r.depth-- }()
	if r.depth > 64 {
		r.i = len(r.toks) + 1
		return guard.BoundValue{}
	}
	switch t := r.peek(); {
	case t.op("-"):
		r.i++
		return arith("-", guard.BoundValue{Kind: guard.BoundNumber}, r.unary())
	case t.op("+"):
		r.i++
		return r.unary()
	}
	return r.atom()
}

func (r *valueReader) atom() guard.BoundValue {
	t := r.peek()
	r.i++
	switch t.kind {
	case kString:
		return guard.BoundValue{Kind: guard.BoundString, Text: strings.ReplaceAll(t.text[1:len(t.text)-1], "''", "'")}
	case kNumber:
		if f, err := strconv.ParseFloat(t.text, 64); err == nil {
			return guard.BoundValue{Kind: guard.BoundNumber, Number: f}
		}
		if n, err := strconv.ParseInt(t.text, 0, 64); err == nil {
			return guard.BoundValue{Kind: guard.BoundNumber, Number: float64(n)}
		}
	case kVariable:
		return guard.BoundValue{Kind: guard.BoundParam}
	case kOp:
		if t.op("(") {
			v := r.add()
			if !r.peek().op(")") {
				return guard.BoundValue{}
			}
			r.i++
			return v
		}
	case kWord:
		switch kw := strings.ToUpper(t.text); {
		case kw == "NULL":
			return guard.BoundValue{Kind: guard.BoundNull}
		case kw == "CURRENT_DATE" || kw == "CURRENT_TIMESTAMP" || kw == "CURRENT_TIME":
			return guard.BoundValue{Kind: guard.BoundNow}
		case kw == "CAST" && r.peek().op("("):
			r.i++
			v := r.add()
			if !r.peek().is("AS") {
				return guard.BoundValue{}
			}
			for r.i < len(r.toks) && !r.peek().op(")") {
				r.i++
			}
			r.i++
			return v
		case r.peek().op("("):
			return r.call(strings.ToLower(t.text))
		}
	}
	r.i = len(r.toks) + 1
	return guard.BoundValue{}
}

// call reads name(args) and reduces the date functions.
func (r *valueReader) call(name string) guard.BoundValue {
	r.i++ // (
	var args []guard.BoundValue
	for !r.peek().op(")") {
		args = append(args, r.add())
		if r.peek().op(",") {
			r.i++
			continue
		}
		if !r.peek().op(")") {
			r.i = len(r.toks) + 1
			return guard.BoundValue{}
		}
	}
	r.i++
	switch name {
	case "date", "datetime", "julianday", "unixepoch", "time":
		return dateFunction(args)
	case "strftime":
		if len(args) > 1 {
			return dateFunction(args[1:])
		}
	}
	return guard.BoundValue{}
}

// dateFunction reduces SQLite's date(time-value, modifier, …): a time value
// of 'now' or a literal date, moved by modifiers of the form '-7 days' or
// 'start of month'.
func dateFunction(args []guard.BoundValue) guard.BoundValue {
	if len(args) == 0 {
		return guard.BoundValue{Kind: guard.BoundNow}
	}
	v := args[0]
	switch {
	case v.Kind == guard.BoundString && strings.EqualFold(strings.TrimSpace(v.Text), "now"):
		v = guard.BoundValue{Kind: guard.BoundNow}
	case v.Kind == guard.BoundString && len(args) == 1:
		return v
	case v.Kind != guard.BoundNow:
		return guard.BoundValue{}
	}
	for _, m := range args[1:] {
		if m.Kind != guard.BoundString {
			return guard.BoundValue{}
		}
		mod := strings.ToLower(strings.TrimSpace(m.Text))
		switch {
		case mod == "localtime" || mod == "utc" || mod == "subsec" || mod == "subsecond":
		case strings.HasPrefix(mod, "start of "):
			d, ok := guard.ParseInterval("1 " + strings.TrimPrefix(mod, "start of "))
			if !ok {
				return guard.BoundValue{}
			}
			v = v.Behind(d)
		default:
			d, ok := guard.ParseInterval(strings.TrimPrefix(mod, "+"))
			if !ok {
				return guard.BoundValue{}
			}
			v = v.Behind(-d)
		}
	}
	return v
}

// arith folds numbers and moves the current time by a number of days.
func arith(op string, l, r guard.BoundValue) guard.BoundValue {
	switch {
	case l.Kind == guard.BoundNull || r.Kind == guard.BoundNull:
		return guard.BoundValue{Kind: guard.BoundNull}
	case l.Kind == guard.BoundNumber && r.Kind == guard.BoundNumber:
		f := map[string]float64{"+": l.Number + r.Number, "-": l.Number - r.Number, "*": l.Number * r.Number}[op]
		return guard.BoundValue{Kind: guard.BoundNumber, Number: f}
	case l.Kind == guard.BoundNow && r.Kind == guard.BoundNumber && op != "*":
		d, _ := guard.ParseInterval(strconv.FormatFloat(r.Number, 'f', -1, 64) + " days")
		if op == "+" {
			d = -d
		}
		return l.Behind(d)
	}
	return guard.BoundValue{}
}

// splitList splits a comma-separated list at its top level.
func splitList(x []token) [][]token {
	var out [][]token
	depth, start := 0, 0
	for i, t := range x {
		switch {
		case t.op("("):
			depth++
		case t.op(")"):
			depth--
		case depth == 0 && t.op(","):
			out = append(out, x[start:i])
			start = i + 1
		}
	}
	return append(out, x[start:])
}
