package orchestrator

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
)

// What the model reads of one result is a share of its context window
// (issue 18, item 6): the drive computes it (showBytes) and sends it on
// every executor request; the executor renders within it.

// windowModel is a scripted model whose probe reports settings: the
// context window it is known to have, or the num_ctx it runs with.
type windowModel struct {
	mu       sync.Mutex
	settings contracts.ModelSettings
	reqs     []contracts.ModelTurnRequest
	script   func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply
}

func (m *windowModel) Probe(context.Context) (contracts.ModelProbeReply, error) {
	s := m.settings
	return contracts.ModelProbeReply{Provider: "test", Model: "windowed",
		Tuning: &contracts.ModelTuning{State: contracts.TuningUnset, SettingsSource: contracts.SettingsBundled, Settings: &s}}, nil
}

func (m *windowModel) Turn(_ context.Context, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, error) {
	m.mu.Lock()
	n := len(m.reqs)
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	r := m.script(n, req)
	r.Provider, r.Model = "test", "windowed"
	return r, nil
}

// TestShowBytesIsAShareOfTheWindow: a model's known window, else its
// num_ctx, else the default, sets the share: W·3/60 bytes, at least the
// floor, at most the run's MaxBytes; every executor request of the run
// carries it.
func TestShowBytesIsAShareOfTheWindow(t *testing.T) {
	for _, c := range []struct {
		name     string
		settings contracts.ModelSettings
		want     int
	}{
		{"a known 128k window", contracts.ModelSettings{ContextTokens: 128_000}, 6_400},
		{"num_ctx alone", contracts.ModelSettings{NumCtx: 65_536}, 3_276},
		{"the known window over num_ctx", contracts.ModelSettings{ContextTokens: 1_000_000, NumCtx: 8_192}, 50_000},
		{"a 32k window gets the floor", contracts.ModelSettings{ContextTokens: 32_768}, showFloor},
		{"an unknown window", contracts.ModelSettings{}, showFloor},
		{"a window past MaxBytes", contracts.ModelSettings{ContextTokens: 10_000_000}, policy.MaxBytes},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, Config{})
			m := &windowModel{settings: c.settings, script: func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
				if n < 2 {
					return reads(fmt.Sprintf("SELECT %d AS n", n))(0, req)
				}
				return contracts.ModelTurnReply{Text: "done"}
			}}
			h.s.models = m
			if _, _, err := h.drive(t, "share", nil); err != nil {
				t.Fatal(err)
			}
			reads := 0
			for _, call := range h.exec.calls {
				if call.req.StepID == "context" {
					continue
				}
				reads++
				if call.req.ShowBytes != c.want {
					t.Errorf("%s asked with ShowBytes %d, want %d", call.req.StepID, call.req.ShowBytes, c.want)
				}
			}
			if reads != 2 {
				t.Fatalf("%d reads reached the executor, want 2", reads)
			}
		})
	}
}

// wideDB writes a real SQLite file with a 200-row table of wide text (about
// 950 bytes a row) and 40 other tables, so the schema snapshot is near its
// packing bound as on a real database.
func wideDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wide.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{"BEGIN", "CREATE TABLE wide (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT)"}
	for i := 1; i <= 200; i++ {
		v := strings.Repeat(fmt.Sprintf("row %03d says something long; ", i), 10)
		stmts = append(stmts, fmt.Sprintf("INSERT INTO wide VALUES (%d, '%s', '%s', '%s')", i, v, v, v))
	}
	for i := range 40 {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE wide_archive_%02d (id INTEGER PRIMARY KEY, wide_id INTEGER REFERENCES wide(id), note TEXT, created_at TEXT, amount REAL, status TEXT)", i))
	}
	stmts = append(stmts, "COMMIT")
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// stackRun drives one run through the real executor on a real SQLite file
// over embedded NATS, with a model of the given window, and returns the
// ledger and every request the model was sent.
func stackRun(t *testing.T, path string, settings contracts.ModelSettings, tune func(*contracts.Budget),
	script func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply) ([]contracts.Entry, []contracts.ModelTurnRequest) {
	t.Helper()
	srv := natstest.Start(t)
	ctx := context.Background()
	ex, err := executor.New(executor.Config{Connections: []connections.Connection{{ID: "wide", Engine: contracts.EngineSQLite, Path: path}}, Logger: discard(), NATS: srv.Connect()})
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	s, err := New(Config{Logger: discard(), NATS: srv.Connect()})
	if err != nil {
		t.Fatal(err)
	}
	m := &windowModel{settings: settings, script: script}
	s.models = m
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	budget, _ := policy.Budget(contracts.WorkflowInvestigation)
	if tune != nil {
		tune(&budget)
	}
	header := contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation, Objective: "What do the wide rows say?",
		ConnectionID: "wide", Engine: contracts.EngineSQLite, Actor: contracts.Actor{ID: "tester"}, Budget: budget,
		Tools: policy.Tools(contracts.ModeAgent, contracts.WorkflowInvestigation)}
	if _, err := s.ledger.Writer("stack", 0, nil).Append(ctx, contracts.KindRunStarted, header); err != nil {
		t.Fatal(err)
	}
	if err := s.driveHere("stack"); err != nil {
		t.Fatal(err)
	}
	entries, err := s.ledger.Read(ctx, "stack")
	if err != nil {
		t.Fatal(err)
	}
	return entries, m.reqs
}

// requestBytes is a whole request's size in bytes: every message's text,
// the tool calls it repeats, and the tool specs as compact JSON.
func requestBytes(t *testing.T, req contracts.ModelTurnRequest) int {
	t.Helper()
	n := 0
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, tc := range m.ToolCalls {
			n += len(tc.ID) + len(tc.Name) + len(tc.Arguments)
		}
	}
	b, err := json.Marshal(req.Tools)
	if err != nil {
		t.Fatal(err)
	}
	return n + len(b)
}

// statusMost bounds the status line and the separator the drive adds to
// what the executor rendered.
const statusMost = 100

// TestAWideResultReachesA32kModelBounded: across the stack, a 200-row wide
// text result (about 190 KB; 48k tokens reached a 32k model before the fix)
// reaches a 32k-context model within its share: the first whole rows, the
// line saying how many of 200 are shown, the whole result stored and
// citable (its artifact counts all 200 rows).
func TestAWideResultReachesA32kModelBounded(t *testing.T) {
	const q = "SELECT id, a, b, c FROM wide ORDER BY id"
	entries, reqs := stackRun(t, wideDB(t), contracts.ModelSettings{ContextTokens: 32_768}, nil, func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n == 0 {
			return reads(q)(0, req)
		}
		return toolCall(n, policy.ToolComposeReport, `{"claims":[{"text":"The wide rows each repeat one sentence.","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`)
	})
	if len(reqs) < 2 {
		t.Fatalf("the model was asked %d times", len(reqs))
	}
	var shown string
	for _, m := range reqs[1].Messages {
		if m.Role == contracts.RoleTool {
			shown = m.Content
		}
	}
	bound := showShare(32_768, policy.MaxBytes)
	if len(shown) > bound+statusMost || !strings.Contains(shown, "Showing ") || !strings.Contains(shown, " of 200 rows (") ||
		!strings.Contains(shown, "the whole result is stored and citable as r1") {
		t.Fatalf("the model read %d bytes (bound %d):\n%s", len(shown), bound, shown)
	}
	c := completions(t, entries, stepOf(q))
	if len(c) != 1 || c[0].Artifact == nil || c[0].Artifact.Rows != 200 || c[0].Artifact.Bytes < 150_000 {
		t.Fatalf("the stored result %+v, want all 200 rows", c)
	}
}

// TestAThirtyReadRunStaysWithinTheWindow: a run that takes 30 reads, each
// of a result far larger than its share, and then reports: every request,
// the last the largest, stays within the model's window at the estimate
// the share is computed with (3 bytes a token), for a 32k window (the
// floor) and a 128k one. The figures are what docs/benchmarks.md reports.
func TestAThirtyReadRunStaysWithinTheWindow(t *testing.T) {
	path := wideDB(t)
	for _, window := range []int{32_768, 131_072} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			entries, reqs := stackRun(t, path, contracts.ModelSettings{ContextTokens: window},
				func(b *contracts.Budget) { b.MaxStatements = showReads + 10 }, // the snapshot's catalog statements and 30 reads
				func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
					if n < showReads {
						return reads(fmt.Sprintf("SELECT id, a, b, c FROM wide WHERE id > %d ORDER BY id", n))(0, req)
					}
					return toolCall(n, policy.ToolComposeReport, `{"claims":[{"text":"The wide rows each repeat one sentence.","evidence":[{"source":"artifact","correlationId":"r30"}]}]}`)
				})
			rec := ledger.Fold("stack", entries)
			if got := readings(rec); got != showReads {
				t.Fatalf("%d reads completed (%v), want %d", got, refusals(rec), showReads)
			}
			windowBytes := window * showBytesPerToken
			largest := 0
			for _, r := range reqs {
				largest = max(largest, requestBytes(t, r))
			}
			last := requestBytes(t, reqs[len(reqs)-1])
			t.Logf("window %d tokens: each result shown within %d bytes; turn %d request %d bytes (~%d tokens at 4 bytes, ~%d at 3), %.0f%% of the window at 3 bytes a token",
				window, showShare(window, policy.MaxBytes), reqs[len(reqs)-1].Turn, last, (last+3)/4, (last+2)/3, 100*float64(last)/float64(windowBytes))
			if largest > windowBytes || last != largest {
				t.Fatalf("the largest request is %d bytes, the last %d; the window holds %d bytes at %d a token", largest, last, windowBytes, showBytesPerToken)
			}
			// The results take at most their half of the window.
			results := 0
			for _, m := range reqs[len(reqs)-1].Messages {
				if m.Role == contracts.RoleTool {
					results += len(m.Content)
				}
			}
			if results > windowBytes/2+showReads*statusMost {
				t.Errorf("the 30 results take %d bytes, over half the window (%d)", results, windowBytes/2)
			}
		})
	}
}
