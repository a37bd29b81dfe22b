package executor

import (
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2" // the package-level driver, for the writable fixture
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/executor/connections"
)

// duckdbFixture writes a small DuckDB file and returns its path.
func duckdbFixture(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "shop.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		"CREATE TABLE orders (id INTEGER, status VARCHAR, total DECIMAL(10,2))",
		"INSERT INTO orders SELECT i, CASE WHEN i % 2 = 0 THEN 'paid' ELSE 'open' END, i * 1.5 FROM range(1, 301) t(i)",
		"CREATE TABLE events (id INTEGER, event_date DATE)",
		"INSERT INTO events SELECT i, DATE '2025-01-01' + (i % 30)::INTEGER FROM range(1, 101) t(i)",
		"CREATE TABLE secrets (token VARCHAR)",
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestDuckDBOverNATS(t *testing.T) {
	srv := natstest.Start(t)
	conn := connections.Connection{ID: "shop", Engine: contracts.EngineDuckDB, Path: duckdbFixture(t),
		Readable: []string{"main.orders", "main.events"}, LargeTables: map[string]string{"main.events": "event_date"}}
	s := newService(t, Config{Engine: contracts.EngineDuckDB, Connections: []connections.Connection{conn}, NATS: srv.Connect()})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	client := srv.Connect()
	request := func(op contracts.ExecOp, req contracts.ExecRequest) shownReply {
		t.Helper()
		payload, _ := json.Marshal(req)
		msg, err := client.RequestWithContext(ctx, contracts.ExecSubject(contracts.EngineDuckDB, op), payload)
		if err != nil {
			t.Fatalf("%s: %v", op, err)
		}
		var reply contracts.ExecReply
		if err := json.Unmarshal(msg.Data, &reply); err != nil {
			t.Fatalf("%s: %v in %s", op, err, msg.Data)
		}
		return shown(op, req, reply)
	}
	req := func(sql string) contracts.ExecRequest {
		return contracts.ExecRequest{RunID: "run-d", StepID: "s1", ConnectionID: "shop", Profile: contracts.ProfileAgentReadOnly, SQL: sql, TimeoutMs: 5000}
	}

	// A read: the rows, the artifact, the canonical text that ran.
	reply := request(contracts.OpRead, req("FROM orders SELECT status, count(*) AS n, sum(total) AS total GROUP BY ALL ORDER BY status;"))
	if reply.Status != contracts.ExecOK || reply.Artifact.Rows != 2 || !strings.Contains(reply.Text, "paid") {
		t.Fatalf("read: %+v", reply)
	}
	store, err := artifacts.New(ctx, srv.JetStream())
	if err != nil {
		t.Fatal(err)
	}
	art, err := store.Get(ctx, "run-d", reply.Artifact.CorrelationID)
	if err != nil {
		t.Fatal(err)
	}
	if art.SQL != "FROM orders SELECT status, count(*) AS n, sum(total) AS total GROUP BY ALL ORDER BY status" ||
		len(art.Data) != 2 || art.Data[0][0] != "open" || art.Data[0][2] != "33750.00" {
		t.Errorf("artifact %+v", art)
	}

	// Refusals: the guard's codes come back with reason and fix.
	for sql, code := range map[string]string{
		"SELECT * FROM query('SELECT * FROM secrets')": string(contracts.RefuseTableFunction),
		"SELECT * FROM secrets":                        string(contracts.RefuseTableNotReadable),
		"SELECT * FROM events":                         string(contracts.RefuseLargeTableUnbounded),
		"COPY orders TO '/tmp/x.csv'":                  string(contracts.RefuseNotASelect),
		"SELECT 1; DELETE FROM orders":                 string(contracts.RefuseNotOneStatement),
	} {
		r := request(contracts.OpRead, req(sql))
		if r.Status != contracts.ExecRefused || string(r.Refusal.Code) != code || r.Refusal.Fix == "" {
			t.Errorf("%q: %+v, want %s", sql, r, code)
		}
	}

	// Over the agent profile's row limit: refused, not truncated.
	r := request(contracts.OpRead, req("SELECT * FROM orders"))
	if r.Status != contracts.ExecRefused || r.Refusal.Code != contracts.RefuseResultTooLarge {
		t.Errorf("300 rows: %+v", r)
	}
	// A bounded large table reads.
	r = request(contracts.OpRead, req("SELECT count(*) FROM events WHERE event_date >= DATE '2025-01-15'"))
	if r.Status != contracts.ExecOK {
		t.Errorf("bounded read: %+v", r)
	}
	// Timeouts come back classified.
	slow := req("SELECT sum(a.range * b.range) FROM range(200000) a, range(200000) b")
	slow.TimeoutMs = 200
	r = request(contracts.OpRead, slow)
	if r.Status != contracts.ExecError || r.Error.Class != contracts.DBTimeout {
		t.Errorf("slow read: %+v", r)
	}

	// The schema read lists readable tables' columns only.
	schema := req("")
	schema.Table = "orders"
	r = request(contracts.OpSchema, schema)
	if r.Status != contracts.ExecOK || r.Artifact.Rows != 1 || !strings.Contains(r.Text, `"total" DECIMAL(10,2)`) {
		t.Errorf("schema: %+v", r)
	}
	schema.Table = "secrets"
	if r = request(contracts.OpSchema, schema); r.Status != contracts.ExecOK || r.Artifact.Rows != 0 {
		t.Errorf("schema of an unreadable table: %+v", r)
	}
}
