package stacktest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

var record = flag.Bool("record", false, "record the demo run's ledger for pkg/ledger's recorded-ledger fixtures")

// TestRecordDemoLedger records, with -record, the ledger of one demo
// investigation driven through every service, as pkg/ledger's recording
// demo-investigation of the current contract version. An existing recording
// is never rewritten: the recordings of a version are frozen, and later
// code must fold them (pkg/ledger TestRecordedLedgersFold).
//
//	go test ./services/sonde/internal/stacktest -run TestRecordDemoLedger -args -record
func TestRecordDemoLedger(t *testing.T) {
	if !*record {
		t.Skip("records only with -record")
	}
	file := filepath.Join("..", "..", "..", "..", "pkg", "ledger", "testdata", "ledgers",
		"v"+strconv.Itoa(contracts.Version), "demo-investigation.jsonl")
	if _, err := os.Stat(file); err == nil {
		t.Skipf("%s exists: recordings are never rewritten", file)
	}
	s := stacktest.Start(t, stacktest.Options{})
	c := s.Client("")
	started, err := c.StartRun(context.Background(), api.StartRunRequest{Objective: "Why did orders fall in March 2025?", ConnectionID: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	entries := stacktest.Follow(t, c, started.RunID)
	var b bytes.Buffer
	for _, e := range entries {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d entries)", file, len(entries))
}
