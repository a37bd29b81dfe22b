package cli

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondehq/sonde/services/executor/demodb"
)

// inspectChild finds the child process that runs a statement for this
// process, by its environment.
func inspectChild() int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		s := string(stat)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 2 || f[1] != strconv.Itoa(os.Getpid()) {
			continue
		}
		env, _ := os.ReadFile(filepath.Join("/proc", d.Name(), "environ"))
		if bytes.Contains(env, []byte(inspectChildEnv+"=1")) {
			return pid
		}
	}
	return 0
}

// TestInspectCrashIsNotARefusal: the statement of sonde sqlite (and sonde
// query) runs in a child process; when that process dies (here SIGSEGV in the
// middle of a statement, as a crash in the SQL parser or the driver would),
// the command says so and exits 3, not 2 (a refusal), which is also the
// status Go's runtime exits with after a fatal signal.
func TestInspectCrashIsNotARefusal(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("finds the child through /proc")
	}
	db := filepath.Join(t.TempDir(), "shop.db")
	if err := demodb.Ensure(db); err != nil {
		t.Fatal(err)
	}
	cmd := newSQLiteCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs([]string{db, "--timeout-ms", "10000",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) SELECT count(*) AS n FROM c"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(context.Background()) }()
	var pid int
	for deadline := time.Now().Add(10 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		pid = inspectChild()
	}
	if pid == 0 {
		t.Fatal("no child process runs the statement")
	}
	time.Sleep(500 * time.Millisecond) // inside the statement
	if err := syscall.Kill(pid, syscall.SIGSEGV); err != nil {
		t.Fatal(err)
	}
	err := <-done
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitNoAnswer || ee.err == nil || !strings.Contains(ee.err.Error(), "the process that ran the statement died") {
		t.Fatalf("got %v, want exit %d saying the process died\nstderr: %s", err, ExitNoAnswer, errOut.String())
	}
	// The runtime's first line is kept; its dump of every goroutine, which
	// would bury the sentence, is not.
	if strings.Contains(errOut.String(), "goroutine ") || !strings.Contains(errOut.String(), "SIGSEGV") {
		t.Errorf("the crash printed a goroutine dump:\n%s", errOut.String())
	}

	// Through the child, the statuses the command chooses are unchanged.
	if _, _, code := run(t, "sqlite", db, "select count(*) from orders"); code != ExitOK {
		t.Errorf("a read: exit %d", code)
	}
	if _, _, code := run(t, "sqlite", db, "delete from orders"); code != ExitRefused {
		t.Errorf("a refusal: exit %d", code)
	}
	if _, _, code := run(t, "sqlite", db, "select nope from orders"); code != ExitError {
		t.Errorf("a database error: exit %d", code)
	}
}

// TestServeNamesAnUnwritableDataDir: a data directory serve cannot write
// stops it at once (not after the NATS readiness wait) with the directory and
// the cause. Permission bits do not stop root, so the cases that must hold as
// root are a file where a directory is expected and a read-only file system.
func TestServeNamesAnUnwritableDataDir(t *testing.T) {
	file := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	natsIsFile := t.TempDir()
	if err := os.WriteFile(filepath.Join(natsIsFile, "nats"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	type tc struct{ dir, want string }
	cases := []tc{
		{file, file + " is a file, not a directory"},
		{filepath.Join(file, "sub"), "cannot be created"},
		{natsIsFile, filepath.Join(natsIsFile, "nats")},
	}
	if f, err := os.CreateTemp("/proc/sys", "probe-*"); err == nil {
		f.Close()
		os.Remove(f.Name())
	} else {
		cases = append(cases, tc{"/proc/sys", "/proc/sys is not writable"}) // read-only even for root
	}
	if os.Geteuid() != 0 {
		ro := t.TempDir()
		if err := os.Chmod(ro, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Chmod(ro, 0o700) })
		cases = append(cases, tc{ro, ro + " is not writable"})
	}
	for _, c := range cases {
		cmd := newServeCmd()
		cmd.SetArgs([]string{"--data-dir", c.dir, "--http", "127.0.0.1:0", "--log-level", "error"})
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		begin := time.Now()
		err := cmd.ExecuteContext(context.Background())
		if err == nil || !strings.Contains(err.Error(), "--data-dir") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("--data-dir %s: %v, want an error with %q", c.dir, err, c.want)
		}
		if took := time.Since(begin); took > 5*time.Second {
			t.Errorf("--data-dir %s: took %s to fail", c.dir, took)
		}
	}
}

// TestExecutorChildGetsNoSecretOnItsCommandLine: an executor child's command
// line names its NATS user and carries serve's other flags; its password is
// in its environment only, and the model's key and the gateway's tokens are
// not there.
func TestExecutorChildGetsNoSecretOnItsCommandLine(t *testing.T) {
	t.Setenv("LLM_API_KEY", "sk-model-secret")
	t.Setenv("SONDE_API_TOKENS", "tok=ann:admin")
	t.Setenv("SONDE_HTTP", "0.0.0.0:9999")
	cmd := newServeCmd()
	if err := cmd.ParseFlags([]string{"--data-dir", "/srv/sonde", "--log-level", "debug", "--no-demo"}); err != nil {
		t.Fatal(err)
	}
	cn := childNATS{url: "nats://127.0.0.1:4222", user: "executor", password: "child-secret-pw"}
	args := strings.Join(childArgs(cmd.Flags(), "executor-duckdb", cn), " ")
	for _, want := range []string{"serve --supervised --executors=in-process --services=executor-duckdb --nats=nats://127.0.0.1:4222 --nats-user=executor",
		"--data-dir=/srv/sonde", "--log-level=debug", "--no-demo=true"} {
		if !strings.Contains(args, want) {
			t.Errorf("child args lack %q: %s", want, args)
		}
	}
	if strings.Contains(args, "child-secret-pw") || strings.Contains(args, "--http") || strings.Contains(args, "--nats-password") {
		t.Errorf("child args: %s", args)
	}
	env := strings.Join(childEnviron(cmd.Flags(), cn.password), "\n")
	if !strings.Contains(env, "SONDE_NATS_PASSWORD=child-secret-pw") {
		t.Error("the child's environment lacks its NATS password")
	}
	for _, bad := range []string{"sk-model-secret", "tok=ann", "SONDE_HTTP"} {
		if strings.Contains(env, bad) {
			t.Errorf("the child's environment holds %q", bad)
		}
	}
}
