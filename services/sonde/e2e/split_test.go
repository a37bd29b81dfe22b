package e2e

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/cli"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// childEnv makes this test binary act as the sonde binary, so a test can run
// real separate processes without building one.
const childEnv = "SONDE_E2E_AS_SONDE"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		os.Exit(cli.Main(os.Args[1:]))
	}
	os.Exit(m.Run())
}

// sonde starts this binary as `sonde args…` and stops it when the test ends.
func sonde(t *testing.T, env []string, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), append(env, childEnv+"=1")...)
	var logs bytes.Buffer
	cmd.Stderr, cmd.Stdout = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("sonde %s:\n%s", strings.Join(args, " "), logs.String())
		}
	})
	return cmd
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestServicesSplitAcrossTwoProcesses runs the executor and modelturn in one
// process and the gateway and orchestrator in another, sharing one external
// NATS server, and drives a run through them; then `sonde ask` in a third
// process follows a run and exits 0 because it answered.
func TestServicesSplitAcrossTwoProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	srv := natstest.Start(t)
	url := srv.ClientURL()
	sonde(t, []string{"LLM_PROVIDER=demo"}, "serve", "--nats", url, "--services", "executor-sqlite,modelturn", "--data-dir", t.TempDir())
	httpAddr := freeAddr(t)
	sonde(t, []string{"LLM_PROVIDER="}, "serve", "--nats", url, "--services", "gateway,orchestrator", "--http", httpAddr, "--data-dir", t.TempDir())

	base := "http://" + httpAddr
	c := client.New(base, "")
	ctx := context.Background()
	waitFor(t, func() bool {
		resp, err := http.Get(base + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return false
		}
		conns, err := c.Connections(ctx)
		return err == nil && slices.ContainsFunc(conns, func(d contracts.ConnectionDescriptor) bool { return d.ID == "demo" })
	})
	started := startRun(t, c, "Why did orders fall in March 2025?")
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	if rec.Status != contracts.StatusSucceeded || rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Fatalf("split run ended %s %+v: %v", rec.Status, rec.GoalVerdict, kinds(es))
	}

	// sonde ask, a third process, exits 0 with the report and its citations.
	ask := exec.Command(os.Args[0], "ask", "--server", base, "--connection", "demo", "Why did orders fall in March 2025?")
	ask.Env = append(os.Environ(), childEnv+"=1")
	out, err := ask.CombinedOutput()
	if err != nil {
		t.Fatalf("sonde ask: %v\n%s", err, out)
	}
	for _, want := range []string{"DEMONSTRATION", "-> turn 1", "budget: turns", "Report", "cites artifact r", "Verdict: answered (agent-investigation.2)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("sonde ask output lacks %q:\n%s", want, out)
		}
	}
	// An unknown connection is refused with a non-zero exit and the code.
	bad := exec.Command(os.Args[0], "ask", "--server", base, "--connection", "nope", "x")
	bad.Env = append(os.Environ(), childEnv+"=1")
	out, err = bad.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != cli.ExitRefused || !strings.Contains(string(out), string(contracts.CodeUnknownConnection)) {
		t.Fatalf("ask on an unknown connection: %v\n%s", err, out)
	}
}
