package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

func wantOutput(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

func TestRunsListShowTail(t *testing.T) {
	alice := contracts.Actor{ID: "alice", Role: contracts.RoleMember}
	bob := contracts.Actor{ID: "bob", Role: contracts.RoleMember}
	s := stacktest.Start(t, stacktest.Options{Tokens: map[string]contracts.Actor{"tok-a": alice, "tok-b": bob}})
	ctx := context.Background()
	o := runsOptions{server: s.URL, token: "tok-a", limit: api.DefaultRunsLimit}

	var out bytes.Buffer
	if err := runsList(ctx, &out, o); err != nil || strings.TrimSpace(out.String()) != "No runs." {
		t.Fatalf("empty list: %v %q", err, out.String())
	}

	var runIDs []string
	for _, objective := range []string{"Why did orders fall?", "Which products sell best?"} {
		out.Reset()
		if err := ask(ctx, &out, askOptions{server: s.URL, token: "tok-a", connection: "demo", workflow: "investigation"}, objective); err != nil {
			t.Fatalf("ask: %v\n%s", err, out.String())
		}
		id := regexp.MustCompile(`Run (\S+) `).FindStringSubmatch(out.String())
		if id == nil {
			t.Fatalf("no run id in:\n%s", out.String())
		}
		runIDs = append(runIDs, id[1])
	}
	newest, oldest := runIDs[1], runIDs[0]

	t.Run("list", func(t *testing.T) {
		var out bytes.Buffer
		if err := runsList(ctx, &out, o); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		wantOutput(t, "list", got, "RUN", "STATUS", newest, oldest, "succeeded", "answered", "investigation", "demo", "Why did orders fall?")
		if strings.Index(got, newest) > strings.Index(got, oldest) || strings.Contains(got, "More:") {
			t.Errorf("newest first, one page:\n%s", got)
		}

		// A page of one names the next; the next page holds the other run.
		out.Reset()
		o1 := o
		o1.limit, o1.jsonOut = 1, true
		if err := runsList(ctx, &out, o1); err != nil {
			t.Fatal(err)
		}
		var page api.RunList
		if err := json.Unmarshal(out.Bytes(), &page); err != nil || len(page.Runs) != 1 || page.Runs[0].RunID != newest || page.Next == "" {
			t.Fatalf("page 1: %v %s", err, out.String())
		}
		o1.cursor = page.Next
		out.Reset()
		if err := runsList(ctx, &out, o1); err != nil {
			t.Fatal(err)
		}
		page = api.RunList{}
		if err := json.Unmarshal(out.Bytes(), &page); err != nil || len(page.Runs) != 1 || page.Runs[0].RunID != oldest || page.Next != "" {
			t.Fatalf("page 2: %v %s", err, out.String())
		}
		if r := page.Runs[0]; r.Status != contracts.StatusSucceeded || r.FinishedAt == nil || r.GoalVerdict == nil || r.ConnectionID != "demo" {
			t.Errorf("summary %+v", r)
		}

		// The text form says how to get the next page.
		out.Reset()
		o1.jsonOut, o1.cursor = false, ""
		if err := runsList(ctx, &out, o1); err != nil {
			t.Fatal(err)
		}
		wantOutput(t, "list --limit 1", out.String(), "More: sonde runs list --limit 1 --cursor "+page.Next)
	})

	t.Run("another actor's runs are never listed or shown", func(t *testing.T) {
		ob := o
		ob.token = "tok-b"
		var out bytes.Buffer
		if err := runsList(ctx, &out, ob); err != nil || strings.TrimSpace(out.String()) != "No runs." {
			t.Fatalf("bob's list: %v\n%s", err, out.String())
		}
		for _, f := range []func(context.Context, io.Writer, runsOptions, string) error{runsShow, runsTail} {
			err := f(ctx, &out, ob, newest)
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != ExitRefused || !strings.Contains(err.Error(), string(contracts.CodeRunNotFound)) {
				t.Fatalf("bob reads alice's run: %v", err)
			}
		}
	})

	t.Run("show", func(t *testing.T) {
		var out bytes.Buffer
		if err := runsShow(ctx, &out, o, oldest); err != nil {
			t.Fatal(err)
		}
		wantOutput(t, "show", out.String(), "Run "+oldest, "Objective: Why did orders fall?", "finished after", "[demonstration replay]",
			"Budget: turns", "Steps", ": completed, artifact ", "rows", "compose_report: completed",
			"Report", "cites artifact", "Status: succeeded (report-composed)", "Verdict: answered")

		out.Reset()
		oj := o
		oj.jsonOut = true
		if err := runsShow(ctx, &out, oj, oldest); err != nil {
			t.Fatal(err)
		}
		var rec contracts.Record
		if err := json.Unmarshal(out.Bytes(), &rec); err != nil || rec.RunID != oldest || rec.Status != contracts.StatusSucceeded || len(rec.Steps) == 0 || len(rec.Report) == 0 {
			t.Fatalf("show --json: %v\n%s", err, out.String())
		}

		err := runsShow(ctx, &out, o, "rnothing")
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != ExitRefused {
			t.Fatalf("show of no run: %v", err)
		}
	})

	t.Run("tail of a finished run", func(t *testing.T) {
		var out bytes.Buffer
		if err := runsTail(ctx, &out, o, newest); err != nil {
			t.Fatalf("tail: %v\n%s", err, out.String())
		}
		wantOutput(t, "tail", out.String(), "Run "+newest, "schema snapshot captured", "budget: turns", "■ succeeded", "Report", "cites artifact", "Verdict: answered")
	})
}

// lockedBuffer is a buffer a command writes while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestRunsListsARunningRunAndTailFollowsIt(t *testing.T) {
	release := make(chan struct{})
	s := stacktest.Start(t, stacktest.Options{Script: modeltest.ScriptFunc(func(modeltest.ChatRequest) (modeltest.Reply, error) {
		<-release // the run's first turn waits for the test
		return modeltest.Reply{Text: "no idea"}, nil
	})})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started, err := s.Client("").StartRun(ctx, api.StartRunRequest{Objective: "What is slow?", ConnectionID: "demo"})
	if err != nil {
		close(release)
		t.Fatal(err)
	}
	o := runsOptions{server: s.URL, limit: api.DefaultRunsLimit, jsonOut: true}

	// Listed while it runs.
	var last string
	deadline := time.Now().Add(20 * time.Second)
	for {
		var out bytes.Buffer
		if err := runsList(ctx, &out, o); err != nil {
			close(release)
			t.Fatal(err)
		}
		var page api.RunList
		_ = json.Unmarshal(out.Bytes(), &page)
		if len(page.Runs) == 1 && page.Runs[0].RunID == started.RunID && page.Runs[0].Status == contracts.StatusRunning {
			if page.Runs[0].FinishedAt != nil || page.Runs[0].Objective != "What is slow?" {
				t.Errorf("running run %+v", page.Runs[0])
			}
			break
		}
		last = out.String()
		if time.Now().After(deadline) {
			close(release)
			t.Fatalf("the running run is not listed:\n%s", last)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// tail follows it live, then reports how it ended.
	out := &lockedBuffer{}
	done := make(chan error, 1)
	go func() { done <- runsTail(ctx, out, runsOptions{server: s.URL}, started.RunID) }()
	for !strings.Contains(out.String(), "drive 1 · model") {
		select {
		case err := <-done:
			close(release)
			t.Fatalf("tail ended before the run did: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	wantOutput(t, "tail of a running run", out.String(), "Run "+started.RunID, "· running", "Objective: What is slow?")
	close(release)
	err = <-done
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != ExitUnanswered {
		t.Fatalf("tail: %v, want exit %d\n%s", err, ExitUnanswered, out.String())
	}
	wantOutput(t, "tail", out.String(), "… turn 1: no idea", "■ failed", "No report was composed", "unmet: no-report")

	var after bytes.Buffer
	if err := runsList(ctx, &after, runsOptions{server: s.URL, limit: 5}); err != nil {
		t.Fatal(err)
	}
	wantOutput(t, "list after the end", after.String(), started.RunID, "failed", "unanswered")
}
