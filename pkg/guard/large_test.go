package guard

import "testing"

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
