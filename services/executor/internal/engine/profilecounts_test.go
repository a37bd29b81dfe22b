package engine

import (
	"regexp"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// countsDialect is a dialect whose every part is recognisable in the text.
var countsDialect = Dialect{
	Quote:      QuoteDouble,
	Count:      "count",
	NoDistinct: func(typ string) string { return map[string]string{"json": "no equality"}[typ] },
	Text:       func(typ string) bool { return typ == "text" },
	EmailLike:  func(col string) string { return col + " LIKE 'p'" },
	DigitRun:   func(col string) string { return col + " MATCHES 'p'" },
	Sample:     SampleLimit,
}

// countItem is the only shape an item of a profile's select list may take:
// a count of rows, of a column's present or distinct values, or of the
// values a shape predicate holds for. Anything else (min, max, a bare
// column, a string aggregate) would return a value of the table.
var countItem = regexp.MustCompile(`^count\((\*|DISTINCT "[a-z0-9]+"|"[a-z0-9]+"|CASE WHEN "[a-z0-9]+" (LIKE|MATCHES) 'p' THEN 1 END)\) AS [a-z]+[0-9]*$`)

// TestComposedProfileSelectsCountsOnly: at every depth, sampled or not,
// the composed statement's one row is counts and nothing else, read from
// the one relation (through a sample of the covered columns only when the
// table is large). A profile returns counts, never a value of the table.
func TestComposedProfileSelectsCountsOnly(t *testing.T) {
	p := ProfileRequest{Relation: contracts.Relation{Schema: "s", Name: "t"}, Columns: []contracts.RelationColumn{
		{Name: "c0", Type: "integer"}, {Name: "c1", Type: "text"}, {Name: "c2", Type: "json"}, {Name: "c3", Type: "text"}}}
	for _, depth := range contracts.ProfileDepths {
		for _, sample := range []int64{0, ProfileSampleRows} {
			p.Depth = depth
			plan := ComposeProfile(countsDialect, p, sample)
			head, from, ok := strings.Cut(plan.SQL, "\n  FROM ")
			if !ok || !strings.HasPrefix(head, "SELECT ") {
				t.Fatalf("%s/%d: not one SELECT … FROM:\n%s", depth, sample, plan.SQL)
			}
			items := strings.Split(strings.TrimPrefix(head, "SELECT "), ",\n       ")
			if items[0] != "count(*) AS n" {
				t.Errorf("%s/%d: the first item is %q, not the row count", depth, sample, items[0])
			}
			for _, it := range items {
				if !countItem.MatchString(it) {
					t.Errorf("%s/%d: %q is not a count:\n%s", depth, sample, it, plan.SQL)
				}
			}
			want := `"s"."t"`
			if sample > 0 {
				want = `(SELECT "c0", "c1", "c2", "c3" FROM "s"."t" LIMIT 100000) AS sampled`
			}
			if from != want {
				t.Errorf("%s/%d: FROM %s, want %s", depth, sample, from, want)
			}
		}
	}
}
