package postgres_test

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
)

// A lower bound on a large table's column (events on event_date) counts
// only when it is a real limit: each sentinel reads every row and is refused
// with large_table_unbounded (issue 17, item 17); one whose shape is a bound
// says to bound the table with a real lower limit.
func TestBoundsThatBoundNothing(t *testing.T) {
	for _, c := range []struct {
		where string
		real  bool
	}{
		{"event_date >= '2026-01-01'", true},
		{"event_date >= '2026-01-01'::date", true},
		{"event_date >= DATE '2026-01-01'", true},
		{"event_date >= current_date - 7", true},
		{"event_date > now() - interval '1 day'", true},
		{"event_date > now() - '30 days'::interval", true},
		{"event_date >= current_date - interval '1 year' * 10", true},
		{"event_date >= date_trunc('month', now())", true},
		{"event_date >= make_date(2024, 1, 1)", true},
		{"event_date >= 'today'", true},
		{"event_date BETWEEN '2026-01-01' AND current_date", true},
		{"event_date IN ('2026-01-01', '2026-01-02')", true},
		{"NOT (event_date < '2026-01-01')", true},

		{"event_date >= '-infinity'", false},
		{"event_date >= '-infinity'::date", false},
		{"event_date >= '-infinity'::timestamptz", false},
		{"event_date >= 'epoch'", false},
		{"event_date >= '0001-01-01'", false},
		{"event_date >= '0001-01-01 BC'", false},
		{"event_date >= '4713-01-01 BC'::date", false},
		{"event_date >= '1900-01-01'::timestamp", false},
		{"event_date >= ''::text", false},
		{"event_date >= E'\\001'", false},
		{"event_date >= NULL", false},
		{"event_date >= NULL::date", false},
		{"event_date > -1e308", false},
		{"event_date >= 0", false},
		{"event_date >= now() - interval '100 years'", false},
		{"event_date >= current_date - 36500", false},
		{"event_date >= current_date - interval '1 year' * 100", false},
		{"event_date >= now() - interval '1000 years'", false},
		{"event_date >= make_date(1, 1, 1)", false},
		{"event_date >= to_date('0001-01-01', 'YYYY-MM-DD')", false},
		{"event_date >= coalesce(NULL, '0001-01-01')", false},
		{"event_date >= least('2026-01-01', '0001-01-01')", false},
		{"event_date BETWEEN '-infinity' AND 'infinity'", false},
		{"event_date IN ('2026-01-01', '-infinity')", false},
		{"NOT (event_date < '-infinity')", false},
		{"'-infinity' <= event_date", false},
	} {
		for _, sql := range []string{
			"SELECT count(*) FROM events WHERE " + c.where,
			"SELECT count(*) FROM events e JOIN customers c ON c.id = e.id AND " + strings.ReplaceAll(c.where, "event_date", "e.event_date"),
		} {
			_, ref := guard.Check(postgres.Reader{}, sql, postgrestest.Policy())
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
}

func TestVacuousBoundAsksForARealLimit(t *testing.T) {
	_, ref := guard.Check(postgres.Reader{}, "SELECT * FROM events WHERE event_date >= '-infinity'::date", postgrestest.Policy())
	if ref == nil || ref.Code != contracts.RefuseLargeTableUnbounded || !strings.Contains(ref.Fix, "real lower limit") || !strings.Contains(ref.Message, "-infinity") {
		t.Errorf("'-infinity': %+v", ref)
	}
}
