package cli

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// benchQuery is the statement every server runs: a primary-key read of the
// PostgreSQL fixture, so the figures compare the servers, not the database.
const benchQuery = "SELECT id, name FROM public.customers WHERE id = 3"

// BenchmarkMCPRunQueryStdio measures one tools/call of a read over stdio,
// side by side in one run: sonde mcp (this binary as `sonde mcp`: the
// gateway over HTTP, the guard, the executor over NATS, the artifact store),
// DBHub (@bytebase/dbhub) and the reference server
// (@modelcontextprotocol/server-postgres), each reading the same PostgreSQL
// database as the same least-privilege role, each driven by the Go SDK's
// client. Beside them, to show where Sonde's time goes: the same read as a
// plain API request (sonde-api-only) and over the gateway's /mcp
// (sonde-http). docs/benchmarks.md has the figures.
//
//	source /tmp/pgenv.sh   # or any SONDE_TEST_PG_URL
//	go test ./services/sonde/internal/cli -run '^$' -bench MCPRunQuery -count 5
func BenchmarkMCPRunQueryStdio(b *testing.B) {
	peers := npmDir(b, "mcp-peers")
	_, agent := pgCorpusDB(b)
	pol := postgrestest.Policy()
	s := stacktest.Start(b, stacktest.Options{NoOrchestrator: true, Connections: []connections.Connection{{
		ID: "pg", Engine: contracts.EnginePostgres, DSN: agent, Readable: pol.Readable, LargeTables: pol.LargeTables}}})
	waitConnection(b, s, "pg")
	node := func(pkg string, args ...string) func() *exec.Cmd {
		return func() *exec.Cmd {
			return exec.Command("node", append([]string{filepath.Join(peers, "node_modules", pkg, "dist", "index.js")}, args...)...)
		}
	}
	servers := []struct {
		name string
		cmd  func() *exec.Cmd
		tool string
		args map[string]any
	}{
		{"sonde", func() *exec.Cmd { return mcpStdioCommand(s.URL, "") }, "run_query", map[string]any{"connection_id": "pg", "sql": benchQuery}},
		{"sonde-http", nil, "run_query", map[string]any{"connection_id": "pg", "sql": benchQuery}},
		{"dbhub", node("@bytebase/dbhub", "--transport", "stdio", "--dsn", agent), "execute_sql", map[string]any{"sql": benchQuery}},
		{"server-postgres", node("@modelcontextprotocol/server-postgres", agent), "query", map[string]any{"sql": benchQuery}},
	}
	b.Logf("%s/%s, %d CPUs, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version())
	// Sonde's own figures beside the MCP path, to show where the time goes:
	// the same read as a plain API request, and over /mcp.
	b.Run("sonde-api-only", func(b *testing.B) {
		c := s.Client("")
		req := api.QueryRequest{ConnectionID: "pg", SQL: benchQuery}
		for range 5 {
			if _, err := c.Query(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for b.Loop() {
			if _, err := c.Query(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, sv := range servers {
		b.Run(sv.name, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			var tr mcp.Transport = &mcp.StreamableClientTransport{Endpoint: s.URL + api.PathMCP}
			if sv.cmd != nil {
				tr = &mcp.CommandTransport{Command: sv.cmd(), TerminateDuration: 2 * time.Second}
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "sonde-bench", Version: "1"}, nil).Connect(ctx, tr, nil)
			if err != nil {
				b.Fatalf("%s: connect: %v", sv.name, err)
			}
			defer cs.Close()
			call := func() {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: sv.tool, Arguments: sv.args})
				if err != nil {
					b.Fatalf("%s: %v", sv.name, err)
				}
				if res.IsError {
					b.Fatalf("%s: tool error %s", sv.name, resultText(res))
				}
			}
			for range 5 { // warm: connections opened, code paths compiled
				call()
			}
			b.ResetTimer()
			for b.Loop() {
				call()
			}
		})
	}
}
