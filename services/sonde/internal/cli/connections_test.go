package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// TestConnectionsList: sonde connections shows every published connection
// with its status, why one is unavailable, and its warnings.
func TestConnectionsList(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// A second connection of the running (SQLite) executor: its database
	// down, its role too strong. (A connection whose executor is gone makes
	// /readyz answer 503 instead: services/gateway ready_test.go.)
	kv, err := s.NATS.JetStream().KeyValue(ctx, contracts.ConnectionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	down := contracts.ConnectionDescriptor{ID: "warehouse", Engine: contracts.EngineSQLite, Description: "Sales warehouse",
		Identity: "x", Status: contracts.ConnectionUnavailable,
		Reason:   "the database server refused the connection (nothing listens at its address)",
		Warnings: []string{"the role that runs reads can write: it is a superuser"}}
	data, _ := json.Marshal(down)
	if _, err := kv.Put(ctx, down.ID, data); err != nil {
		t.Fatal(err)
	}

	o := runsOptions{server: s.URL}
	var out bytes.Buffer
	if err := connectionsList(ctx, &out, o); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, "connections", out.String(),
		"ID", "ENGINE", "STATUS", "demo", "sqlite", "available",
		"warehouse", "sqlite", "unavailable", "Sales warehouse",
		"warehouse is unavailable: the database server refused the connection",
		"warning: warehouse: the role that runs reads can write: it is a superuser")

	out.Reset()
	o.jsonOut = true
	if err := connectionsList(ctx, &out, o); err != nil {
		t.Fatal(err)
	}
	var list api.Connections
	if err := json.Unmarshal(out.Bytes(), &list); err != nil {
		t.Fatalf("%v in %s", err, out.String())
	}
	if len(list.Connections) != 2 || list.Connections[0].ID != "demo" || list.Connections[0].Status != contracts.ConnectionAvailable ||
		list.Connections[1].Reason != down.Reason || len(list.Connections[1].Warnings) != 1 {
		t.Fatalf("json: %+v", list)
	}

	// /readyz stays ready and names the unavailable connection.
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+api.PathReady, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var health api.Health
	if err := json.NewDecoder(resp.Body).Decode(&health); err != nil || resp.StatusCode != http.StatusOK ||
		len(health.Detail) != 1 || !strings.Contains(health.Detail[0], "warehouse (sqlite) is unavailable: the database server refused") {
		t.Fatalf("readyz: %d %+v %v", resp.StatusCode, health, err)
	}
}
