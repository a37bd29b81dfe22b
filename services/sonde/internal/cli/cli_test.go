package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// sonde runs the whole command tree in process, with stdin as its input,
// and returns its output, error stream and exit status as Main would.
func sonde(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err := root.ExecuteContext(context.Background())
	var ee *exitError
	switch {
	case err == nil:
		code = ExitOK
	case errors.As(err, &ee):
		code = ee.code
		if ee.err != nil {
			errOut.WriteString(ee.err.Error())
		}
	default:
		code = ExitError
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

func TestUsageErrorsExitTwo(t *testing.T) {
	for _, args := range [][]string{
		{"bogus"},
		{"runs", "show"},
		{"runs", "list", "--no-such-flag"},
		{"tables"},
		{"describe", "demo"},
		{"explain"},
		{"runs", "artifact", "r1"},
		{"version", "extra"},
		{"ask", "--server", "http://127.0.0.1:1", "--workflow", "nope", "x"},
	} {
		_, errOut, code := sonde(t, "", args...)
		if code != ExitRefused || errOut == "" {
			t.Errorf("sonde %s: exit %d, want %d\n%s", strings.Join(args, " "), code, ExitRefused, errOut)
		}
	}
}

func TestVersion(t *testing.T) {
	out, _, code := sonde(t, "", "--version")
	if code != ExitOK || strings.TrimSpace(out) != "sonde "+Version {
		t.Fatalf("--version: %d %q", code, out)
	}
	out, _, code = sonde(t, "", "version")
	if code != ExitOK || !strings.HasPrefix(out, "sonde dev (go") {
		t.Fatalf("version: %d %q", code, out)
	}
	out, _, code = sonde(t, "", "version", "--json")
	var v versionInfo
	if code != ExitOK || json.Unmarshal([]byte(out), &v) != nil || v.Version != "dev" || v.GoVersion == "" {
		t.Fatalf("version --json: %d %q", code, out)
	}
}

func TestTablesDescribeExplainCommands(t *testing.T) {
	s := catalogStack(t)
	srv := []string{"--server", s.URL}
	with := func(args ...string) []string { return append(args, srv...) }

	out, errOut, code := sonde(t, "", with("tables", "demo")...)
	wantOutput(t, "tables demo", out, "SCHEMA", "orders", "order_items", "table", "(5 readable relations)")
	if code != ExitOK || errOut != "" {
		t.Fatalf("tables demo: %d %s", code, errOut)
	}
	out, _, code = sonde(t, "", with("tables", "shop")...)
	wantOutput(t, "tables shop", out, "orders", "customers", "(2 readable relations;", "outside the readable patterns are not listed")
	if code != ExitOK || strings.Contains(out, "payments") {
		t.Fatalf("tables shop names a hidden relation: %s", out)
	}
	out, _, code = sonde(t, "", with("tables", "demo", "ORDER*", "--json")...)
	var page api.TablesResponse
	if code != ExitOK || json.Unmarshal([]byte(out), &page) != nil || page.Total != 2 || len(page.Tables) != 2 {
		t.Fatalf("tables --json: %d %s", code, out)
	}
	// A wrong connection lists the valid ones.
	_, errOut, code = sonde(t, "", with("tables", "nope")...)
	if code != ExitRefused || !strings.Contains(errOut, string(contracts.CodeUnknownConnection)) || !strings.Contains(errOut, "demo (sqlite), shop (sqlite)") {
		t.Fatalf("tables nope: %d %s", code, errOut)
	}

	out, _, code = sonde(t, "", with("describe", "shop", "orders")...)
	wantOutput(t, "describe", out, `"main"."orders"`, `"customer_id" INTEGER`, "primary key")
	if code != ExitOK {
		t.Fatalf("describe: %d", code)
	}
	out, _, code = sonde(t, "", with("describe", "shop", "main.customers", "--json")...)
	var d api.DescribeResponse
	if code != ExitOK || json.Unmarshal([]byte(out), &d) != nil || d.Relation.Name != "customers" {
		t.Fatalf("describe --json: %d %s", code, out)
	}
	_, errOut, code = sonde(t, "", with("describe", "shop", "payments")...)
	if code != ExitRefused || !strings.Contains(errOut, string(api.CodeTableNotFound)) || !strings.Contains(errOut, "sonde tables shop") {
		t.Fatalf("describe of a hidden table: %d %s", code, errOut)
	}
	_, errOut, code = sonde(t, "", with("describe", "nope", "orders")...)
	if code != ExitRefused || !strings.Contains(errOut, "demo (sqlite)") {
		t.Fatalf("describe on a wrong connection: %d %s", code, errOut)
	}

	// A statement that begins with a comment: from the standard input, a
	// file, or after the end of the flags.
	stmt := "-- the paid orders\nselect id from orders where id = 7"
	file := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(file, []byte(stmt), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		stdin string
		args  []string
	}{
		"stdin":        {stmt, with("explain", "demo", "-")},
		"file":         {"", with("explain", "demo", "--file", file)},
		"end of flags": {"", append(with("explain", "demo"), "--", stmt)},
	} {
		out, errOut, code := sonde(t, c.stdin, c.args...)
		if code != ExitOK || !strings.Contains(out, "Plan (estimates, not executed)") || !strings.Contains(out, "orders") {
			t.Errorf("explain, statement from %s: %d\n%s\n%s", name, code, out, errOut)
		}
	}
	out, _, code = sonde(t, stmt, with("explain", "demo", "-", "--json")...)
	var ex api.ExplainResponse
	if code != ExitOK || json.Unmarshal([]byte(out), &ex) != nil || ex.SQL != stmt || len(ex.Rows) == 0 {
		t.Fatalf("explain --json: %d %s", code, out)
	}
	_, errOut, code = sonde(t, "", with("explain", "demo", "delete from orders")...)
	if code != ExitRefused || !strings.Contains(errOut, "refused (") || !strings.Contains(errOut, "fix:") {
		t.Fatalf("explain of a delete: %d %s", code, errOut)
	}
	// Without --, the comment reads as a flag: refused, saying what to do.
	_, errOut, code = sonde(t, "", with("explain", "demo", stmt)...)
	if code != ExitRefused || !strings.Contains(errOut, "goes after --") {
		t.Fatalf("explain of a comment-first statement without --: %d %s", code, errOut)
	}
	_, _, code = sonde(t, "  \n", with("explain", "demo", "-")...)
	if code != ExitRefused {
		t.Fatalf("explain of an empty statement: %d", code)
	}
}

func TestQueryReadsTheStatementFromStdinOrFile(t *testing.T) {
	_, conns := demoFiles(t)
	base := []string{"query", "--connections", conns, "--connection", "shop", "--in-process"}
	stmt := "-- count them\nselect count(*) as n from customers"
	out, errOut, code := sonde(t, stmt, append(base, "-")...)
	if code != ExitOK || !strings.Contains(out, "(1 row)") {
		t.Fatalf("query -: %d\n%s\n%s", code, out, errOut)
	}
	file := filepath.Join(t.TempDir(), "q.sql")
	if err := os.WriteFile(file, []byte(stmt), 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, code = sonde(t, "", append(base, "--file", file)...)
	if code != ExitOK || !strings.Contains(out, "(1 row)") {
		t.Fatalf("query --file: %d\n%s", code, out)
	}
	out, _, code = sonde(t, "", append(base, "--", stmt)...)
	if code != ExitOK || !strings.Contains(out, "(1 row)") {
		t.Fatalf("query -- STMT: %d\n%s", code, out)
	}
	if _, _, code = sonde(t, "", append(base, "--file", file, "select 1")...); code != ExitRefused {
		t.Fatalf("both --file and an argument: %d", code)
	}
	if _, _, code = sonde(t, "", base...); code != ExitRefused {
		t.Fatalf("no statement: %d", code)
	}
}

func TestEachCommandReadsItsOwnVariables(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	ctx := context.Background()
	c := s.Client("")
	for range 3 {
		started, err := c.StartRun(ctx, api.StartRunRequest{Objective: "Why did orders fall in March 2025?", ConnectionID: "demo"})
		if err != nil {
			t.Fatal(err)
		}
		stacktest.Follow(t, c, started.RunID)
	}
	// SONDE_LIMIT was query's; it no longer reaches runs list (where 5000
	// would be refused), and a warning names the variable that is read.
	t.Setenv("SONDE_LIMIT", "5000")
	t.Setenv("SONDE_SERVER", s.URL)
	out, errOut, code := sonde(t, "", "runs", "list", "--json")
	var list api.RunList
	if code != ExitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Runs) != 3 {
		t.Fatalf("runs list with SONDE_LIMIT set: %d %s %s", code, out, errOut)
	}
	if !strings.Contains(errOut, "SONDE_LIMIT is not read by sonde runs list; its variable is SONDE_RUNS_LIST_LIMIT") {
		t.Errorf("no warning naming the variable: %q", errOut)
	}
	t.Setenv("SONDE_RUNS_LIST_LIMIT", "2")
	out, _, code = sonde(t, "", "runs", "list", "--json")
	if code != ExitOK || json.Unmarshal([]byte(out), &list) != nil || len(list.Runs) != 2 || list.Next == "" {
		t.Fatalf("SONDE_RUNS_LIST_LIMIT=2: %d %s", code, out)
	}
	// query's own variable.
	_, conns := demoFiles(t)
	t.Setenv("SONDE_QUERY_LIMIT", "2")
	out, _, code = sonde(t, "", "query", "--in-process", "--connections", conns, "--connection", "shop", "--json",
		"select id from customers order by id")
	var res api.QueryResponse
	if code != ExitOK || json.Unmarshal([]byte(out), &res) != nil || res.RowCount != 2 || !res.Truncated {
		t.Fatalf("SONDE_QUERY_LIMIT=2: %d %s", code, out)
	}
	t.Setenv("SONDE_QUERY_LIMIT", "many")
	if _, errOut, code = sonde(t, "", "query", "--in-process", "--connections", conns, "--connection", "shop", "select 1"); code != ExitRefused ||
		!strings.Contains(errOut, "SONDE_QUERY_LIMIT") {
		t.Fatalf("a bad variable: %d %s", code, errOut)
	}
}

func TestRunsCancelArtifactTailCommands(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	ctx := context.Background()
	c := s.Client("")
	started, err := c.StartRun(ctx, api.StartRunRequest{Objective: "Why did orders fall in March 2025?", ConnectionID: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	srv := []string{"--server", s.URL}
	// tail --json: the ledger as NDJSON on the output, nothing else.
	out, errOut, code := sonde(t, "", append([]string{"runs", "tail", started.RunID, "--json"}, srv...)...)
	if code != ExitOK {
		t.Fatalf("tail --json: %d %s", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var first, last contracts.Entry
	if json.Unmarshal([]byte(lines[0]), &first) != nil || json.Unmarshal([]byte(lines[len(lines)-1]), &last) != nil ||
		first.Kind != contracts.KindRunStarted || last.Kind != contracts.KindRunFinished || first.Seq != 1 {
		t.Fatalf("tail --json lines:\n%s", out)
	}
	// tail: progress on the error stream, the report on the output.
	out, errOut, code = sonde(t, "", append([]string{"runs", "tail", started.RunID}, srv...)...)
	if code != ExitOK || !strings.Contains(errOut, "turn 1") || strings.Contains(out, "turn 1 run_read_query") || !strings.Contains(out, "Report") {
		t.Fatalf("tail: %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	rec, err := c.Run(ctx, started.RunID)
	if err != nil {
		t.Fatal(err)
	}
	cid := ""
	for _, st := range rec.Steps {
		if st.Artifact != nil && st.Artifact.Rows > 0 {
			cid = st.Artifact.CorrelationID
		}
	}
	out, _, code = sonde(t, "", append([]string{"runs", "artifact", started.RunID, cid}, srv...)...)
	if code != ExitOK || !strings.Contains(out, "Artifact "+cid) || !strings.Contains(out, "rows") {
		t.Fatalf("artifact: %d %s", code, out)
	}
	out, _, code = sonde(t, "", append([]string{"runs", "artifact", started.RunID, cid, "--json"}, srv...)...)
	var art contracts.Artifact
	if code != ExitOK || json.Unmarshal([]byte(out), &art) != nil || art.CorrelationID != cid || len(art.Data) == 0 {
		t.Fatalf("artifact --json: %d %s", code, out)
	}
	if _, _, code = sonde(t, "", append([]string{"runs", "artifact", started.RunID, "c_nothing"}, srv...)...); code != ExitRefused {
		t.Fatalf("artifact that does not exist: %d", code)
	}
	// The run has finished: cancelling it is refused with the reason.
	_, errOut, code = sonde(t, "", append([]string{"runs", "cancel", started.RunID}, srv...)...)
	if code != ExitRefused || !strings.Contains(errOut, string(contracts.CodeRunFinished)) {
		t.Fatalf("cancel of a finished run: %d %s", code, errOut)
	}
	_, _, code = sonde(t, "", "runs", "cancel", "rnothing", "--server", s.URL)
	if code != ExitRefused {
		t.Fatalf("cancel of no run: %d", code)
	}
	// No gateway: no answer, exit 4.
	if _, _, code = sonde(t, "", "runs", "cancel", "r1", "--server", "http://127.0.0.1:1"); code != ExitNoAnswer {
		t.Fatalf("cancel with no gateway: %d", code)
	}
}

// A stream cut before the run ended is resumed after the last entry shown:
// no entry twice, none lost.
func TestTailResumesAfterADrop(t *testing.T) {
	entries := []string{
		`{"v":1,"kind":"run-started","runId":"r1","seq":1,"payload":{}}`,
		`{"v":1,"kind":"closing-statement","runId":"r1","seq":2,"payload":{"turn":1,"text":"thinking"}}`,
		`{"v":1,"kind":"run-finished","runId":"r1","seq":3,"payload":{"status":"succeeded"}}`,
	}
	var (
		calls atomic.Int32
		mu    sync.Mutex
		froms []string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.StreamPath("r1"), func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		mu.Lock()
		froms = append(froms, r.URL.Query().Get("from"))
		mu.Unlock()
		w.Header().Set("Content-Type", api.ContentTypeNDJSON)
		start := 0
		if f := r.URL.Query().Get("from"); f != "" {
			start = int(f[0] - '0')
		}
		for i := start; i < len(entries); i++ {
			_, _ = w.Write([]byte(entries[i] + "\n"))
			w.(http.Flusher).Flush()
			if n == 1 && i == 1 {
				panic(http.ErrAbortHandler) // the connection drops after two entries
			}
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	var seqs []uint64
	err := streamResuming(context.Background(), client.New(srv.URL, ""), "r1", func(e contracts.Entry) error {
		seqs = append(seqs, e.Seq)
		return nil
	})
	if err != nil || len(seqs) != 3 || seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 3 {
		t.Fatalf("resumed stream: %v %v", seqs, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(froms) != 2 || froms[0] != "" || froms[1] != "2" {
		t.Fatalf("requests from %q, want a resume after entry 2", froms)
	}
}

func TestAskWithoutAModelSaysHowToConfigureOne(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+api.PathConfig, func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(api.AgentConfig{Enabled: false, Reason: contracts.CodeNoModelConfigured})
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	_, errOut, code := sonde(t, "", "ask", "--server", srv.URL, "why?")
	if code != ExitRefused {
		t.Fatalf("exit %d, want %d", code, ExitRefused)
	}
	for _, want := range []string{string(contracts.CodeNoModelConfigured), "LLM_PROVIDER=demo", "LLM_MODEL", "LLM_API_KEY", "LLM_API_URL"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("no %q in %q", want, errOut)
		}
	}
}

func TestAskOnAWrongConnectionListsTheValidOnes(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{})
	out, errOut, code := sonde(t, "", "ask", "--server", s.URL, "--connection", "nope", "why?")
	if code != ExitRefused || !strings.Contains(errOut, string(contracts.CodeUnknownConnection)) || !strings.Contains(errOut, "use one of: demo (sqlite)") || out != "" {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// ask pipes: the steps on the error stream, the report on the output.
	out, errOut, code = sonde(t, "", "ask", "--server", s.URL, "--connection", "demo", "Why did orders fall in March 2025?")
	if code != ExitOK || !strings.Contains(errOut, "budget: turns") || strings.Contains(out, "budget: turns") ||
		!strings.Contains(out, "Verdict: answered") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	out, _, code = sonde(t, "", "ask", "--server", s.URL, "--json", "Why did orders fall in March 2025?")
	var rec contracts.Record
	if code != ExitOK || json.Unmarshal([]byte(out), &rec) != nil || rec.GoalVerdict == nil {
		t.Fatalf("ask --json: %d %s", code, out)
	}
}

func TestPlainOutputWhenNotATerminal(t *testing.T) {
	var b bytes.Buffer
	p := &plainWriter{w: &b}
	arrow := []byte("→")
	_, _ = p.Write([]byte("  ✓ done · next "))
	_, _ = p.Write(arrow[:1]) // a rune split across writes
	_, _ = p.Write(append(arrow[1:], []byte(" café…\n")...))
	if got := b.String(); got != "  ok done - next -> café...\n" {
		t.Fatalf("plain: %q", got)
	}
	for _, r := range got(b.String()) {
		if r > 0x7f && r != 'é' {
			t.Fatalf("non-ASCII decoration %q left", r)
		}
	}
	b.Reset()
	if err := printJSON(p, map[string]string{"v": "a → b"}); err != nil || !strings.Contains(b.String(), "a → b") {
		t.Fatalf("JSON rewritten: %q", b.String())
	}
	if isTerminal(&b) || isTerminal(p) {
		t.Fatal("a buffer is not a terminal")
	}
}

func got(s string) []rune { return []rune(s) }

// On a terminal, a silence of more than two seconds shows how long it has
// lasted, and the line is erased before the next step is printed.
func TestWaitClockShowsASilentModel(t *testing.T) {
	var b lockedBuffer
	c := &waitClock{w: &b, on: true, since: time.Now(), stop: make(chan struct{})}
	go c.run()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(b.String(), "waiting for the model, 2s") {
		if time.Now().After(deadline) {
			t.Fatalf("no clock after a 2 s silence: %q", b.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	p := &progress{out: &b, clock: c}
	p.printf("  -> turn 2\n")
	c.close()
	if got := b.String(); !strings.HasSuffix(got, "\r\x1b[K  -> turn 2\n") {
		t.Fatalf("the clock's line is not erased before the step: %q", got)
	}
}
