package supervise

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// childMode makes this test binary act as a supervised child (or, for
// "parent", as a parent that supervises one).
const childMode = "SUPERVISE_TEST_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(childMode) {
	case "":
		os.Exit(m.Run())
	case "serve": // ready, then serve until SIGTERM or the parent goes
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
		defer stop()
		ctx, cancel := ParentContext(ctx)
		defer cancel()
		if err := ReportReady(); err != nil {
			os.Exit(5)
		}
		<-ctx.Done()
		os.Exit(0)
	case "fail": // a configuration error: exits before it is ready
		fmt.Fprintln(os.Stderr, "bad configuration")
		os.Exit(3)
	case "stubborn": // ready, and ignores SIGTERM
		signal.Ignore(syscall.SIGTERM)
		_ = ReportReady()
		time.Sleep(time.Hour)
	case "parent": // supervises a "serve" child, prints its pid, waits to be killed
		p := Start(slog.New(slog.DiscardHandler), Spec{Name: "grandchild", Path: os.Args[0],
			Env: append(os.Environ(), childMode+"=serve")})
		if err := p.WaitReady(context.Background()); err != nil {
			os.Exit(6)
		}
		fmt.Println(p.PID())
		time.Sleep(time.Hour)
	}
	os.Exit(7)
}

// logBuffer is a goroutine-safe log sink.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func spec(mode string) Spec {
	return Spec{Name: "test-" + mode, Path: os.Args[0], Env: append(os.Environ(), childMode+"="+mode), Stderr: &logBuffer{},
		MinBackoff: 50 * time.Millisecond, Grace: 2 * time.Second}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie waiting for its reaper does not).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return syscall.Kill(pid, 0) == nil && !os.IsNotExist(err)
	}
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestACrashedChildIsRestarted: a child killed by SIGSEGV is logged with how
// it ended, reported not ready, and started again; Stop ends it.
func TestACrashedChildIsRestarted(t *testing.T) {
	var logs logBuffer
	p := Start(slog.New(slog.NewJSONHandler(&logs, nil)), spec("serve"))
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	first := p.PID()
	if p.Ready() != nil || first == 0 {
		t.Fatalf("ready %v, pid %d", p.Ready(), first)
	}
	if err := syscall.Kill(first, syscall.SIGSEGV); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "a new child is ready", func() bool { return p.PID() != first && p.PID() != 0 && p.Ready() == nil })
	if alive(first) {
		t.Fatalf("the crashed child %d still runs", first)
	}
	if l := logs.String(); !strings.Contains(l, "child exited; restarting it") || !strings.Contains(l, "exit status 2, a crash") {
		t.Fatalf("the crash is not logged:\n%s", l)
	}
	second := p.PID()
	p.Stop()
	if alive(second) {
		t.Fatalf("child %d outlived Stop", second)
	}
	if err := p.Ready(); err == nil || !strings.Contains(err.Error(), "stopped") {
		t.Fatalf("after Stop: %v", err)
	}
}

// TestAChildThatFailsAtStartFailsWaitReady: the first child exiting before
// it is ready is an error (with its exit status) rather than a retry loop
// the operator never hears of.
func TestAChildThatFailsAtStartFailsWaitReady(t *testing.T) {
	var out logBuffer
	s := spec("fail")
	s.Stderr = &out
	p := Start(slog.New(slog.DiscardHandler), s)
	defer p.Stop()
	err := p.WaitReady(t.Context())
	if err == nil || !strings.Contains(err.Error(), "exited before it was ready: exit status 3") {
		t.Fatalf("WaitReady = %v", err)
	}
	if !strings.Contains(out.String(), "bad configuration") {
		t.Fatalf("the child's stderr did not come through: %q", out.String())
	}
}

// TestStopKillsAChildThatIgnoresSIGTERM after the grace period.
func TestStopKillsAChildThatIgnoresSIGTERM(t *testing.T) {
	s := spec("stubborn")
	s.Grace = 300 * time.Millisecond
	p := Start(slog.New(slog.DiscardHandler), s)
	if err := p.WaitReady(t.Context()); err != nil {
		t.Fatal(err)
	}
	pid := p.PID()
	begin := time.Now()
	p.Stop()
	if took := time.Since(begin); took < s.Grace || took > 5*time.Second {
		t.Fatalf("Stop took %s", took)
	}
	if alive(pid) {
		t.Fatalf("child %d outlived Stop", pid)
	}
}

// TestAChildEndsWithItsParent: SIGKILL to the supervising parent leaves no
// child running.
func TestAChildEndsWithItsParent(t *testing.T) {
	parent := exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), childMode+"=parent")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = parent.Process.Kill(); _ = parent.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || !alive(child) {
		t.Fatalf("child pid %q: %v", line, err)
	}
	if err := parent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	waitUntil(t, fmt.Sprintf("child %d ends with its parent", child), func() bool { return !alive(child) })
}
