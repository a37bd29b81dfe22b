package executor

import (
	"context"
	"database/sql"
	"log/slog"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
	_ "modernc.org/sqlite"
)

// The statements: a scan of every order, and a primary-key lookup that shows
// the fixed cost of a call.
var benchSQL = []struct{ name, sql string }{
	{"group-by", "select status, count(*) as orders, sum(total_cents) as cents from orders group by status order by status"},
	{"point", "select id, status, total_cents from orders where id = 1234"},
}

// BenchmarkRead runs one read through Exec (guard, authorizer, limits,
// collection under the agent profile, rendering; no artifact store) beside
// the same statement through bare database/sql on the same demo file.
func BenchmarkRead(b *testing.B) {
	path := demoPath(b)
	for _, q := range benchSQL {
		b.Run(q.name, func(b *testing.B) { benchRead(b, path, q.sql) })
	}
}

func benchRead(b *testing.B, path, query string) {
	ctx := context.Background()
	b.Run("exec", func(b *testing.B) {
		s, err := New(Config{
			Connections: []connections.Connection{{ID: "demo", Engine: contracts.EngineSQLite, Path: path}},
			Logger:      slog.New(slog.DiscardHandler),
		})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Stop(context.Background())
		req := contracts.ExecRequest{ConnectionID: "demo", Profile: contracts.ProfileAgentReadOnly, SQL: query, TimeoutMs: 10_000}
		b.ReportAllocs()
		for b.Loop() {
			if reply := s.Exec(ctx, contracts.OpRead, req); reply.Status != contracts.ExecOK {
				b.Fatalf("reply %+v", reply)
			}
		}
	})

	b.Run("database-sql", func(b *testing.B) {
		db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		b.ReportAllocs()
		for b.Loop() {
			rows, err := db.QueryContext(ctx, query)
			if err != nil {
				b.Fatal(err)
			}
			var (
				a, c any
				s    string
				n    int
			)
			for rows.Next() {
				if err := rows.Scan(&a, &s, &c); err != nil {
					b.Fatal(err)
				}
				n++
			}
			if err := rows.Close(); err != nil || n == 0 {
				b.Fatalf("%d rows, %v", n, err)
			}
		}
	})
}
