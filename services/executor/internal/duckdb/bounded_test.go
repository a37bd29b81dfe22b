package duckdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/memtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// A thousand values of 1 MB each, every one under the guard's cap on a
// built value: a gigabyte of result.
const wideResult = "SELECT repeat('x', 1000000) AS v FROM range(1000)"

// TestWideResultMemoryBoundedWhileRead: DuckDB produces no more of a result than
// the bounds can use. A gigabyte of 1 MB values is refused (agent profile)
// or truncated (inspect) while the process grows by a few MiB, not the
// 1.5 GB the driver's materialised result took; eight such reads at once
// stay far below the executor's 512 MB budget.
func TestWideResultMemoryBoundedWhileRead(t *testing.T) {
	if testing.Short() {
		t.Skip("builds wide results")
	}
	e, err := OpenConnection(context.Background(), connections.Connection{ID: "d", Engine: contracts.EngineDuckDB, Path: fixture(t)},
		engine.Options{OperationMemory: 16 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const most = 64 << 20

	var refusedErr error
	grew := memtest.ResidentGrowth(t, func() { _, refusedErr = e.Read(context.Background(), read(wideResult)) })
	t.Logf("agent profile: grew %d MiB", grew>>20)
	var tooLarge *rowset.TooLargeError
	if !errors.As(refusedErr, &tooLarge) || tooLarge.By != rowset.ByBytes {
		t.Errorf("agent profile: %v, want too large by bytes", refusedErr)
	}
	if grew > most {
		// Stop here: eight at once would take gigabytes.
		t.Fatalf("one read grew the process by %d MiB, want under %d MiB", grew>>20, most>>20)
	}

	// A parameter in the select list leaves the prepare without types: the
	// columns are read from a result of no rows, and the bound holds alike.
	param := read("SELECT ?::VARCHAR AS k, repeat('x', 1000000) AS v FROM range(1000)")
	param.Params = []any{"k"}
	grew = memtest.ResidentGrowth(t, func() { _, refusedErr = e.Read(context.Background(), param) })
	t.Logf("agent profile, with a parameter: grew %d MiB", grew>>20)
	if !errors.As(refusedErr, &tooLarge) || tooLarge.By != rowset.ByBytes {
		t.Errorf("with a parameter: %v, want too large by bytes", refusedErr)
	}
	if grew > most {
		t.Fatalf("with a parameter: one read grew the process by %d MiB, want under %d MiB", grew>>20, most>>20)
	}

	inspect := read(wideResult)
	inspect.Limits = rowset.Limits{MaxRows: 200, MaxBytes: 1 << 20, Truncate: true}
	var res engine.Result
	grew = memtest.ResidentGrowth(t, func() { res, err = e.Read(context.Background(), inspect) })
	t.Logf("inspect profile: grew %d MiB", grew>>20)
	if err != nil || res.Rows == nil || !res.Rows.Truncated || res.Rows.TruncatedBy[0] != rowset.ByBytes ||
		len(res.Rows.Rows) != 1 || len(res.Rows.Rows[0][0].(string)) != 1000000 {
		t.Errorf("inspect profile: %v, %+v", err, res.Rows.Summary(""))
	}
	if grew > most {
		t.Fatalf("inspect: one read grew the process by %d MiB, want under %d MiB", grew>>20, most>>20)
	}

	errs := make([]error, MaxConns)
	grew = memtest.ResidentGrowth(t, func() {
		var wg sync.WaitGroup
		for i := range errs {
			wg.Go(func() { _, errs[i] = e.Read(context.Background(), read(wideResult)) })
		}
		wg.Wait()
	})
	t.Logf("%d at once: grew %d MiB", len(errs), grew>>20)
	for i, err := range errs {
		if !errors.As(err, &tooLarge) {
			t.Errorf("read %d of %d at once: %v, want too large", i, len(errs), err)
		}
	}
	if grew > 2*most {
		t.Errorf("%d reads at once grew the process by %d MiB, want under %d MiB", len(errs), grew>>20, 2*most>>20)
	}
}

// TestBoundedReadKeepsTheStatement: the wrapper that bounds a read changes
// nothing the statement says: its column names (duplicates and case
// included, which a subquery would rename), its order, its parameters, a
// trailing comment, and rows of every type.
func TestBoundedReadKeepsTheStatement(t *testing.T) {
	e := open(t, fixture(t), nil, nil)
	ctx := context.Background()
	names := func(res engine.Result) string {
		var n []string
		for _, c := range res.Rows.Columns {
			n = append(n, c.Name)
		}
		return strings.Join(n, ",")
	}

	res, err := e.Read(ctx, read("SELECT 1 AS a, 2 AS a, 3 AS A, 1 + 1, count(*) FROM range(3)"))
	if err != nil {
		t.Fatal(err)
	}
	if got := names(res); got != "a,a,A,(1 + 1),count_star()" {
		t.Errorf("columns %s", got)
	}

	req := read("SELECT x FROM range(1000000) AS t(x) ORDER BY x % 7 DESC, x DESC")
	req.Limits = truncateLimits
	if res, err = e.Read(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(res.Rows.Rows) != 200 || !res.Rows.Truncated || res.Rows.TruncatedBy[0] != rowset.ByRows {
		t.Fatalf("ordered: %+v", res.Rows.Summary(""))
	}
	var want []int64
	for r := int64(6); r >= 0 && len(want) < 200; r-- {
		for x := int64(999999); x >= 0 && len(want) < 200; x-- {
			if x%7 == r {
				want = append(want, x)
			}
		}
	}
	for i, row := range res.Rows.Rows {
		if row[0] != want[i] {
			t.Fatalf("row %d = %v, want %d: the inner ORDER BY was not kept", i, row[0], want[i])
		}
	}

	req = read("SELECT ? AS a, ? AS a, ?::INTEGER + 1 AS b -- the end")
	req.Params = []any{"x", int64(2), int64(3)}
	if res, err = e.Read(ctx, req); err != nil {
		t.Fatal(err)
	}
	// (Untyped parameters: the columns are read through a subquery, which
	// renames a duplicate.)
	if got := fmt.Sprint(res.Rows.Rows[0]); got != "[x 2 4]" || names(res) != "a,a_1,b" {
		t.Errorf("parameters: %s, columns %s", got, names(res))
	}
	req = read("SELECT id, status AS s, status AS s FROM orders WHERE id <= ? ORDER BY id DESC")
	req.Params = []any{int64(3)}
	if res, err = e.Read(ctx, req); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(res.Rows.Rows); got != "[[3 open open] [2 paid paid] [1 open open]]" || names(res) != "id,s,s" {
		t.Errorf("a typed statement with a parameter: %s, columns %s", got, names(res))
	}

	// The wrapper renames the columns by position: a column named like one
	// of its own does not change what is measured.
	req = read("SELECT 1 AS sonde_c1, repeat('x', 600000) AS sonde_c0, 2 AS sonde_q FROM range(3)")
	if _, err = e.Read(ctx, req); !errors.As(err, new(*rowset.TooLargeError)) {
		t.Errorf("columns named like the wrapper's: %v, want too large", err)
	}
	req.Limits = truncateLimits
	if res, err = e.Read(ctx, req); err != nil || len(res.Rows.Rows) != 0 || !res.Rows.Truncated || names(res) != "sonde_c1,sonde_c0,sonde_q" {
		t.Errorf("columns named like the wrapper's, truncated: %v, %+v", err, res.Rows.Summary(""))
	}
	// Shapes a subquery must carry as written: set operations, CTEs,
	// FROM-first, VALUES, a LIMIT of its own, a trailing comment.
	for q, want := range map[string]string{
		"SELECT 1 AS x UNION ALL SELECT 2 ORDER BY x DESC":            "[[2] [1]]",
		"WITH c AS (SELECT 7 AS x) SELECT x FROM c":                   "[[7]]",
		"FROM orders SELECT id WHERE id < 3 ORDER BY id":              "[[1] [2]]",
		"VALUES (1, 'a'), (2, 'b')":                                   "[[1 a] [2 b]]",
		"SELECT id FROM orders ORDER BY id DESC LIMIT 2 OFFSET 1":     "[[299] [298]]",
		"SELECT id FROM orders WHERE id = 1 -- no newline after this": "[[1]]",
		"SELECT id FROM orders WHERE id = 1 /* a block comment */":    "[[1]]",
		"SELECT [1, 2] AS l, NULL AS n, (SELECT b FROM kinds) AS b":   "[[[1 2] <nil> {blob 00ff 2}]]",
	} {
		res, err := e.Read(ctx, read(q))
		if err != nil {
			t.Errorf("%q: %v", q, err)
			continue
		}
		if got := fmt.Sprint(res.Rows.Rows); got != want {
			t.Errorf("%q: %s, want %s", q, got, want)
		}
	}

	// Exactly at the bounds: 200 rows fit, and nothing is emptied.
	req = read("SELECT x, repeat('y', 1000) AS v FROM range(200) AS t(x)")
	if res, err = e.Read(ctx, req); err != nil || len(res.Rows.Rows) != 200 || res.Rows.Truncated {
		t.Errorf("200 rows of 1 KB under 256 KiB: %v", err)
	}
}

// TestOutOfMemoryIsTooLarge: a statement that needs more than DuckDB's
// memory_limit (an aggregate building one long value, which no guard can
// size) is refused as result_too_large, read from the error's type, not a
// database failure to retry.
func TestOutOfMemoryIsTooLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a long aggregate")
	}
	e, err := OpenConnection(context.Background(), connections.Connection{ID: "d", Engine: contracts.EngineDuckDB, Path: fixture(t)},
		engine.Options{OperationMemory: 8 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req := read("SELECT string_agg('xxxxxxxxxxxxxxxxxxxx', '') AS v FROM range(25000000)")
	req.Timeout = 30 * time.Second
	_, err = e.Read(context.Background(), req)
	var ref *contracts.Refusal
	if !errors.As(err, &ref) || ref.Code != contracts.RefuseResultTooLarge || !strings.Contains(ref.Message, "memory_limit 64 MiB") {
		t.Fatalf("string_agg past the memory limit: %v, want result_too_large", err)
	}
}
