package sqlite

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// A lower bound on a large table's column (events on event_date, stored as
// text) counts only when it is a real limit: each sentinel reads every row
// and is refused with large_table_unbounded (issue 17, item 17).
func TestBoundsThatBoundNothing(t *testing.T) {
	_, db := fixtureDB(t)
	r := reader(t, db)
	for _, c := range []struct {
		where string
		real  bool
	}{
		{"event_date >= '2025-01-01'", true},
		{"event_date >= '2025'", true},
		{"event_date >= date('now', '-7 days')", true},
		{"event_date >= datetime('now', 'start of month', '-1 month')", true},
		{"event_date >= date('2025-01-01')", true},
		{"event_date >= current_date", true},
		{"event_date >= ?", true},
		{"event_date >= cast(? as text)", true},
		{"event_date between '2025-01-01' and '2025-02-01'", true},
		{"event_date in ('2025-01-01', '2025-01-02')", true},
		{"not (event_date < '2025-01-01')", true},
		{"'2025-01-01' <= event_date", true},

		{"event_date >= ''", false},
		{"event_date >= ' '", false},
		{"event_date >= char(0)", false},
		{"event_date > '-'", false},
		{"event_date >= '0'", false},
		{"event_date >= 0", false},
		{"event_date >= -1", false},
		{"event_date > -1e308", false},
		{"event_date >= null", false},
		{"event_date >= '0001-01-01'", false},
		{"event_date >= '1900-01-01'", false},
		{"event_date >= '1970'", false},
		{"event_date >= date('now', '-100 years')", false},
		{"event_date >= date('now', '-36500 days')", false},
		{"event_date >= datetime('now', '-1000 years', 'start of year')", false},
		{"event_date >= date('0001-01-01')", false},
		{"event_date >= coalesce(null, '0001-01-01')", false},
		{"event_date >= min('2025-01-01', '')", false},
		{"event_date >= cast('' as text)", false},
		{"event_date between '' and '9999'", false},
		{"event_date in ('2025-01-01', '')", false},
		{"not (event_date < '')", false},
		{"'' <= event_date", false},
	} {
		for _, sql := range []string{
			"select count(*) from events where " + c.where,
			"select count(*) from events e join customers c on c.id = e.user_id and " + strings.ReplaceAll(c.where, "event_date", "e.event_date"),
		} {
			_, ref := guard.Check(r, sql, policy)
			switch {
			case c.real && ref != nil:
				t.Errorf("%s: refused %s: %s", sql, ref.Code, ref.Message)
			case !c.real && ref == nil:
				t.Errorf("%s: admitted; it reads every row", sql)
			case !c.real && ref.Code != contracts.RefuseLargeTableUnbounded:
				t.Errorf("%s: %s (%s), want large_table_unbounded", sql, ref.Code, ref.Message)
			}
		}
	}
	_, ref := guard.Check(r, "select * from events where event_date >= ''", policy)
	if ref == nil || !strings.Contains(ref.Fix, "real lower limit") {
		t.Errorf("'': %+v, want a fix asking for a real lower limit", ref)
	}
}
