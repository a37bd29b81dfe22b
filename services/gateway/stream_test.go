package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/api"
)

// receive waits for the next streamed entry.
func receive(t *testing.T, entries <-chan contracts.Entry) contracts.Entry {
	t.Helper()
	select {
	case e := <-entries:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no entry arrived")
		return contracts.Entry{}
	}
}

func TestStreamIsLiveAndEndsAfterRunFinished(t *testing.T) {
	e := newEnv(t)
	w := e.startedRun("r1", alice)
	entries := make(chan contracts.Entry)
	done := make(chan error, 1)
	go func() {
		done <- e.client(tokAlice).Stream(e.ctx, "r1", 0, func(en contracts.Entry) error {
			entries <- en
			return nil
		})
	}()
	for i, kind := range []contracts.EventKind{contracts.KindRunStarted, contracts.KindDriverResolved} {
		if en := receive(t, entries); en.Kind != kind || en.Seq != uint64(i+1) || en.RunID != "r1" {
			t.Fatalf("entry %d: %+v", i+1, en)
		}
	}
	// Appended while the caller watches.
	e.append(w, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: 1, Text: "thinking"})
	if en := receive(t, entries); en.Kind != contracts.KindClosingStatement || en.Seq != 3 {
		t.Fatalf("live entry %+v", en)
	}
	e.append(w, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopModelStopped})
	if en := receive(t, entries); en.Kind != contracts.KindRunFinished {
		t.Fatalf("last entry %+v", en)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end after run-finished")
	}
}

func TestStreamResumesAndEndsOnFinishedRuns(t *testing.T) {
	e := newEnv(t)
	e.finishedRun("r1", alice)
	collect := func(from uint64) []contracts.Entry {
		var got []contracts.Entry
		err := e.client(tokAlice).Stream(e.ctx, "r1", from, func(en contracts.Entry) error {
			got = append(got, en)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := collect(0); len(got) != 5 || got[4].Kind != contracts.KindRunFinished {
		t.Fatalf("whole ledger: %d entries", len(got))
	}
	if got := collect(3); len(got) != 2 || got[0].Seq != 4 {
		t.Fatalf("from 3: %+v", got)
	}
	if got := collect(5); len(got) != 0 {
		t.Fatalf("from the end: %+v", got)
	}
	if got := collect(99); len(got) != 0 {
		t.Fatalf("past the end: %+v", got)
	}

	// fn's error stops the stream and comes back as is.
	stop := errors.New("enough")
	err := e.client(tokAlice).Stream(e.ctx, "r1", 0, func(contracts.Entry) error { return stop })
	if !errors.Is(err, stop) {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamRefusals(t *testing.T) {
	e := newEnv(t)
	e.startedRun("r1", alice)
	err := e.client(tokBob).Stream(e.ctx, "r1", 0, func(contracts.Entry) error { return nil })
	apiErr(t, err, http.StatusNotFound, contracts.CodeRunNotFound)
	err = e.client(tokAlice).Stream(e.ctx, "missing", 0, func(contracts.Entry) error { return nil })
	apiErr(t, err, http.StatusNotFound, contracts.CodeRunNotFound)
	status, _, body := e.call(http.MethodGet, api.StreamPath("r1")+"?from=-1", tokAlice, "")
	wantError(t, status, body, http.StatusBadRequest, contracts.CodeBadRequest)
}

func TestStreamEndsWhenTheCallerLeaves(t *testing.T) {
	e := newEnv(t)
	e.startedRun("r1", alice)
	ctx, cancel := context.WithCancel(e.ctx)
	err := e.client(tokAlice).Stream(ctx, "r1", 0, func(en contracts.Entry) error {
		if en.Seq == 2 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestStreamNDJSONAndSSE(t *testing.T) {
	e := newEnv(t)
	e.finishedRun("r1", alice)

	req, _ := http.NewRequestWithContext(e.ctx, http.MethodGet, e.url+api.StreamPath("r1"), nil)
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != api.ContentTypeNDJSON {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	lines := 0
	for sc.Scan() {
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil || raw["kind"] == nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines != 5 {
		t.Fatalf("%d lines", lines)
	}

	req, _ = http.NewRequestWithContext(e.ctx, http.MethodGet, e.url+api.StreamPath("r1"), nil)
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	req.Header.Set("Accept", api.ContentTypeSSE)
	req.Header.Set("Last-Event-ID", "3")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != api.ContentTypeSSE {
		t.Fatalf("content type %q", ct)
	}
	var b strings.Builder
	sc = bufio.NewScanner(resp.Body)
	for sc.Scan() {
		b.WriteString(sc.Text() + "\n")
	}
	events := strings.Split(strings.TrimSpace(b.String()), "\n\n")
	if len(events) != 2 || !strings.HasPrefix(events[0], "id: 4\nevent: tool-completed\ndata: {") ||
		!strings.HasPrefix(events[1], "id: 5\nevent: run-finished\ndata: {") {
		t.Fatalf("events:\n%s", b.String())
	}
}

// TestStreamSendsKeepAlivesWhileTheRunIsQuiet: a live stream with nothing new
// sends blank lines (NDJSON) or comments (SSE), which readers skip, so a proxy
// does not cut it during a long model call.
func TestStreamSendsKeepAlivesWhileTheRunIsQuiet(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.StreamHeartbeat = 20 * time.Millisecond })
	w := e.startedRun("quiet", alice)
	for _, sse := range []bool{false, true} {
		req, _ := http.NewRequestWithContext(e.ctx, http.MethodGet, e.url+api.StreamPath("quiet"), nil)
		req.Header.Set("Authorization", "Bearer "+tokAlice)
		if sse {
			req.Header.Set("Accept", api.ContentTypeSSE)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(resp.Body)
		entries, beats := 0, 0
		for beats < 3 {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("sse=%v: %v after %d entries, %d beats", sse, err, entries, beats)
			}
			switch {
			case line == "\n" && !sse, strings.HasPrefix(line, ": keep-alive") && sse:
				beats++
			case strings.HasPrefix(line, "{") || strings.HasPrefix(line, "data: "):
				entries++
			}
		}
		resp.Body.Close()
		if entries != 2 {
			t.Fatalf("sse=%v: %d entries before the keep-alives, want 2", sse, entries)
		}
	}
	// The typed client reads through keep-alives to the end.
	done := make(chan error, 1)
	var got []contracts.EventKind
	go func() {
		done <- e.client(tokAlice).Stream(e.ctx, "quiet", 0, func(en contracts.Entry) error {
			got = append(got, en.Kind)
			return nil
		})
	}()
	time.Sleep(100 * time.Millisecond) // let several keep-alives pass
	e.append(w, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopModelStopped})
	if err := <-done; err != nil || len(got) != 3 || got[2] != contracts.KindRunFinished {
		t.Fatalf("client read %v, err %v", got, err)
	}
}
