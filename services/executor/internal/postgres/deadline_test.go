package postgres

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
)

// stubborn is a function that catches query_canceled and goes on: neither
// statement_timeout nor a cancel request stops it — what a built-in that
// never checks for interrupts does too (issue 17 item 4: xpath ran 141 s
// past a 1 s timeout). The guard refuses user code; this tests the engine's
// deadline alone, below it.
const stubborn = `CREATE FUNCTION public.sonde_stubborn(marker text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	LOOP
		BEGIN
			PERFORM pg_catalog.pg_sleep(0.05);
		EXCEPTION WHEN query_canceled THEN NULL;
		END;
	END LOOP;
END $$;
GRANT EXECUTE ON FUNCTION public.sonde_stubborn(text) TO PUBLIC;`

// backendGoneBy polls pg_stat_activity until no backend runs a statement
// holding marker, and fails when one still does at by (the caller first
// bounds its own call: a backend found gone after by may have lived past
// it).
func (s *server) backendGoneBy(t *testing.T, marker string, by time.Time) {
	t.Helper()
	for {
		var n int
		if err := s.admin.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_stat_activity
			WHERE query LIKE '%' || $1 || '%' AND state IS DISTINCT FROM 'idle' AND pid <> pg_backend_pid()`, marker).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if time.Now().After(by) {
			t.Fatalf("a backend still runs the statement %s after the bound", marker)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDeadlineTerminatesAStatementThatIgnoresCancel: a statement that
// survives its statement_timeout and the cancel request is terminated, its
// backend is gone within twice the deadline, and the reply says so — for a
// timeout, and for a caller who cancels.
func TestDeadlineTerminatesAStatementThatIgnoresCancel(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, stubborn)
	e := s.engine(t)
	ctx := context.Background()

	marker := "sonde-stubborn-" + suffix()
	r := req("", contracts.ProfileAgentReadOnly)
	r.Timeout = 3 * time.Second
	start := time.Now()
	_, err := e.run(ctx, "SELECT public.sonde_stubborn('"+marker+"')", nil, r)
	if d := dbErr(t, err); d.Class != contracts.DBTimeout || !strings.Contains(d.Message, "terminated") {
		t.Fatalf("a statement that ignores its timeout: %+v, want a timeout that says its process was terminated", d)
	}
	// The backend ran until the engine terminated it, before it replied.
	if el := time.Since(start); el > 2*r.Timeout {
		t.Fatalf("the reply came %v after the start, past twice the %v timeout", el, r.Timeout)
	}
	s.backendGoneBy(t, marker, start.Add(2*r.Timeout))

	marker = "sonde-stubborn-" + suffix()
	r.Timeout = 4 * time.Second
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	start = time.Now()
	_, err = e.run(cctx, "SELECT public.sonde_stubborn('"+marker+"')", nil, r)
	if d := dbErr(t, err); d.Class != contracts.DBCancelled || !strings.Contains(d.Message, "terminated") {
		t.Fatalf("a cancelled statement that ignores the cancel: %+v, want cancelled, its process terminated", d)
	}
	if el := time.Since(start); el > 2*r.Timeout {
		t.Fatalf("the cancelled call came back %v after the start, past twice the %v timeout", el, r.Timeout)
	}
	s.backendGoneBy(t, marker, start.Add(2*r.Timeout))

	// The pool serves afterwards.
	if _, err := e.Read(ctx, req("SELECT 1", contracts.ProfileAgentReadOnly)); err != nil {
		t.Fatal(err)
	}
}

// TestDeadlineEndsACPUHeavyRead: a statement the guard admits that would
// run for minutes (a cross join count) ends at its deadline, and its
// backend no longer runs it within twice the deadline.
func TestDeadlineEndsACPUHeavyRead(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	marker := "sonde_heavy_" + suffix()
	r := req("SELECT count(*) AS "+marker+" FROM generate_series(1, 100000) a, generate_series(1, 100000) b", contracts.ProfileAgentReadOnly)
	r.Timeout = 1500 * time.Millisecond
	start := time.Now()
	_, err := e.Read(context.Background(), r)
	if d := dbErr(t, err); d.Class != contracts.DBTimeout {
		t.Fatalf("a cross join count: %+v, want timeout", d)
	}
	s.backendGoneBy(t, marker, start.Add(2*r.Timeout))
}

// TestCheckSetsTheStatementTimeout: the catalog check's round trip sets
// the read's statement_timeout (SET LOCAL), so the server's own timeout is
// the first to stop a read.
func TestCheckSetsTheStatementTimeout(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	r := req("", contracts.ProfileInspect)
	r.Timeout = 4321 * time.Millisecond
	res, err := e.runChecked(context.Background(), "SELECT current_setting('statement_timeout')", nil, r, &objects{})
	if err != nil || res.Rows.Rows[0][0] != "4321ms" {
		t.Fatalf("statement_timeout inside a checked read: %v %v, want 4321ms", res.Rows, err)
	}
}
