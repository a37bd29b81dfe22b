package orchestrator

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
)

// benchQuery is a realistic investigation reading: an aggregate over orders.
// The literal changes per iteration so every step is a new step.
const benchQuery = "SELECT status, COUNT(*) AS n FROM orders WHERE id > %d GROUP BY status"

// BenchmarkReadStep compares one run_read_query step through the orchestrator
// (tool-invoked appended and acknowledged, NATS request to the SQLite
// executor, result stored as an artifact, tool-completed appended) with the
// same statement through the bare database/sql driver on the same file.
func BenchmarkReadStep(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "demo.sqlite")
	if err := demodb.Ensure(path); err != nil {
		b.Fatal(err)
	}

	b.Run("bare-driver", func(b *testing.B) {
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		ctx := context.Background()
		for i := 0; b.Loop(); i++ {
			rows, err := db.QueryContext(ctx, fmt.Sprintf(benchQuery, i%100))
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
				var s string
				var n int
				if err := rows.Scan(&s, &n); err != nil {
					b.Fatal(err)
				}
			}
			rows.Close()
		}
	})

	b.Run("orchestrator-executor", func(b *testing.B) {
		srv := natstest.Start(b)
		ctx := context.Background()
		ex, err := executor.New(executor.Config{Connections: []connections.Connection{{ID: "demo", Engine: contracts.EngineSQLite, Path: path}}, Logger: discard(), NATS: srv.Connect()})
		if err != nil {
			b.Fatal(err)
		}
		if err := ex.Start(ctx); err != nil {
			b.Fatal(err)
		}
		defer ex.Stop(context.Background())
		s, _ := New(Config{Logger: discard(), NATS: srv.Connect()})
		if err := s.Start(ctx); err != nil {
			b.Fatal(err)
		}
		defer s.Stop(context.Background())
		budget, _ := policy.Budget(contracts.WorkflowInvestigation)
		header := contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation, Objective: "bench",
			ConnectionID: "demo", Engine: contracts.EngineSQLite, Actor: contracts.Actor{ID: "bench"}, Budget: budget,
			Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowInvestigation)}
		var d *drive
		runs := 0
		newRun := func() {
			runs++
			id := fmt.Sprintf("bench-%d", runs)
			w := s.ledger.Writer(id, 0, nil)
			e, err := w.Append(ctx, contracts.KindRunStarted, header)
			if err != nil {
				b.Fatal(err)
			}
			d = &drive{s: s, runID: id, entries: []contracts.Entry{e}, w: w, header: header}
		}
		for i := 0; b.Loop(); i++ {
			// A run may take 30 statements; start a new one before it would
			// be refused, as a real deployment would.
			if i%budget.MaxStatements == 0 {
				newRun()
			}
			args := readArgs{SQL: fmt.Sprintf(benchQuery, i%100)}
			tc := contracts.ToolCall{Turn: 1, CallID: fmt.Sprint("c", i), Tool: policy.ToolRunReadQuery, Arguments: []byte(`{}`)}
			if _, err := d.statement(ctx, tc, contracts.OpRead, args, nil, contracts.ExecRequest{SQL: args.SQL}); err != nil {
				b.Fatal(err)
			}
			if last := d.entries[len(d.entries)-1]; last.Kind != contracts.KindToolCompleted {
				b.Fatalf("step ended with %s", last.Kind)
			}
		}
	})
}
