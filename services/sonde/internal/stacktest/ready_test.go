package stacktest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// readyz asks the stack's gateway whether it is ready: the status and, when
// not, the reason.
func readyz(t *testing.T, s *stacktest.Stack) (int, string) {
	t.Helper()
	resp, err := http.Get(s.URL + api.PathReady)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body api.ErrorBody
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Error.Message
}

// TestReadyFollowsTheExecutorAndTheOrchestrator: with every service of a
// real stack up, /readyz is 200; with the SQLite executor of the demo
// connection stopped it is 503 naming the engine and the connection, and
// ready again once an executor is back; with the orchestrator stopped it is
// 503 saying so.
func TestReadyFollowsTheExecutorAndTheOrchestrator(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	if status, why := readyz(t, s); status != http.StatusOK {
		t.Fatalf("whole stack: %d %s", status, why)
	}

	if err := s.Executor.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	status, why := readyz(t, s)
	if status != http.StatusServiceUnavailable || !strings.Contains(why, "no executor-sqlite is running (connections demo)") {
		t.Fatalf("executor stopped: %d %q", status, why)
	}
	s.StartExecutor(t, s.NATS.Connect())
	if status, why := readyz(t, s); status != http.StatusOK {
		t.Fatalf("executor back: %d %s", status, why)
	}

	_ = s.Orch.Stop(context.Background())
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, why = readyz(t, s)
		if status == http.StatusServiceUnavailable && strings.Contains(why, "no orchestrator") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orchestrator stopped: %d %q", status, why)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
