package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/demodb"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
)

// TestServeStartsWithADatabaseDown: the all-in-one server starts although a
// PostgreSQL connection points at a closed port and a SQLite file does not
// exist yet. Both are published unavailable with the reason (GET
// /api/connections, /readyz detail, which stays ready), a read on one is
// refused connection_unavailable, the demo serves, and when the file
// appears its connection becomes available without a restart.
func TestServeStartsWithADatabaseDown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	later := filepath.Join(dir, "later.sqlite")
	file := filepath.Join(dir, "connections.yaml")
	yaml := fmt.Sprintf(`connections:
  - id: down
    engine: postgres
    dsn: postgres://reader:pw@%s/shop?sslmode=disable
  - id: later
    engine: sqlite
    path: %s
`, closed, later)
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	httpAddr := freeAddr(t)
	sonde(t, []string{"LLM_PROVIDER=demo"}, "serve", "--http", httpAddr, "--data-dir", filepath.Join(dir, "data"), "--connections", file)

	base := "http://" + httpAddr
	c := client.New(base, "")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	byID := func() map[string]contracts.ConnectionDescriptor {
		conns, err := c.Connections(ctx)
		if err != nil {
			return nil
		}
		out := map[string]contracts.ConnectionDescriptor{}
		for _, d := range conns {
			out[d.ID] = d
		}
		return out
	}
	waitFor(t, func() bool { return len(byID()) == 3 })
	conns := byID()
	if d := conns["down"]; d.Status != contracts.ConnectionUnavailable || !strings.Contains(d.Reason, "refused the connection") ||
		strings.Contains(d.Reason, closed) {
		t.Errorf("down: %+v", d)
	}
	if d := conns["later"]; d.Status != contracts.ConnectionUnavailable || d.Reason != "the database file does not exist" {
		t.Errorf("later: %+v", d)
	}
	if d := conns["demo"]; d.Status != contracts.ConnectionAvailable {
		t.Errorf("demo: %+v", d)
	}

	resp, err := http.Get(base + api.PathReady)
	if err != nil {
		t.Fatal(err)
	}
	var health api.Health
	err = json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || len(health.Detail) != 2 ||
		!strings.Contains(strings.Join(health.Detail, "\n"), "connection down (postgres) is unavailable") {
		t.Errorf("readyz: %d %+v %v", resp.StatusCode, health, err)
	}

	_, err = c.Query(ctx, api.QueryRequest{ConnectionID: "down", SQL: "SELECT 1"})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Code != contracts.RefuseConnectionUnavailable || apiErr.Status != http.StatusServiceUnavailable {
		t.Errorf("read on the unavailable connection: %v", err)
	}
	if res, err := c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "SELECT count(*) AS n FROM orders"}); err != nil || res.RowCount != 1 {
		t.Errorf("read on demo: %+v %v", res, err)
	}
	// A run cannot start where nothing could be read: refused with the
	// reason, retryable, and no run is created.
	_, err = c.StartRun(ctx, api.StartRunRequest{Objective: "why?", ConnectionID: "down"})
	if !errors.As(err, &apiErr) || apiErr.Code != contracts.RefuseConnectionUnavailable || apiErr.Status != http.StatusServiceUnavailable ||
		!strings.Contains(apiErr.Message, "refused the connection") {
		t.Errorf("run start on the unavailable connection: %v", err)
	}

	// The file appears: the executor opens it on its next attempt.
	if err := demodb.Ensure(later); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(40 * time.Second)
	for byID()["later"].Status != contracts.ConnectionAvailable {
		if time.Now().After(deadline) {
			t.Fatalf("later still %+v", byID()["later"])
		}
		time.Sleep(200 * time.Millisecond)
	}
	if res, err := c.Query(ctx, api.QueryRequest{ConnectionID: "later", SQL: "SELECT count(*) AS n FROM orders"}); err != nil || res.RowCount != 1 {
		t.Errorf("read once the file appeared: %+v %v", res, err)
	}
}
