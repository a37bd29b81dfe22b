package executor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/memtest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
)

// TestMemoryBudgetHoldsUnderWideValues: eight operations at once, each
// reading one 500 MB value or growing an aggregate or a function's working
// set past it (100 MB on PostgreSQL, whose server must build
// eight of them within the statement timeout; eight still pass the budget
// twice over), keep the executor's resident memory under its
// budget, and each ends as a clear result_too_large (agent profile) or a
// truncated result (inspect): bytes are bounded while read, not after.
func TestMemoryBudgetHoldsUnderWideValues(t *testing.T) {
	if testing.Short() {
		t.Skip("reads 8 wide values at once")
	}
	const budget = DefaultMemoryBudget
	type wide struct {
		name string
		conn connections.Connection
		sql  string
	}
	cases := []wide{
		{"sqlite zeroblob", connections.Connection{ID: "w", Engine: contracts.EngineSQLite, Path: demoPath(t)},
			"SELECT zeroblob(500000000) AS v"},
		{"sqlite printf", connections.Connection{ID: "w", Engine: contracts.EngineSQLite, Path: demoPath(t)},
			"SELECT printf('%.*c', 500000000, 'x') AS v"},
		{"duckdb repeat", connections.Connection{ID: "w", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t)},
			"SELECT repeat('x', 500000000) AS v"},
		// Built by aggregation, which no guard can size: DuckDB's memory
		// limit (engine.Options.OperationMemory) stops it while it is built,
		// and its out-of-memory error is result_too_large.
		{"duckdb string_agg", connections.Connection{ID: "w", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t)},
			"SELECT string_agg('xxxxxxxxxxxxxxxxxxxx', '') AS v FROM range(25000000)"},
		// Many values each under the guard's built-value cap: DuckDB stops
		// producing rows past the limits instead of materialising them all.
		{"duckdb many wide rows", connections.Connection{ID: "w", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t)},
			"SELECT repeat('x', 1000000) AS v FROM range(1000)"},
		// Growth no length limit sees (issue 17, item 5): an aggregate's
		// working set on SQLite, held by SQLite's hard heap limit; an edit
		// distance's O(n·m) matrix on DuckDB, outside its memory limit,
		// refused by the guard before it is built.
		{"sqlite json_group_array", connections.Connection{ID: "w", Engine: contracts.EngineSQLite, Path: demoPath(t)},
			wideRows + "SELECT length(json_group_array(hex(zeroblob(500000)))) AS v FROM c"},
		{"sqlite json_group_object", connections.Connection{ID: "w", Engine: contracts.EngineSQLite, Path: demoPath(t)},
			wideRows + "SELECT length(json_group_object(x, hex(zeroblob(500000)))) AS v FROM c"},
		{"sqlite jsonb_group_array", connections.Connection{ID: "w", Engine: contracts.EngineSQLite, Path: demoPath(t)},
			wideRows + "SELECT length(jsonb_group_array(hex(zeroblob(500000)))) AS v FROM c"},
		{"sqlite group_concat", connections.Connection{ID: "w", Engine: contracts.EngineSQLite, Path: demoPath(t)},
			wideRows + "SELECT length(group_concat(hex(zeroblob(500000)))) AS v FROM c"},
		{"sqlite string_agg", connections.Connection{ID: "w", Engine: contracts.EngineSQLite, Path: demoPath(t)},
			wideRows + "SELECT length(string_agg(hex(zeroblob(500000)), ',')) AS v FROM c"},
		{"duckdb damerau_levenshtein", connections.Connection{ID: "w", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t)},
			"SELECT damerau_levenshtein(repeat('a', 12000), repeat('b', 12000)) AS v"},
		{"duckdb levenshtein of string_agg", connections.Connection{ID: "w", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t)},
			"SELECT levenshtein(string_agg(repeat('a', 1000), ''), string_agg(repeat('b', 1000), '')) AS v FROM range(20)"},
	}
	if dsn := pgtest.Lookup(t); dsn != "" {
		cases = append(cases, wide{"postgres repeat", connections.Connection{ID: "w", Engine: contracts.EnginePostgres, DSN: dsn},
			"SELECT repeat('x', n) AS v FROM (SELECT 100000000 AS n) AS t"})
	}
	for _, c := range cases {
		for _, profile := range []contracts.Profile{contracts.ProfileAgentReadOnly, contracts.ProfileInspect} {
			t.Run(c.name+"/"+string(profile), func(t *testing.T) {
				s := newService(t, Config{Engine: c.conn.Engine, MemoryBudget: budget, Connections: []connections.Connection{c.conn}})
				if d := s.Descriptors(); d[0].Status != contracts.ConnectionAvailable {
					t.Fatalf("connection: %+v", d[0])
				}
				replies := make([]contracts.ExecReply, MaxConcurrentReads)
				grew := memtest.ResidentGrowth(t, func() {
					var wg sync.WaitGroup
					for i := range MaxConcurrentReads {
						wg.Go(func() {
							replies[i] = s.Exec(context.Background(), contracts.OpRead, contracts.ExecRequest{
								RunID: "run-wide", StepID: fmt.Sprintf("s%d", i), ConnectionID: "w", Profile: profile,
								SQL: c.sql, TimeoutMs: 10_000})
						})
					}
					wg.Wait()
				})
				t.Logf("resident memory grew by %d MiB (budget %d MiB)", grew>>20, budget>>20)
				if grew > budget {
					t.Errorf("resident memory grew by %d MiB, over the %d MiB budget", grew>>20, budget>>20)
				}
				for i, r := range replies {
					// The guard may refuse to build the value at all (too_complex).
					tooLarge := r.Status == contracts.ExecRefused &&
						(r.Refusal.Code == contracts.RefuseResultTooLarge || r.Refusal.Code == contracts.RefuseTooComplex)
					truncated := r.Status == contracts.ExecOK && r.Artifact.Truncated
					// Under the race detector SQLite builds an aggregate so
					// slowly that the deadline may end it before the heap
					// limit does; the memory bound above still holds, and the
					// plain run (make mutants) pins the refusal.
					slowed := raceEnabled && c.conn.Engine == contracts.EngineSQLite &&
						r.Status == contracts.ExecError && r.Error != nil && r.Error.Class == contracts.DBTimeout
					if !tooLarge && !(profile == contracts.ProfileInspect && truncated) && !slowed {
						t.Errorf("read %d: %+v", i, r)
					}
				}
			})
		}
	}
}

// wideRows is a CTE c of 3,500 rows (x), as many as the Track table.
const wideRows = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3500) "

// TestMemoryBudgetBoundsResults: a result is held while it is stored, so a
// profile's byte bound is lowered to the operation's share of the budget;
// a budget too small to share is refused.
func TestMemoryBudgetBoundsResults(t *testing.T) {
	if _, err := New(Config{MemoryBudget: MinMemoryBudget - 1}); err == nil {
		t.Fatal("New accepted a budget under the minimum")
	}
	s := newService(t, Config{MemoryBudget: MinMemoryBudget}) // 1 MiB per operation
	req := read("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 400) SELECT x, printf('%.*c', 5000, 'x') AS v FROM c")
	req.Profile = contracts.ProfileAgentHandover // 500 rows and 64 MiB of its own
	reply := s.Exec(context.Background(), contracts.OpRead, req)
	if reply.Status != contracts.ExecRefused || reply.Refusal.Code != contracts.RefuseResultTooLarge ||
		!strings.Contains(reply.Refusal.Message, "1048576 bytes") {
		t.Fatalf("2 MB under a 1 MiB share: %+v", reply)
	}
	big := newService(t, Config{})
	if reply := big.Exec(context.Background(), contracts.OpRead, req); reply.Status != contracts.ExecOK {
		t.Fatalf("2 MB under the default budget: %+v", reply)
	}
}
