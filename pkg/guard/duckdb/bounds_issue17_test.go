package duckdb

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/duckdb/duckdbtest"
)

// A lower bound on a large table's column (main.events on event_date)
// counts only when it is a real limit: each sentinel reads every row and is
// refused with large_table_unbounded (issue 17, item 17).
func TestBoundsThatBoundNothing(t *testing.T) {
	r := reader(t)
	for _, c := range []struct {
		where string
		real  bool
	}{
		{"event_date >= '2026-01-01'", true},
		{"event_date >= DATE '2026-01-01'", true},
		{"event_date >= '2026-01-01'::DATE", true},
		{"event_date >= current_date - INTERVAL 30 DAY", true},
		{"event_date > now() - INTERVAL 1 DAY", true},
		{"event_date > now() - INTERVAL '7 days'", true},
		{"event_date >= current_date - to_years(10)", true},
		{"event_date >= date_trunc('month', current_date)", true},
		{"event_date >= make_date(2024, 1, 1)", true},
		{"event_date >= current_date", true},
		{"event_date = ?", true},
		{"event_date BETWEEN '2026-01-01' AND current_date", true},
		{"event_date IN ('2026-01-01', '2026-01-02')", true},

		{"event_date >= '-infinity'", false},
		{"event_date >= '-infinity'::DATE", false},
		{"event_date >= TIMESTAMP '-infinity'", false},
		{"event_date >= 'epoch'::TIMESTAMP", false},
		{"event_date >= DATE '0001-01-01'", false},
		{"event_date >= '1900-01-01'", false},
		{"event_date >= ''", false},
		{"event_date >= chr(0)", false},
		{"event_date >= NULL", false},
		{"event_date > -1e308", false},
		{"event_date >= 0", false},
		{"event_date >= now() - INTERVAL 100 YEAR", false},
		{"event_date >= now() - INTERVAL '100 years'", false},
		{"event_date >= current_date - to_years(100)", false},
		{"event_date >= current_date - INTERVAL 36500 DAY", false},
		{"event_date >= make_date(1, 1, 1)", false},
		{"event_date >= coalesce(NULL, DATE '0001-01-01')", false},
		{"event_date >= least(DATE '2026-01-01', DATE '0001-01-01')", false},
		{"event_date BETWEEN '-infinity' AND 'infinity'", false},
		{"event_date IN ('2026-01-01', '-infinity')", false},
		{"NOT (event_date < '-infinity')", false},
		{"'-infinity' <= event_date", false},
	} {
		for _, sql := range []string{
			"SELECT count(*) FROM events WHERE " + c.where,
			"SELECT count(*) FROM events e JOIN customers c ON c.id = e.id AND " + strings.ReplaceAll(c.where, "event_date", "e.event_date"),
		} {
			_, ref := guard.Check(r, sql, duckdbtest.Policy())
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
	_, ref := guard.Check(r, "SELECT * FROM events WHERE event_date >= '-infinity'::DATE", duckdbtest.Policy())
	if ref == nil || !strings.Contains(ref.Fix, "real lower limit") {
		t.Errorf("'-infinity': %+v, want a fix asking for a real lower limit", ref)
	}
}
