package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// runIn executes the sonde command line args in process with stdin as its
// standard input, and returns its output and exit status.
func runIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := newQueryCmd()
	if args[0] == "sqlite" {
		cmd = newSQLiteCmd()
	}
	cmd.SetArgs(args[1:])
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	var ee *exitError
	switch {
	case err == nil:
		code = ExitOK
	case errors.As(err, &ee):
		code = ee.code
	default:
		code = ExitError
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// TestTheStatementIsNotInTheChildsArguments: the statement and its
// parameters reach the child that runs them on its standard input, never in
// its argument list, which every local user can read in /proc/PID/cmdline.
// Each command is caught while its child runs a long statement; the child
// is then killed.
func TestTheStatementIsNotInTheChildsArguments(t *testing.T) {
	if _, err := os.Stat("/proc/self/cmdline"); err != nil {
		t.Skip("reads the child's arguments through /proc")
	}
	db, conns := demoFiles(t)
	const (
		secret = "handoff-secret-7f3a"
		param  = "param-secret-91b2"
	)
	slow := "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000000000) " +
		"SELECT count(*) AS n, ? AS p, '" + secret + "' AS s FROM c"
	for name, args := range map[string][]string{
		"query":        {"query", "--connections", conns, "--connection", "shop", "--timeout-ms", "10000", "--params", `["` + param + `"]`, slow},
		"query stdin":  {"query", "--connections", conns, "--connection", "shop", "--timeout-ms", "10000", "--params", `["` + param + `"]`, "-"},
		"sqlite":       {"sqlite", db, "--timeout-ms", "10000", "--params", `["` + param + `"]`, slow},
		"sqlite stdin": {"sqlite", db, "--timeout-ms", "10000", "--params", `["` + param + `"]`, "-"},
	} {
		t.Run(name, func(t *testing.T) {
			done := make(chan int, 1)
			go func() {
				_, _, code := runIn(t, slow, args...)
				done <- code
			}()
			var pid int
			for deadline := time.Now().Add(20 * time.Second); pid == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				pid = inspectChild()
			}
			if pid == 0 {
				t.Fatal("no child process runs the statement")
			}
			cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
			if err != nil {
				t.Fatal(err)
			}
			_ = syscall.Kill(pid, syscall.SIGKILL)
			if code := <-done; code != ExitNoAnswer {
				t.Errorf("the killed child's command exited %d, want %d", code, ExitNoAnswer)
			}
			argv := strings.ReplaceAll(string(cmdline), "\x00", " ")
			if strings.Contains(argv, secret) || strings.Contains(argv, "RECURSIVE") || strings.Contains(argv, param) {
				t.Fatalf("the child's arguments hold the statement or its parameters: %s", argv)
			}
		})
	}
}

// TestANulByteIsRefusedClearly: a statement holding a NUL byte (from the
// standard input or a file; an argument cannot hold one) is refused as
// unparsable, saying so, by both commands, not failed as a process that
// could not start.
func TestANulByteIsRefusedClearly(t *testing.T) {
	db, conns := demoFiles(t)
	file := filepath.Join(t.TempDir(), "nul.sql")
	stmt := "select 1\x00; delete from orders"
	if err := os.WriteFile(file, []byte(stmt), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"query", "--connections", conns, "--connection", "shop"}
	for name, args := range map[string][]string{
		"query stdin":  append(base[:len(base):len(base)], "-"),
		"query file":   append(base[:len(base):len(base)], "--file", file),
		"sqlite stdin": {"sqlite", db, "-"},
	} {
		for _, jsonOut := range []bool{false, true} {
			a := args
			if jsonOut {
				a = append(a[:len(a):len(a)], "--json")
			}
			out, errOut, code := runIn(t, stmt, a...)
			if strings.Contains(out+errOut, "fork/exec") || strings.Contains(out+errOut, "invalid argument") {
				t.Fatalf("%s: the child could not start: %s%s", name, out, errOut)
			}
			if code != ExitRefused {
				t.Fatalf("%s: exit %d, want %d (refused)\n%s%s", name, code, ExitRefused, out, errOut)
			}
			if jsonOut {
				var eb api.ErrorBody
				err := json.Unmarshal([]byte(out), &eb)
				if r := eb.Error; err != nil || r.Code != contracts.RefuseUnparsable || !strings.Contains(r.Message, "NUL") || r.Fix == "" {
					t.Fatalf("%s: %s, want an unparsable refusal naming the NUL byte", name, out)
				}
			} else if !strings.Contains(errOut, "refused (unparsable)") || !strings.Contains(errOut, "NUL") {
				t.Fatalf("%s: %q, want an unparsable refusal naming the NUL byte", name, errOut)
			}
		}
	}
}

// The hand-off carries any bytes at all, and a broken one is an error.
func TestHandoffCarriesAnyBytes(t *testing.T) {
	for _, h := range []handoff{
		{sql: "select 1"},
		{sql: "select ?\x00\xff\n\n", params: "[\"a\\nb\", 1]\n"},
		{sql: "", params: "[]"},
		{sql: "12\nselect 1", params: ""},
	} {
		var b bytes.Buffer
		if err := h.writeTo(&b); err != nil {
			t.Fatal(err)
		}
		got, err := readHandoff(&b)
		if err != nil || got != h {
			t.Fatalf("%q: read back %q, %v", h, got, err)
		}
	}
	for _, bad := range []string{"", "select 1", "9\n[]", "-1\nselect 1", "x\nselect 1"} {
		if _, err := readHandoff(strings.NewReader(bad)); err == nil {
			t.Errorf("%q: read as a hand-off", bad)
		}
	}
}
