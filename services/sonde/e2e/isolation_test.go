package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/modelturn"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// serveLog follows a `sonde serve` process's JSON log (its executor
// children write to the same stream) and picks out the executor children's
// process ids as the supervisor logs them.
type serveLog struct {
	mu    sync.Mutex
	lines []string
	pids  []int
	ready chan int // each child pid once it reports ready
}

func (l *serveLog) follow(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var rec struct {
			Msg   string `json:"msg"`
			Child string `json:"child"`
			PID   int    `json:"pid"`
		}
		_ = json.Unmarshal([]byte(line), &rec)
		l.mu.Lock()
		l.lines = append(l.lines, line)
		if rec.Child == "executor-sqlite" && rec.Msg == "child started" {
			l.pids = append(l.pids, rec.PID)
		}
		l.mu.Unlock()
		if rec.Child == "executor-sqlite" && rec.Msg == "child ready" {
			l.ready <- rec.PID
		}
	}
}

func (l *serveLog) text() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func (l *serveLog) children() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]int(nil), l.pids...)
}

// readyz answers /readyz's status and body.
func readyz(base string) (int, string) {
	resp, err := http.Get(base + "/readyz")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func running(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", itoa(pid), "stat"))
	if err != nil {
		return false
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestAnExecutorCrashLeavesServeStanding runs the all-in-one `sonde serve`
// (embedded NATS, every service, the SQLite executor in its supervised child
// process) and kills the executor child with SIGSEGV in the middle of a
// statement, twice: during a run's read and during a member's POST
// /api/query. The gateway, NATS and the orchestrator stay up; /readyz says
// the executor is missing until the restarted child serves; the run's step is
// recorded indeterminate and the run ends; the query is answered with an
// error rather than a dropped connection; the new child serves the next
// query; and no child outlives the server.
func TestAnExecutorCrashLeavesServeStanding(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	// Runs until its 10 s statement timeout unless the executor dies first.
	const slow = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT count(*) AS n FROM c"
	asked := make(chan struct{})
	var once sync.Once
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if req.AssistantTurns() == 0 {
			once.Do(func() { close(asked) })
			return readCall("a", slow), nil
		}
		return modeltest.Reply{Text: "nothing to report"}, nil
	})
	model, err := modeltest.NewOpenAI(modelturn.ProbeAware(script))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = model.Close() })

	httpAddr := freeAddr(t)
	base := "http://" + httpAddr
	cmd := exec.Command(os.Args[0], "serve", "--data-dir", t.TempDir(), "--http", httpAddr)
	cmd.Env = append(os.Environ(), childEnv+"=1", "LLM_PROVIDER=openai", "LLM_MODEL=scripted",
		"LLM_API_KEY=test-key", "LLM_API_URL="+model.URL())
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	logs := &serveLog{ready: make(chan int, 16)}
	followed := make(chan struct{})
	go func() { logs.follow(pr); close(followed) }()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
			t.Error("sonde serve did not stop within 20s of SIGINT")
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() || testing.Verbose() {
			t.Logf("sonde serve log:\n%s", logs.text())
		}
	})

	nextReady := func(after int) int {
		t.Helper()
		for {
			select {
			case pid := <-logs.ready:
				if pid != after {
					return pid
				}
			case <-time.After(60 * time.Second):
				t.Fatal("no executor child became ready")
			}
		}
	}
	first := nextReady(0)
	waitFor(t, func() bool { code, _ := readyz(base); return code == http.StatusOK })
	c := client.New(base, "")
	ctx := context.Background()
	if _, err := c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "select count(*) as n from orders"}); err != nil {
		t.Fatalf("query before any crash: %v", err)
	}

	// 1. SIGSEGV in the middle of a run's statement.
	started := startRun(t, c, "anything")
	select {
	case <-asked:
	case <-time.After(30 * time.Second):
		t.Fatal("the model was never asked")
	}
	// The step is recorded invoked before the statement is sent; a second
	// later it runs in the executor.
	waitFor(t, func() bool {
		rec, err := c.Run(ctx, started.RunID)
		return err == nil && len(rec.Steps) > 0 && rec.Steps[0].Status == contracts.StepInvoked
	})
	time.Sleep(time.Second)
	if err := syscall.Kill(first, syscall.SIGSEGV); err != nil {
		t.Fatal(err)
	}
	sawUnready := false
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline) && !sawUnready; time.Sleep(10 * time.Millisecond) {
		code, body := readyz(base)
		sawUnready = code == http.StatusServiceUnavailable && strings.Contains(body, "executor-sqlite")
	}
	if !sawUnready {
		t.Error("/readyz never said the executor was missing")
	}
	if resp, err := http.Get(base + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("the gateway went down with the executor: %v", err)
	}
	if _, err := c.Connections(ctx); err != nil {
		t.Fatalf("NATS went down with the executor: %v", err)
	}
	second := nextReady(first)
	if running(first) {
		t.Fatalf("the crashed child %d still runs", first)
	}
	waitFor(t, func() bool { code, _ := readyz(base); return code == http.StatusOK })

	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	if len(rec.Steps) == 0 || rec.Steps[0].Status != contracts.StepIndeterminate || !rec.Status.Terminal() {
		t.Fatalf("run %s, steps %+v: %v", rec.Status, rec.Steps, kinds(es))
	}

	// 2. SIGSEGV in the middle of a member's query: the gateway answers.
	type result struct {
		err  error
		took time.Duration
	}
	done := make(chan result, 1)
	go func() {
		begin := time.Now()
		_, err := c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: slow, TimeoutMs: 4000})
		done <- result{err, time.Since(begin)}
	}()
	time.Sleep(1500 * time.Millisecond)
	if err := syscall.Kill(second, syscall.SIGSEGV); err != nil {
		t.Fatal(err)
	}
	r := <-done
	var ae *client.APIError
	if !errors.As(r.err, &ae) || ae.Status < 500 {
		t.Fatalf("query whose executor crashed: %v after %s", r.err, r.took)
	}
	third := nextReady(second)
	waitFor(t, func() bool { code, _ := readyz(base); return code == http.StatusOK })
	res, err := c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "select count(*) as n from orders"})
	if err != nil || res.RowCount != 1 {
		t.Fatalf("the restarted executor does not serve: %+v %v", res, err)
	}

	l := logs.text()
	for _, want := range []string{`"msg":"child exited; restarting it"`, "exit status 2, a crash", "SIGSEGV"} {
		if !strings.Contains(l, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	// The children's NATS password is in neither their command line nor the log.
	if strings.Contains(l, "SONDE_NATS_PASSWORD") {
		t.Error("the log shows the NATS password variable")
	}
	if b, err := os.ReadFile(filepath.Join("/proc", itoa(third), "cmdline")); err == nil && strings.Contains(string(b), "password") {
		t.Errorf("an executor child's command line carries a password: %q", b)
	}

	stop()
	select {
	case <-followed: // every writer of the log, children included, is gone
	case <-time.After(10 * time.Second):
	}
	for _, pid := range logs.children() {
		if running(pid) {
			t.Errorf("executor child %d outlived sonde serve", pid)
		}
	}
}
