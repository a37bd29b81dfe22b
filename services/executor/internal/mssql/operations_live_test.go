package mssql

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// TestLiveOperations takes every reading from a server (skipped without
// one, like every live test): each answers the declared width, or — for a
// login without VIEW SERVER STATE or VIEW DATABASE STATE — fails as a
// permission error; the hidden table is never named; nothing changes.
func TestLiveOperations(t *testing.T) {
	db, dsn := live(t)
	ctx := context.Background()
	e, err := Open(ctx, Config{DSN: dsn, Readable: []string{"sonde_test.orders"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	before := checksum(t, db)
	for _, kind := range contracts.OperationsKinds {
		r, err := e.Operations(ctx, engine.Request{Profile: contracts.ProfileAgentOperations, Timeout: 10 * time.Second}, kind)
		var de *contracts.DBError
		if errors.As(err, &de) && de.Class == contracts.DBPermission {
			t.Logf("%s: the login may not read the DMVs: %s", kind, de.Message)
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		for _, row := range r.Rows {
			if len(row) != len(contracts.OperationsColumns[kind]) {
				t.Fatalf("%s: row %v", kind, row)
			}
		}
		b, _ := json.Marshal(r.Rows)
		if kind != contracts.OpsSessions && kind != contracts.OpsSlowQueries && strings.Contains(string(b), "events") {
			t.Errorf("%s names the hidden table: %s", kind, b)
		}
	}
	if after := checksum(t, db); after != before {
		t.Errorf("the table changed: %s -> %s", before, after)
	}
}
