package duckdb

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/cputest"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// TestDeadlineEndsTheWork: statements the guard admits that run past their
// deadline end as a timeout within twice the deadline, and their work is
// gone then (no CPU burns on): DuckDB is interrupted between vectors, and
// the calls the guard admits are bounded so one vector ends soon. A line
// that ends as a timeout but leaves its work running fails.
func TestDeadlineEndsTheWork(t *testing.T) {
	e, _ := corpusEngine(t)
	const deadline = 2 * time.Second
	for _, q := range []string{
		"SELECT sum(hash(i)) FROM range(100000000000) t(i)",
		"SELECT count(*) FROM range(100000000000) t(i) WHERE regexp_matches(i::VARCHAR, '^(1|2)+3')",
		"SELECT sum(levenshtein(i::VARCHAR, 'abcdefghijklmnopqrstuvwxyz0123456789')) FROM range(100000000000) t(i)",
		"SELECT count(*) FROM range(100000000000) t(i) WHERE i::VARCHAR ILIKE '%1%2%3%4%5%6%7%8%9%0%'",
	} {
		start := time.Now()
		_, err := e.Read(context.Background(), engine.Request{SQL: q, Limits: refuseLimits, Timeout: deadline})
		took := time.Since(start)
		var dbErr *contracts.DBError
		if !errors.As(err, &dbErr) || dbErr.Class != contracts.DBTimeout {
			t.Errorf("%s: %v, want a timeout", q, err)
		}
		if took > 2*deadline {
			t.Errorf("%s: ended after %s, more than twice its %s deadline", q, took, deadline)
		}
		cputest.WorkGone(t, q)
	}
}

// TestNoSpillBesideTheFile: a sort larger than the memory limit fails as too
// large instead of spilling: no <file>.tmp directory appears beside the
// database, whatever max_temp_directory_size says (issue 17, item 6).
func TestNoSpillBesideTheFile(t *testing.T) {
	path := fixture(t)
	e, err := OpenWith(context.Background(), path, []string{"main.*"}, nil, engine.Options{OperationMemory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	_, err = e.Read(context.Background(), engine.Request{
		SQL:    "SELECT count(*) FROM (SELECT i, md5(i::VARCHAR) AS h FROM range(3000000) t(i) ORDER BY h)",
		Limits: refuseLimits, Timeout: time.Minute})
	var ref *contracts.Refusal
	if !errors.As(err, &ref) || ref.Code != contracts.RefuseResultTooLarge {
		t.Errorf("a sort past the memory limit: %v, want result_too_large", err)
	}
	if _, err := os.Stat(path + ".tmp"); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s.tmp exists (%v): the sort spilled beside the database", filepath.Base(path), err)
	}
}

// TestInspectTruncatesWideValues: under a truncating profile (inspect) a
// value wider than a read may hold ends as a truncated result, as on SQLite
// and PostgreSQL; under a refusing one it is refused result_too_large
// (issue 17, item 16).
func TestInspectTruncatesWideValues(t *testing.T) {
	e, _ := corpusEngine(t)
	for _, q := range []string{
		"SELECT repeat('x', 500000000) AS v",
		"SELECT repeat(name, 100000) AS v FROM customers",
		"SELECT printf('%0500000000d', 1) AS v",
	} {
		res, err := e.Read(context.Background(), engine.Request{SQL: q, Limits: truncateLimits, Timeout: 10 * time.Second})
		if err != nil || res.Rows == nil || !res.Rows.Truncated || len(res.Rows.TruncatedBy) != 1 || res.Rows.TruncatedBy[0] != rowset.ByBytes {
			t.Errorf("%s under inspect: %v, %+v; want a result truncated by bytes", q, err, res.Rows)
		}
		_, err = e.Read(context.Background(), engine.Request{SQL: q, Limits: refuseLimits, Timeout: 10 * time.Second})
		var ref *contracts.Refusal
		if !errors.As(err, &ref) || ref.Code != contracts.RefuseResultTooLarge {
			t.Errorf("%s refusing: %v, want result_too_large", q, err)
		}
	}
}
