package guard

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
)

// LargeColumn marks as large exactly what the bound check would hold to a
// bound: the key's loose match, in the default schema when unqualified.
func TestLargeColumn(t *testing.T) {
	p := Policy{DefaultSchema: "public", LargeTables: map[string]string{"public.Events": "event_date", "raw.*": "at"}}
	for _, tc := range []struct {
		rule  NameRule
		t     Table
		col   string
		large bool
	}{
		{NamesExact, Table{Schema: "public", Name: "events"}, "event_date", true},
		{NamesFold, Table{Name: "EVENTS"}, "event_date", true},
		{NamesFold, Table{Schema: "raw", Name: "anything"}, "at", true},
		{NamesFold, Table{Schema: "public", Name: "orders"}, "", false},
		{NamesFold, Table{Schema: "other", Name: "events"}, "", false},
	} {
		col, large := p.LargeColumn(tc.rule, tc.t)
		if col != tc.col || large != tc.large {
			t.Errorf("%v %+v: %q %v, want %q %v", tc.rule, tc.t, col, large, tc.col, tc.large)
		}
	}
}

// A bound's value limits rows only when it is a real lower limit: each
// sentinel of issue 17 (item 17) is vacuous, each real date is not.
func TestBoundValueVacuous(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v       BoundValue
		vacuous bool
	}{
		{BoundValue{Kind: BoundString, Text: "2026-01-01"}, false},
		{BoundValue{Kind: BoundString, Text: "2025"}, false},
		{BoundValue{Kind: BoundString, Text: "20260101"}, false},
		{BoundValue{Kind: BoundString, Text: "1/31/2026"}, false},
		{BoundValue{Kind: BoundString, Text: "2026-01-01 10:00:00+02"}, false},
		{BoundValue{Kind: BoundString, Text: "1970-01-02"}, false},
		{BoundValue{Kind: BoundString, Text: "today"}, false},
		{BoundValue{Kind: BoundString, Text: "click"}, false},
		{BoundValue{Kind: BoundString, Text: "a"}, false},
		{BoundValue{Kind: BoundNumber, Number: 1}, false},
		{BoundValue{Kind: BoundNumber, Number: 1700000000}, false},
		{BoundValue{Kind: BoundNow}, false},
		{BoundValue{Kind: BoundNow, Back: 7 * 24 * time.Hour}, false},
		{BoundValue{Kind: BoundNow, Back: 50 * BoundYear}, false},
		{BoundValue{Kind: BoundParam}, false},

		{BoundValue{Kind: BoundUnknown}, true},
		{BoundValue{Kind: BoundNull}, true},
		{BoundValue{Kind: BoundString, Text: "-infinity"}, true},
		{BoundValue{Kind: BoundString, Text: " -Infinity "}, true},
		{BoundValue{Kind: BoundString, Text: "epoch"}, true},
		{BoundValue{Kind: BoundString, Text: ""}, true},
		{BoundValue{Kind: BoundString, Text: " "}, true},
		{BoundValue{Kind: BoundString, Text: "\x00"}, true},
		{BoundValue{Kind: BoundString, Text: "!"}, true},
		{BoundValue{Kind: BoundString, Text: "0001-01-01"}, true},
		{BoundValue{Kind: BoundString, Text: "0001-01-01 00:00:00"}, true},
		{BoundValue{Kind: BoundString, Text: "1753-01-01"}, true},
		{BoundValue{Kind: BoundString, Text: "17530101"}, true},
		{BoundValue{Kind: BoundString, Text: "1/1/1753"}, true},
		{BoundValue{Kind: BoundString, Text: "Jan 1 1753"}, true},
		{BoundValue{Kind: BoundString, Text: "1 January 1900"}, true},
		{BoundValue{Kind: BoundString, Text: "1900-01-01"}, true},
		{BoundValue{Kind: BoundString, Text: "1970-01-01"}, true},
		{BoundValue{Kind: BoundString, Text: "1970"}, true},
		{BoundValue{Kind: BoundString, Text: "2026-01-01 BC"}, true},
		{BoundValue{Kind: BoundString, Text: "0"}, true},
		{BoundValue{Kind: BoundString, Text: "-1e308"}, true},
		{BoundValue{Kind: BoundNumber, Number: 0}, true},
		{BoundValue{Kind: BoundNumber, Number: -1}, true},
		{BoundValue{Kind: BoundNumber, Number: -1e308}, true},
		{BoundValue{Kind: BoundNumber, Number: math.Inf(-1)}, true},
		{BoundValue{Kind: BoundNumber, Number: math.NaN()}, true},
		{BoundValue{Kind: BoundNow, Back: 100 * BoundYear}, true},
		{BoundValue{Kind: BoundNow, Back: 250 * BoundYear}, true},
	} {
		why := tc.v.Vacuous(now)
		if (why != "") != tc.vacuous {
			t.Errorf("%+v: vacuous %q, want vacuous %v", tc.v, why, tc.vacuous)
		}
	}
}

// A bound whose value bounds nothing does not count, and the refusal says
// to bound the table with a real lower limit.
func TestVacuousBoundRefused(t *testing.T) {
	p := Policy{DefaultSchema: "public", LargeTables: map[string]string{"public.events": "event_date"}}
	st := &Statement{Scopes: []Scope{{Tables: []Table{{Name: "events"}}, Bounds: []Bound{{Column: "event_date", Vacuous: "'-infinity' is a sentinel"}}}}}
	ref := Apply(st, p)
	if ref == nil || ref.Code != contracts.RefuseLargeTableUnbounded || !strings.Contains(ref.Message, "-infinity") || !strings.Contains(ref.Fix, "real lower limit") {
		t.Fatalf("vacuous bound: %+v", ref)
	}
	st.Scopes[0].Bounds = append(st.Scopes[0].Bounds, Bound{Column: "event_date"})
	if ref := Apply(st, p); ref != nil {
		t.Errorf("a real bound beside a vacuous one: %+v", ref)
	}
	st.Scopes[0].Bounds = []Bound{{Column: "other", Vacuous: "NULL"}}
	if ref := Apply(st, p); ref == nil || strings.Contains(ref.Fix, "real lower limit") {
		t.Errorf("a vacuous bound on another column: %+v", ref)
	}
}

func TestParseInterval(t *testing.T) {
	day := 24 * time.Hour
	for s, want := range map[string]time.Duration{
		"7 days": 7 * day, "1 day": day, "-1 year": -BoundYear, "2 weeks 1 day": 15 * day, "3 days ago": -3 * day, "1day": day,
	} {
		if got, ok := ParseInterval(s); !ok || got != want {
			t.Errorf("%q: %v %v, want %v", s, got, ok, want)
		}
	}
	if got, ok := ParseInterval("100 years"); !ok || got < 100*365*day {
		t.Errorf("100 years: %v %v", got, ok)
	}
	for _, s := range []string{"", "soon", "P1Y", "7 fortnights"} {
		if _, ok := ParseInterval(s); ok {
			t.Errorf("%q read as an interval", s)
		}
	}
}
