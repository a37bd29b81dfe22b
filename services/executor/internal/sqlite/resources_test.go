package sqlite

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/cputest"
	"github.com/sondehq/sonde/pkg/memtest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// TestDeadlineEndsTheWork: statements the guard admits end within twice
// their deadline — as a timeout, or refused by a limit at once — and leave
// no work running: SQLite hears the interrupt between steps, and no step
// the guard admits runs long (a LIKE pattern is at most MaxPatternBytes; a
// 1,000-byte one over 1 MB values took 4 to 7 s a match). A line that ends as a
// timeout but leaves its work running fails.
func TestDeadlineEndsTheWork(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector slows SQLite's transpiled code twentyfold: one match at the pattern limit takes 20 s, not the 1 s these bounds are for")
	}
	e := open(t, fixture(t))
	const deadline = 2 * time.Second
	wide := "with recursive r(s) as (select hex(zeroblob(500000)) union all select s from r) select count(*) from r where "
	for _, q := range []string{
		"with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c",
		wide + "s like '%" + strings.Repeat("0", 4000) + "1%'",
		wide + "s glob '*" + strings.Repeat("0", 4000) + "1*'",
		wide + "s like '%" + strings.Repeat("0", MaxPatternBytes-3) + "1%'",
		wide + "instr(s, '" + strings.Repeat("0", 4000) + "1') > 0",
	} {
		start := time.Now()
		_, err := e.Read(context.Background(), engine.Request{SQL: q, Limits: refuseLimits, Timeout: deadline})
		took := time.Since(start)
		var dbErr *contracts.DBError
		if !errors.As(err, &dbErr) {
			t.Errorf("%.120s: %v, want a database error (a timeout, or a pattern past the limit)", q, err)
		}
		if took > 2*deadline {
			t.Errorf("%.120s: ended after %s, more than twice its %s deadline", q, took, deadline)
		}
		cputest.WorkGone(t, q[:min(len(q), 120)])
	}
}

// TestAggregateGrowthHeld: an aggregate that builds one value out of many
// rows is held by SQLite's hard heap limit while it builds (SQLite's length
// limit sees the value only once built): the read is refused as too large
// and the process grows by no more than twice the limit (a value grown by
// realloc is held twice for a moment; issue 17, item 5).
func TestAggregateGrowthHeld(t *testing.T) {
	if testing.Short() {
		t.Skip("builds values of hundreds of megabytes")
	}
	e := open(t, fixture(t))
	rows := "with recursive c(x) as (select 1 union all select x + 1 from c where x < 700) "
	for _, q := range []string{
		rows + "select length(json_group_array(hex(zeroblob(500000)))) from c",
		rows + "select length(json_group_object(x, hex(zeroblob(500000)))) from c",
		rows + "select length(jsonb_group_array(hex(zeroblob(500000)))) from c",
		rows + "select length(jsonb_group_object(x, hex(zeroblob(500000)))) from c",
		rows + "select length(group_concat(hex(zeroblob(500000)))) from c",
		rows + "select length(string_agg(hex(zeroblob(500000)), ',')) from c",
	} {
		var err error
		grew := memtest.ResidentGrowth(t, func() {
			_, err = e.Read(context.Background(), engine.Request{SQL: q, Limits: refuseLimits, Timeout: time.Minute})
		})
		var ref *contracts.Refusal
		var tooLarge *rowset.TooLargeError
		if !(errors.As(err, &ref) && ref.Code == contracts.RefuseResultTooLarge) && !errors.As(err, &tooLarge) {
			t.Errorf("%.100s: %v, want result_too_large", q, err)
		}
		t.Logf("%.100s: resident memory grew by %d MiB", q, grew>>20)
		if limit := 2*HeapLimit(0) + 64<<20; grew > limit {
			t.Errorf("%.100s: resident memory grew by %d MiB, more than twice SQLite's heap limit and 64 MiB", q, grew>>20)
		}
	}
	if _, err := read(t, e, "select count(*) from n"); err != nil {
		t.Errorf("after the refusals: %v", err)
	}
}
