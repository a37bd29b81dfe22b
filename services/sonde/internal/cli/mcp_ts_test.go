package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// npmDir installs the npm packages testdata/<name>/package.json pins, once
// per machine, in a cache directory keyed by that file, copies the other
// files of testdata/<name> beside them, and returns the directory. Without
// node and npm, or without the registry, the test skips with the reason,
// and fails under CI=true.
func npmDir(t testing.TB, name string) string {
	t.Helper()
	unavailable := func(format string, args ...any) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatalf(format, args...)
		}
		t.Skipf(format+" (the test fails instead under CI=true)", args...)
	}
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			unavailable("%s needs %s on PATH: %v", name, tool, err)
		}
	}
	src := filepath.Join("testdata", name)
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(pkg)
	dir := filepath.Join(os.TempDir(), "sonde-"+name+"-"+hex.EncodeToString(sum[:6]))
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".package-lock.json")); err != nil {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "package.json"), pkg, 0o644); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "npm", "install", "--no-audit", "--no-fund", "--loglevel=error")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			unavailable("npm install in %s (for %s): %v\n%s", dir, name, err, out)
		}
	}
	files, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.IsDir() || f.Name() == "package.json" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(src, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// tsRun is what client.mjs prints.
type tsRun struct {
	Server struct{ Name, Version string }
	Tools  []string
	Calls  map[string]struct {
		IsError    bool            `json:"isError"`
		Structured json.RawMessage `json:"structured"`
		Text       string
	}
	Hostile []struct {
		SQL     string
		IsError bool `json:"isError"`
		Code    string
	}
}

// TestMCPWithTheTypeScriptClient drives both transports with the official
// TypeScript SDK's client from npm, the client most MCP hosts embed: the
// tools, a guarded read, a refusal and a bad argument as tool errors with
// codes, a whole demo investigation handed over and read back, and SQLite's
// hostile shapes refused, the database unchanged.
func TestMCPWithTheTypeScriptClient(t *testing.T) {
	dir := npmDir(t, "mcp-ts-client")
	s := stacktest.Start(t, stacktest.Options{Tokens: map[string]contracts.Actor{mcpToken: {ID: "mcp-user", Role: contracts.RoleMember}}})
	before := fileSum(t, s.DBPath)
	stmts, err := json.Marshal(sqliteHostile)
	if err != nil {
		t.Fatal(err)
	}
	stmtFile := filepath.Join(t.TempDir(), "statements.json")
	if err := os.WriteFile(stmtFile, stmts, 0o644); err != nil {
		t.Fatal(err)
	}
	child := mcpStdioCommand(s.URL, mcpToken)
	env := map[string]string{}
	for _, kv := range child.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	spec, _ := json.Marshal(map[string]any{"command": child.Path, "args": child.Args[1:], "env": env})
	modes := map[string][]string{
		"stdio": {"stdio", string(spec), stmtFile},
		"http":  {"http", s.URL + "/mcp", mcpToken, stmtFile},
	}
	for name, args := range modes {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "node", append([]string{"client.mjs"}, args...)...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("node client.mjs %s: %v\nstderr:\n%s", name, err, stderr.String())
			}
			var r tsRun
			if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
				t.Fatalf("client output %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
			}
			if r.Server.Name != "sonde" || len(r.Tools) != 7 || !slices.Contains(r.Tools, "run_query") {
				t.Fatalf("server %+v, tools %v", r.Server, r.Tools)
			}
			ok := func(call string) json.RawMessage {
				t.Helper()
				c, found := r.Calls[call]
				if !found || c.IsError {
					t.Fatalf("%s: %+v", call, c)
				}
				return c.Structured
			}
			refused := func(call, code string) {
				t.Helper()
				c := r.Calls[call]
				var e toolErr
				_ = json.Unmarshal(c.Structured, &e)
				if !c.IsError || e.Error.Code != contracts.Code(code) || e.Error.Fix == "" || !strings.Contains(c.Text, code) {
					t.Fatalf("%s: %+v, want a tool error %s with a fix", call, c, code)
				}
			}
			var conns struct {
				Connections []contracts.ConnectionDescriptor
			}
			_ = json.Unmarshal(ok("list_connections"), &conns)
			if len(conns.Connections) == 0 || conns.Connections[0].ID != "demo" {
				t.Fatalf("connections %+v", conns)
			}
			var q struct {
				Rows        [][]any  `json:"rows"`
				TruncatedBy []string `json:"truncated_by"`
			}
			_ = json.Unmarshal(ok("run_query"), &q)
			if len(q.Rows) != 2 || !slices.Equal(q.TruncatedBy, []string{"rows"}) {
				t.Fatalf("run_query: %+v", q)
			}
			refused("refused", string(contracts.RefuseNotASelect))
			refused("bad_args", "invalid_arguments")
			ok("start_investigation")
			var run struct {
				Finished bool `json:"finished"`
				Status   contracts.RunStatus
				Report   []struct{ Citations []struct{ SQL string } }
			}
			_ = json.Unmarshal(ok("get_run"), &run)
			if !run.Finished || run.Status != contracts.StatusSucceeded || len(run.Report) == 0 {
				t.Fatalf("get_run: %s", r.Calls["get_run"].Structured)
			}
			if len(r.Hostile) != len(sqliteHostile) {
				t.Fatalf("%d hostile answers for %d statements", len(r.Hostile), len(sqliteHostile))
			}
			for _, h := range r.Hostile {
				if !h.IsError || h.Code == "" {
					t.Errorf("hostile %q: %+v, want a tool error with a code", h.SQL, h)
				}
			}
		})
	}
	if fileSum(t, s.DBPath) != before {
		t.Fatal("the demo database changed")
	}
}
