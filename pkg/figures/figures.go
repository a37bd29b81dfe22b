// Package figures reads the figures a text states — numbers, percentages,
// dates — and checks each against what a run showed the model. A figure is
// found when one of the shown values rounds to it at the precision the text
// wrote it, derived when a sum, difference, ratio or percentage of two shown
// values (or a column's total or average, or a row count) does, and
// unverified otherwise. The package is pure: text in, checks out.
package figures

import (
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Figure is one figure a text states.
type Figure struct {
	// Text is the figure as written ("$826.65", "12 %", "March 2013").
	Text string
	// Date is set for a written date; Value and Half are then unused.
	Date *Date
	// Value is the figure's magnitude (its sign is dropped: a text says
	// "fell by 3" of a shown -3), with any k/million/bn applied.
	Value float64
	// Half is half a unit of the last place written: a shown value within
	// Value ± Half is the figure at the precision the text chose.
	Half float64
	// Percent marks "12%", "12 %", "12 percent".
	Percent bool
	// Year marks a bare four-digit whole number that may be a year: it
	// also matches a shown date of that year.
	Year bool
}

// Date is a calendar date at the precision written: Month and Day are 0
// when the text did not write them.
type Date struct{ Year, Month, Day int }

// within reports whether shown falls in d at d's precision: "2013-03"
// holds every day of March 2013, "2013" every day of the year.
func (d Date) within(shown Date) bool {
	return d.Year == shown.Year && (d.Month == 0 || d.Month == shown.Month) && (d.Day == 0 || d.Day == shown.Day)
}

// number is one value shown, with the text it was shown as.
type number struct {
	value float64
	text  string
}

// scanned is what one scan of a text found.
type scanned struct {
	figures []Figure
	// numbers are the numbers of a shown text, with their text.
	numbers []number
}

// Claimed returns the figures text states. Digits inside identifiers (r1,
// Q1, utf8, order_items2, v1.2), times of day, ranks ("top 5", "#1") and
// the ids in skip (the run's own citation ids) are not figures.
func Claimed(text string, skip []string) []Figure {
	return scan(blank(text, skip), true).figures
}

// blank overwrites every whole-token occurrence of the ids in skip with
// spaces, so an id made of digits is not read as a figure.
func blank(text string, skip []string) string {
	for _, id := range skip {
		if id == "" || !strings.Contains(text, id) {
			continue
		}
		var b strings.Builder
		from := 0
		for {
			i := strings.Index(text[from:], id)
			if i < 0 {
				break
			}
			i += from
			j := i + len(id)
			b.WriteString(text[from:i])
			if (i == 0 || !wordByte(text[i-1])) && (j == len(text) || !wordByte(text[j])) {
				b.WriteString(strings.Repeat(" ", len(id)))
			} else {
				b.WriteString(id)
			}
			from = j
		}
		b.WriteString(text[from:])
		text = b.String()
	}
	return text
}

func wordByte(b byte) bool {
	return b == '_' || b >= '0' && b <= '9' || b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z'
}

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// isWord reports a rune that continues an identifier.
func isWord(r rune) bool { return r == '_' || isDigit(r) || unicode.IsLetter(r) }

var months = map[string]int{
	"jan": 1, "january": 1, "feb": 2, "february": 2, "mar": 3, "march": 3, "apr": 4, "april": 4,
	"may": 5, "jun": 6, "june": 6, "jul": 7, "july": 7, "aug": 8, "august": 8, "sep": 9, "sept": 9,
	"september": 9, "oct": 10, "october": 10, "nov": 11, "november": 11, "dec": 12, "december": 12,
}

// magnitudes are the multipliers a figure may be written with, glued
// ("1.2k", "3bn") or as a word ("1.2 million").
var magnitudes = map[string]float64{
	"k": 1e3, "K": 1e3, "thousand": 1e3, "m": 1e6, "M": 1e6, "mn": 1e6, "million": 1e6,
	"bn": 1e9, "B": 1e9, "billion": 1e9,
}

// approximate are the words before a figure that say it is rounded or a
// bound: "about 830" is 830 rounded to tens, "over 800" 800 rounded to
// hundreds. Without one, a whole number is exact.
var approximate = []string{"about", "around", "approximately", "approx.", "approx", "roughly", "nearly", "almost",
	"some", "over", "under", "more than", "less than", "fewer than", "at least", "at most", "above", "below",
	"close to", "~", "≈", "circa", "ca."}

// ranks are the words before a whole number that make it a rank or a
// selection ("the top 5"), not a reading.
var ranks = []string{"top", "bottom", "first", "last", "#", "no."}

// scan reads text's figures (claim true) or its shown numbers and dates.
func scan(text string, claim bool) scanned {
	rs := []rune(text)
	var out scanned
	n := len(rs)
	for i := 0; i < n; {
		r := rs[i]
		switch {
		case isWord(r) && !isDigit(r):
			j := wordEnd(rs, i)
			if m, ok := months[strings.ToLower(string(rs[i:j]))]; ok {
				if d, end, ok := monthDate(rs, j, m, 0); ok {
					out.add(Figure{Text: string(rs[i:end]), Date: &d}, claim)
					i = end
					continue
				}
			}
			i = j
		case isDigit(r):
			i = out.digits(rs, i, claim)
		default:
			i++
		}
	}
	return out
}

// add records a figure: a claim keeps it whole, a shown text keeps its
// dates as figures and its numbers as numbers.
func (s *scanned) add(f Figure, claim bool) {
	if claim || f.Date != nil {
		s.figures = append(s.figures, f)
		return
	}
	s.numbers = append(s.numbers, number{f.Value, f.Text})
}

// wordEnd is the end of the identifier starting at i, a dotted one
// (schema.table2, v1.2.3) included.
func wordEnd(rs []rune, i int) int {
	j, letter := i, false
	for j < len(rs) {
		if isWord(rs[j]) {
			letter = letter || !isDigit(rs[j])
			j++
			continue
		}
		if rs[j] == '.' && j+1 < len(rs) && isWord(rs[j+1]) && letter {
			j++
			continue
		}
		break
	}
	return j
}

// monthDate reads "[D[,]] YYYY" after a month name ending at j; day is a
// day already read before the name ("1 March 2013").
func monthDate(rs []rune, j, month, day int) (Date, int, bool) {
	k := j
	if k < len(rs) && rs[k] == '.' {
		k++
	}
	k = skipSpace(rs, k)
	if day == 0 {
		if d, e := runDigits(rs, k); e-k >= 1 && e-k <= 2 && (e == len(rs) || !isDigit(rs[e])) {
			e2 := e
			if e2 < len(rs) && rs[e2] == ',' {
				e2++
			}
			if e3 := skipSpace(rs, e2); e3 > e || e2 > e {
				if y, ye := runDigits(rs, e3); ye-e3 == 4 && (ye == len(rs) || !isWord(rs[ye])) {
					return Date{Year: y, Month: month, Day: d}, ye, true
				}
			}
		}
	}
	if y, ye := runDigits(rs, k); k > j && ye-k == 4 && (ye == len(rs) || !isWord(rs[ye])) {
		return Date{Year: y, Month: month, Day: day}, ye, true
	}
	return Date{}, 0, false
}

func skipSpace(rs []rune, k int) int {
	for k < len(rs) && (rs[k] == ' ' || rs[k] == 0xa0) {
		k++
	}
	return k
}

// runDigits reads the digits from k: their value and where they end.
func runDigits(rs []rune, k int) (int, int) {
	v, e := 0, k
	for e < len(rs) && isDigit(rs[e]) && e-k < 9 {
		v = v*10 + int(rs[e]-'0')
		e++
	}
	return v, e
}

// digits reads the figure starting with the digit at i and returns where
// scanning goes on.
func (s *scanned) digits(rs []rune, i int, claim bool) int {
	n := len(rs)
	// A time of day (12:30, 08:15:00) is not a figure.
	if _, e := runDigits(rs, i); e-i <= 2 && e+2 < n && rs[e] == ':' && isDigit(rs[e+1]) && isDigit(rs[e+2]) {
		e += 3
		for e+1 < n && (rs[e] == ':' || rs[e] == '.') && isDigit(rs[e+1]) {
			_, e = runDigits(rs, e+1)
		}
		return e
	}
	// An ISO date: 2013-03-01, 2013-03 (and the time after it, if any).
	if y, e := runDigits(rs, i); e-i == 4 && e+2 < n && rs[e] == '-' && isDigit(rs[e+1]) {
		if m, me := runDigits(rs, e+1); me-e-1 <= 2 && m >= 1 && m <= 12 && (me == n || !isDigit(rs[me])) {
			d, end := 0, me
			if me+1 < n && rs[me] == '-' && isDigit(rs[me+1]) {
				if dd, de := runDigits(rs, me+1); de-me-1 <= 2 && dd >= 1 && dd <= 31 {
					d, end = dd, de
				}
			}
			if end == n || !isWord(rs[end]) || rs[end] == 'T' {
				date := Date{Year: y, Month: m, Day: d}
				s.add(Figure{Text: string(rs[i:end]), Date: &date}, claim)
				return end
			}
		}
	}
	// "1 March 2013"
	if d, e := runDigits(rs, i); e-i <= 2 && d >= 1 && d <= 31 {
		if k := skipSpace(rs, e); k > e {
			if we := wordEnd(rs, k); we > k {
				if m, ok := months[strings.ToLower(string(rs[k:we]))]; ok {
					if date, end, ok := monthDate(rs, we, m, d); ok {
						s.add(Figure{Text: string(rs[i:end]), Date: &date}, claim)
						return end
					}
				}
			}
		}
	}
	// A number: 1234, 1,234.5, 1.5e+06.
	e := i
	for e < n && isDigit(rs[e]) {
		e++
	}
	// Thousands separators: one to three digits, then groups of ",ddd".
	grouped := false
	for e-i <= 3 || grouped {
		if e < n && rs[e] == ',' && allDigits(rs, e+1, e+4) && (e+4 == n || !isDigit(rs[e+4])) {
			grouped, e = true, e+4
			continue
		}
		break
	}
	decimals := 0
	if e+1 < n && rs[e] == '.' && isDigit(rs[e+1]) {
		k := e + 1
		for k < n && isDigit(rs[k]) {
			k++
		}
		decimals = k - e - 1
		e = k
	}
	mant := e
	exp := 0
	if e+1 < n && (rs[e] == 'e' || rs[e] == 'E') {
		k := e + 1
		if k < n && (rs[k] == '+' || rs[k] == '-') {
			k++
		}
		if k < n && isDigit(rs[k]) {
			start := k
			for k < n && isDigit(rs[k]) {
				k++
			}
			exp, _ = strconv.Atoi(string(rs[start:k]))
			if rs[start-1] == '-' {
				exp = -exp
			}
			e = k
		}
	}
	// 1.2.3 is a version, not a figure.
	if e+1 < n && rs[e] == '.' && isDigit(rs[e+1]) {
		return wordEnd(rs, e+1)
	}
	digitsText := strings.ReplaceAll(string(rs[i:mant]), ",", "")
	v, err := strconv.ParseFloat(digitsText, 64)
	if err != nil {
		return e
	}
	v *= math.Pow10(exp)
	if math.IsInf(v, 0) || v != 0 && v < 1e-300 {
		return e // beyond what a reading shows
	}
	half := 0.5 * math.Pow10(-decimals+exp)
	end := e
	mult := 1.0
	// A glued magnitude (1.2k, 3bn) or a glued unit or suffix (5ms, 3rd,
	// 8bit), which makes the whole token an identifier.
	if end < n && isWord(rs[end]) {
		we := wordEnd(rs, end)
		m, ok := magnitudes[string(rs[end:we])]
		if !ok {
			return we
		}
		mult, end = m, we
	} else if k := skipSpace(rs, end); k > end && k < n {
		we := wordEnd(rs, k)
		if m, ok := magnitudes[strings.ToLower(string(rs[k:we]))]; ok && we-k > 1 {
			mult, end = m, we
		}
	}
	percent := false
	if k := skipSpace(rs, end); k < n && rs[k] == '%' {
		percent, end = true, k+1
	} else if we := wordEnd(rs, k); k < n && we > k && strings.EqualFold(string(rs[k:we]), "percent") {
		percent, end = true, we
	}
	f := Figure{Value: v * mult, Half: half * mult, Percent: percent}
	whole := decimals == 0 && exp == 0
	if !claim {
		f.Text = string(rs[i:end])
		s.add(f, claim)
		return end
	}
	before := strings.ToLower(strings.TrimRight(string(rs[max(0, i-20):i]), " \u00a0$€£¥-−+(~≈"))
	glued := strings.ToLower(strings.TrimRight(string(rs[max(0, i-20):i]), " \u00a0$€£¥-−+("))
	if whole && mult == 1 && !percent {
		for _, w := range ranks {
			if strings.HasSuffix(before, w) && (len(before) == len(w) || !wordByte(before[len(before)-len(w)-1])) || strings.HasSuffix(glued, "#") {
				return end
			}
		}
	}
	if whole {
		for _, w := range approximate {
			if hasWordSuffix(before, w) || hasWordSuffix(glued, w) {
				// A whole number written with trailing zeros, and said to be
				// approximate, is rounded to its last nonzero place.
				z := 0
				for d := digitsText; len(d) > 1 && strings.HasSuffix(d, "0"); d = d[:len(d)-1] {
					z++
				}
				f.Half = 0.5 * math.Pow10(z) * mult
				break
			}
		}
	}
	f.Year = whole && mult == 1 && !percent && !grouped && mant-i == 4 && v >= 1000 && v <= 2999
	start := i
	for start > 0 && strings.ContainsRune("$€£¥", rs[start-1]) {
		start--
	}
	if start > 0 && strings.ContainsRune("-−", rs[start-1]) && (start == 1 || !isWord(rs[start-2])) {
		start-- // the sign as written; the value is compared without it
	}
	f.Text = string(rs[start:end])
	s.add(f, claim)
	return end
}

// hasWordSuffix reports whether s ends with the word w (a symbol such as
// "~" needs no boundary).
func hasWordSuffix(s, w string) bool {
	if !strings.HasSuffix(s, w) {
		return false
	}
	k := len(s) - len(w)
	return k == 0 || !wordByte(w[0]) || !wordByte(s[k-1])
}

func allDigits(rs []rune, from, to int) bool {
	if to > len(rs) {
		return false
	}
	for _, r := range rs[from:to] {
		if !isDigit(r) {
			return false
		}
	}
	return true
}
