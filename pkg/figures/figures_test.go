package figures

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// genres is a read's content as the model reads it: the server's line,
// the rows fenced, and the status line the run appends.
var genres = `Result of the read on connection chinook: 3 rows, 2 columns. Cite it as {"source":"artifact","correlationId":"r1"}.
` + fence.Wrap("rows read from connection chinook", "genre | revenue\nRock | 826.65\nLatin | 382.14\nMetal | 261.36\n") +
	"\n[turn 2/36 · 1/30 statements · 3 repairs left · 440 s left]"

func result(id, text string, rows int) Evidence { return Evidence{ID: id, Text: text, Rows: rows} }

func TestClaimedReadsEveryWrittenForm(t *testing.T) {
	cases := []struct {
		text string
		want string // each figure as text=value±half, % for percent, y for a possible year
	}{
		{"Rock earned 826.65", "826.65=826.65±0.005"},
		{"$1,234.5 and €12", "$1,234.5=1234.5±0.05 €12=12±0.5"},
		{"it fell −3 or -3", "−3=3±0.5 -3=3±0.5"},
		{"12% then 12.5 % then 7 percent", "12%=12±0.5% 12.5 %=12.5±0.05% 7 percent=7±0.5%"},
		{"1.2k, 1.2 million, 3 bn, 2.5M", "1.2k=1200±50 1.2 million=1.2e+06±50000 3 bn=3e+09±5e+08 2.5M=2.5e+06±50000"},
		{"about 830, ~830, over 800, 830", "830=830±5 830=830±5 800=800±50 830=830±0.5"},
		{"in 2013", "2013=2013±0.5y"},
		{"1.5e+06 rows", "1.5e+06=1.5e+06±50000"},
		{"on 2013-03-01 and 2013-03", "2013-03-01=2013-03-01 2013-03=2013-03-00"},
		{"in March 2013, on 1 March 2013, on March 1, 2013, in Sept. 2014", "March 2013=2013-03-00 1 March 2013=2013-03-01 March 1, 2013=2013-03-01 Sept. 2014=2014-09-00"},
		// Not figures: identifiers, versions, units glued on, ordinals,
		// ranks, times of day.
		{"r1, Q1, utf8, order_items2, public.t2, v1.2.3, 5ms, 3rd, top 5, top-3, first 10, #1, 12:30, 08:15:00", ""},
	}
	for _, c := range cases {
		var got []string
		for _, f := range Claimed(c.text, nil) {
			switch {
			case f.Date != nil:
				got = append(got, fmt.Sprintf("%s=%04d-%02d-%02d", f.Text, f.Date.Year, f.Date.Month, f.Date.Day))
			default:
				s := fmt.Sprintf("%s=%v±%v", f.Text, f.Value, f.Half)
				if f.Percent {
					s += "%"
				}
				if f.Year {
					s += "y"
				}
				got = append(got, s)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("Claimed(%q)\n got %q\nwant %q", c.text, strings.Join(got, " "), c.want)
		}
	}
}

// An id of the run's own, even one made of digits, is not a figure.
func TestClaimedSkipsTheRunsIDs(t *testing.T) {
	if f := Claimed("see 20130301 and r12", []string{"20130301", "r12"}); len(f) != 0 {
		t.Fatalf("the run's ids read as figures: %+v", f)
	}
	if f := Claimed("see 20130301", nil); len(f) != 1 {
		t.Fatalf("without the id list the number is a figure: %+v", f)
	}
}

// check runs Check and returns each figure's status, with its source and
// how after a colon when set.
func check(text string, ev ...Evidence) string {
	var out []string
	for _, c := range Check(text, ev, []string{"r1", "r2"}) {
		s := c.Text + ":" + string(c.Status)
		if c.Source != "" {
			s += "@" + c.Source
		}
		if c.How != "" {
			s += "[" + c.How + "]"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// The liar: a figure the rows do not show is unverified; the figure shown,
// and the figure rounded at the precision the claim writes, are found.
func TestFiguresAreFoundAtTheirWrittenPrecision(t *testing.T) {
	r1 := result("r1", genres, 3)
	cases := map[string]string{
		"Rock sells best with 999.99":        "999.99:figure-unverified",
		"Rock sells best with 826.65":        "826.65:found@r1",
		"Rock sells best with $826.65":       "$826.65:found@r1",
		"Rock sells best with 826.7":         "826.7:found@r1",
		"Rock sells best with 827":           "827:found@r1",
		"Rock sells best with 826.6":         "826.6:found@r1", // a half either way: 826.65 is one
		"Rock sells best with 826.5":         "826.5:figure-unverified",
		"Rock sells best with 826.66":        "826.66:figure-unverified",
		"Rock sells best with about 830":     "830:found@r1",
		"Rock sells best with 830":           "830:figure-unverified", // a bare whole number is exact
		"Rock sells best with more than 800": "800:found@r1",
		"Rock sells best with about 900":     "900:figure-unverified",
		"Rock sells best with 0.83k":         "0.83k:found@r1",
		// The status line the server appends is not data.
		"Rock sold for 440 seconds": "440:figure-unverified",
	}
	for text, want := range cases {
		if got := check(text, r1); got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
}

// An honest report combines what it read: sums, differences, ratios and
// percentages of two shown values, a column's total and average, the row
// count.
func TestDerivedFiguresAreRecognised(t *testing.T) {
	r1 := result("r1", genres, 3)
	cases := map[string]string{
		"Rock and Latin together 1208.79": "1208.79:derived@r1[826.65 + 382.14]",
		"Rock leads Latin by 444.51":      "444.51:derived@r1[826.65 - 382.14]",
		"Rock sells 2.16 times Latin":     "2.16:derived@r1[826.65 / 382.14]",
		"Rock is 116.3% above Latin":      "116.3%:derived@r1[(826.65 - 382.14) / 382.14 * 100]",
		"Latin is 46.2% of Rock":          "46.2%:derived@r1[382.14 / 826.65 * 100]",
		"the three total 1470.15":         "1470.15:derived@r1[the total of column revenue in r1 (3 rows shown)]",
		"on average 490.05":               "490.05:derived@r1[the average of column revenue in r1 (3 rows shown)]",
		"Rock is 56.2% of the total":      "56.2%:derived@r1[826.65 / the total of column revenue in r1 (3 rows shown) * 100]",
		"Rock is 0.56 of the total":       "0.56:derived@r1[826.65 / the total of column revenue in r1 (3 rows shown)]",
		"Rock and Latin together 1300":    "1300:figure-unverified",
		"Rock is 70% of the total":        "70%:figure-unverified",
	}
	for text, want := range cases {
		if got := check(text, r1); got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
	// Values from two cited results combine too, named by both.
	r2 := result("r2", "Result of the read: 1 row.\n"+fence.Wrap("rows", "total\n700.21\n"), 1)
	if got := check("Rock gained 126.44 on last year", r1, r2); got != "126.44:derived@r1, r2[826.65 - 700.21]" {
		t.Errorf("across results: %s", got)
	}
	// The row count, when the rows are all the reading shows.
	r3 := result("r3", "Result of the read.\n"+fence.Wrap("rows", "name\nRock\nLatin\nMetal\nJazz\nBlues\nPop\nFolk\n"), 7)
	if got := check("seven genres, 7 in all", r3); got != "7:found@r3" && got != "7:derived@r3[the row count of r3]" {
		t.Errorf("row count: %s", got)
	}
	r4 := result("r4", fence.Wrap("rows", "name\nRock\nLatin\n"), 25)
	if got := check("25 genres", r4); got != "25:derived@r4[the row count of r4]" {
		t.Errorf("row count: %s", got)
	}
}

// A figure that is a percentage may be shown as the fraction it writes.
func TestAPercentageMatchesItsFraction(t *testing.T) {
	r1 := result("r1", fence.Wrap("rows", "share\n0.1234\n"), 1)
	if got := check("a 12.3% share", r1); got != "12.3%:found@r1" {
		t.Errorf("%s", got)
	}
	if got := check("a 13% share", r1); got != "13%:figure-unverified" {
		t.Errorf("%s", got)
	}
}

// A date matches a shown date at the precision written.
func TestDatesMatchAtTheirPrecision(t *testing.T) {
	r1 := result("r1", fence.Wrap("rows", "day | orders\n2013-03-15 00:00:00 | 4\n2013-04-02 | 3\n"), 2)
	cases := map[string]string{
		"busiest on 2013-03-15":    "2013-03-15:found@r1",
		"busiest on 15 March 2013": "15 March 2013:found@r1",
		"busiest in March 2013":    "March 2013:found@r1",
		"busiest in 2013-03":       "2013-03:found@r1",
		"busiest in 2013":          "2013:found@r1",
		"busiest on 2013-03-16":    "2013-03-16:figure-unverified",
		"busiest in May 2013":      "May 2013:figure-unverified",
		"busiest in 2014":          "2014:figure-unverified",
	}
	for text, want := range cases {
		if got := check(text, r1); got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
}

// A literal (a statement, the objective) is matched as written and never
// combined: the scope of a reading is not a reading.
func TestLiteralsAreFoundNeverDerived(t *testing.T) {
	r1 := result("r1", genres, 3)
	stmt := Evidence{ID: "r1", Text: "SELECT … WHERE year = 2012 AND total > 100", Rows: -1, Literal: true, How: "in the statement of r1"}
	obj := Evidence{ID: "objective", Text: "revenue per genre in 2012, genres above 100 and 250", Rows: -1, Literal: true, How: "in the run's objective"}
	if got := check("in 2012 all above 100", r1, stmt); got != "2012:found@r1[in the statement of r1] 100:found@r1[in the statement of r1]" {
		t.Errorf("statement: %s", got)
	}
	if got := check("above 250", r1, obj); got != "250:found@objective[in the run's objective]" {
		t.Errorf("objective: %s", got)
	}
	// 100 + 250 is derivable only if literals combined.
	if got := check("350", r1, obj); got != "350:figure-unverified" {
		t.Errorf("literals combined: %s", got)
	}
}

// The work is bounded: past MaxDerivable a shown value is still found,
// but enters no derivation.
func TestDerivationIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("n\n")
	for i := range 2 * MaxDerivable {
		fmt.Fprintf(&b, "%d.5\n", 1000+i*10)
	}
	r1 := result("r1", fence.Wrap("rows", b.String()), 2*MaxDerivable)
	last := 1000 + (2*MaxDerivable-1)*10
	if got := check(fmt.Sprintf("%d.5", last), r1); !strings.Contains(got, ":found@r1") {
		t.Errorf("a value past the cap is still found: %s", got)
	}
	// Two values past the cap: their difference (10) is also the
	// difference of two values within it, so use their sum, which no pair
	// within the cap reaches.
	sum := fmt.Sprintf("%d.0", 2*last-10+1)
	if got := check(sum, r1); got != sum+":figure-unverified" {
		t.Errorf("a sum of values past the cap: %s", got)
	}
	first := fmt.Sprintf("%d.0", 2*1000+10+1)
	if got := check(first, r1); !strings.Contains(got, ":derived@r1") {
		t.Errorf("a sum within the cap: %s", got)
	}
}

// No figure, no check.
func TestATextWithoutFiguresHasNoChecks(t *testing.T) {
	if c := Check("Rock sells best", []Evidence{result("r1", genres, 3)}, nil); c != nil {
		t.Fatalf("%+v", c)
	}
	var _ contracts.FigureCheck
}

// A median of an even count is the mean of the two middle values: derived,
// not shown.
func TestAColumnsMedianIsDerived(t *testing.T) {
	r1 := result("r1", fence.Wrap("rows", "month | orders\n2025-01 | 61\n2025-02 | 70\n2025-03 | 46\n2025-04 | 64\n"), 4)
	if got := check("the monthly median is 62.5", r1); got != "62.5:derived@r1[the median of column orders in r1 (4 rows shown)]" {
		t.Errorf("%s", got)
	}
	if got := check("the monthly median is 63.5", r1); got != "63.5:figure-unverified" {
		t.Errorf("%s", got)
	}
}

// Any text is read without a panic, and every figure is one it holds.
func FuzzCheck(f *testing.F) {
	for _, s := range []string{"Rock 826.65", "$1,234.5 12% 1.2k 3 bn", "1 March 2013, March 1, 2013", "12:30 2013-03-01T08:00", "v1.2.3 r1 #1", "1,2,3,,4.", "9e999 1e-999", "−€-5"} {
		f.Add(s, genres)
	}
	f.Fuzz(func(t *testing.T, claim, shown string) {
		for _, c := range Check(claim, []Evidence{{ID: "r1", Text: shown, Rows: 1}}, []string{"r1"}) {
			if !strings.Contains(claim, c.Text) {
				t.Fatalf("figure %q is not in %q", c.Text, claim)
			}
		}
	})
}
