package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
)

func open(t *testing.T, js jetstream.JetStream, opts ...ledger.Option) *ledger.Ledger {
	t.Helper()
	l, err := ledger.Open(context.Background(), js, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func entry(t *testing.T, kind contracts.EventKind, payload any) contracts.Entry {
	t.Helper()
	e, err := contracts.NewEntry("r1", kind, time.Unix(1700000000, 0), payload)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestConcurrentAppendersExactlyOneWinsEachPosition(t *testing.T) {
	srv := natstest.Start(t)
	const writers, rounds = 4, 25
	ctx := context.Background()
	var wg sync.WaitGroup
	wins := make([][]uint64, writers)
	// expected[w][i] is the position wins[w][i] was appended after.
	expected := make([][]uint64, writers)
	conflicts := make([]int, writers)
	for w := range writers {
		l := open(t, srv.JetStream(), ledger.WithWriter(fmt.Sprintf("w%d", w)))
		wg.Add(1)
		go func() {
			defer wg.Done()
			after := uint64(0)
			for i := range rounds {
				e := entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: i, Text: fmt.Sprintf("w%d", w)})
				seq, err := l.Append(ctx, "race", after, e)
				switch {
				case err == nil:
					wins[w] = append(wins[w], seq)
					expected[w] = append(expected[w], after)
					after = seq
				case ledger.IsConflict(err):
					conflicts[w]++
					// The loser re-reads and follows the new last entry.
					last, lerr := l.LastSeq(ctx, "race")
					if lerr != nil {
						t.Error(lerr)
						return
					}
					after = last
				default:
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	l := open(t, srv.JetStream())
	got, err := l.Read(ctx, "race")
	if err != nil {
		t.Fatal(err)
	}
	total, lost := 0, 0
	seen := map[uint64]bool{}
	after := map[uint64]uint64{} // a won sequence -> the position it was appended after
	for w, ws := range wins {
		total += len(ws)
		lost += conflicts[w]
		for i, s := range ws {
			if seen[s] {
				t.Fatalf("sequence %d won twice", s)
			}
			seen[s] = true
			after[s] = expected[w][i]
		}
	}
	// Every writer's first attempt is at the empty ledger, and only one of
	// them can win it: a plain append-only log would let them all.
	if lost < writers-1 {
		t.Fatalf("%d conflicts among %d writers that all began at the empty ledger; compare-and-append is not holding", lost, writers)
	}
	if total != len(got) {
		t.Fatalf("%d acknowledged appends, %d entries in the ledger", total, len(got))
	}
	for i, e := range got {
		if e.Seq != uint64(i+1) {
			t.Fatalf("entry %d has position %d", i, e.Seq)
		}
		if !seen[e.StreamSeq] {
			t.Fatalf("entry at stream seq %d was never acknowledged to a writer", e.StreamSeq)
		}
		// Each winner stated the entry before it as the last it saw.
		prev := uint64(0)
		if i > 0 {
			prev = got[i-1].StreamSeq
		}
		if after[e.StreamSeq] != prev {
			t.Fatalf("entry %d (stream seq %d) was appended after %d, but the entry before it is at %d",
				i+1, e.StreamSeq, after[e.StreamSeq], prev)
		}
	}
	if total < rounds {
		t.Fatalf("only %d appends won; each writer made %d attempts", total, rounds)
	}
}

func TestAppendConflictIsTyped(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	a := open(t, srv.JetStream(), ledger.WithWriter("a"))
	b := open(t, srv.JetStream(), ledger.WithWriter("b"))
	first, err := a.Append(ctx, "r1", 0, entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Text: "a"}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Append(ctx, "r1", 0, entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Text: "b"}))
	var c *ledger.ConflictError
	if !errors.As(err, &c) || c.Actual != first || c.Expected != 0 {
		t.Fatalf("want conflict with actual %d, got %v", first, err)
	}
	// A retried append of the writer's own landed entry is reported as success.
	again, err := a.Append(ctx, "r1", 0, entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Text: "a"}))
	if err != nil || again != first {
		t.Fatalf("retry of own append: seq %d err %v, want %d", again, err, first)
	}
	if _, err := a.Read(ctx, "absent"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("read of absent run: %v", err)
	}
}

func TestFileStoreSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	srv := natstest.StartIn(t, dir)
	ctx := context.Background()
	l := open(t, srv.JetStream())
	w := l.Writer("durable", 0, nil)
	var acked []contracts.Entry
	for i := range 50 {
		e, err := w.Append(ctx, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: i, Text: fmt.Sprint(i)})
		if err != nil {
			t.Fatal(err)
		}
		acked = append(acked, e)
	}
	srv.Stop()

	srv2 := natstest.StartIn(t, dir)
	got, err := open(t, srv2.JetStream()).Read(ctx, "durable")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(acked) {
		t.Fatalf("after restart: %d entries, %d were acknowledged", len(got), len(acked))
	}
	for i := range got {
		if got[i].StreamSeq != acked[i].StreamSeq || string(got[i].Data) != string(acked[i].Data) {
			t.Fatalf("entry %d differs after restart", i)
		}
	}
}

func TestTailDeliversLiveEntries(t *testing.T) {
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := open(t, srv.JetStream())
	got := make(chan contracts.Entry, 10)
	done := make(chan error, 1)
	go func() {
		done <- l.Tail(ctx, "live", 0, func(e contracts.Entry) (bool, error) {
			got <- e
			return e.Kind != contracts.KindRunFinished, nil
		})
	}()
	w := l.Writer("live", 0, nil)
	if _, err := w.Append(ctx, contracts.KindClosingStatement, contracts.ClosingStatement{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	if e := <-got; e.Kind != contracts.KindClosingStatement || e.Seq != 1 {
		t.Fatalf("first tailed entry: %+v", e)
	}
	if _, err := w.Append(ctx, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	if e := <-got; e.Kind != contracts.KindRunFinished || e.Seq != 2 {
		t.Fatalf("second tailed entry: %+v", e)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func ledgerFixture(t *testing.T) []contracts.Entry {
	args, _ := json.Marshal(map[string]string{"sql": "select 1"})
	call := contracts.ToolCall{Turn: 1, CallID: "call_1", Tool: "run_read_query", Arguments: args}
	es := []contracts.Entry{
		entry(t, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, Objective: "why", ConnectionID: "demo",
			Actor: contracts.Actor{ID: "alice", Role: contracts.RoleMember}, Budget: contracts.Budget{MaxTurns: 36}}),
		entry(t, contracts.KindDriverResolved, contracts.DriverResolved{Provider: "demo", Model: "m", Demo: true, Drive: 1}),
		entry(t, contracts.KindContextCaptured, contracts.ContextCaptured{Fingerprint: "fp", Statements: 1}),
		entry(t, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call, StepID: "s1", CorrelationID: "c1"}),
		entry(t, contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: call, StepID: "s1", Outcome: contracts.OutcomeOK, DurationMs: 7,
			Artifact: &contracts.ArtifactSummary{CorrelationID: "c1", Rows: 3}}),
		entry(t, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: contracts.ToolCall{Turn: 2, CallID: "call_2", Tool: "run_read_query"}, StepID: "s2", CorrelationID: "c2"}),
		entry(t, contracts.KindReportComposed, contracts.ReportComposed{ToolCall: contracts.ToolCall{Turn: 3, Tool: "compose_report"},
			Claims: []contracts.Claim{{Text: "three", Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c1"}}}}}),
		entry(t, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed,
			GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictAnswered, Rule: "agent-investigation.1", Unmet: []string{}}}),
		entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: 9, Text: "after the end"}),
	}
	for i := range es {
		es[i].Seq, es[i].StreamSeq = uint64(i+1), uint64(100+i)
	}
	return es
}

func TestFoldIsDeterministicAndComplete(t *testing.T) {
	es := ledgerFixture(t)
	a, b := ledger.Fold("r1", es), ledger.Fold("r1", es)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two folds of one ledger differ")
	}
	if a.Status != contracts.StatusSucceeded || a.GoalVerdict.Outcome != contracts.VerdictAnswered {
		t.Fatalf("status %s verdict %+v", a.Status, a.GoalVerdict)
	}
	if a.Spent.Statements != 3 || a.Spent.DBTimeMs != 7 || a.Spent.Turns != 3 {
		t.Fatalf("spent %+v", a.Spent)
	}
	if len(a.Steps) != 3 || a.Steps[0].Status != contracts.StepCompleted || a.Steps[1].Status != contracts.StepIndeterminate {
		t.Fatalf("steps %+v", a.Steps)
	}
	if a.Actor.ID != "alice" || !a.Demo || a.Drives != 1 || len(a.Report) != 1 {
		t.Fatalf("record %+v", a)
	}
	// Nothing after run-finished changes the record.
	if !reflect.DeepEqual(ledger.Fold("r1", es[:len(es)-1]).Spent, a.Spent) {
		t.Fatal("an entry after run-finished changed the fold")
	}
	// Prefixes fold to the statuses the ledger went through.
	if s := ledger.Fold("r1", es[:1]).Status; s != contracts.StatusQueued {
		t.Fatalf("header only: %s", s)
	}
	if s := ledger.Fold("r1", es[:4]).Status; s != contracts.StatusRunning {
		t.Fatalf("mid-run: %s", s)
	}
	if st := ledger.Fold("r1", es[:6]).Steps[1].Status; st != contracts.StepInvoked {
		t.Fatalf("open step on a live run folds to %s", st)
	}
	if open := ledger.OpenSteps(es[:6]); len(open) != 1 || open[0].StepID != "s2" {
		t.Fatalf("open steps %+v", open)
	}
}

func TestReadsLeaveNoConsumerBehind(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	js := srv.JetStream()
	l := open(t, js)
	w := l.Writer("quiet", 0, nil)
	if _, err := w.Append(ctx, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		if _, err := l.Read(ctx, "quiet"); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Tail(ctx, "quiet", 0, func(contracts.Entry) (bool, error) { return false, nil }); err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, contracts.LedgerStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Fatalf("%d consumers left on the ledger stream", info.State.Consumers)
	}
}

// TestSameWriterDifferentEntriesStillRace: two different entries from one
// writer name at one position must not be mistaken for a retried publish.
func TestSameWriterDifferentEntriesStillRace(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	a := open(t, srv.JetStream(), ledger.WithWriter("same"))
	b := open(t, srv.JetStream(), ledger.WithWriter("same"))
	if _, err := a.Append(ctx, "r1", 0, entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Text: "drive"})); err != nil {
		t.Fatal(err)
	}
	_, err := b.Append(ctx, "r1", 0, entry(t, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusCancelled}))
	if !ledger.IsConflict(err) {
		t.Fatalf("a different entry at a taken position: %v, want a conflict", err)
	}
}

// TestOutlineFoldsLikeTheWholeLedger: at every length of a run's ledger,
// Fold over its outline (three direct gets) agrees with Fold over the whole
// ledger on what a listing shows.
func TestOutlineFoldsLikeTheWholeLedger(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	l := open(t, srv.JetStream(), ledger.WithWriter("w"))
	if _, err := l.Outline(ctx, "nothing"); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("outline of no run: %v", err)
	}
	es := ledgerFixture(t)
	es = es[:len(es)-1] // nothing is appended after run-finished
	var after, other uint64
	for i, e := range es {
		seq, err := l.Append(ctx, "r1", after, e)
		if err != nil {
			t.Fatal(err)
		}
		after = seq
		// Another run's entries in between must not leak into the outline.
		if other, err = l.Append(ctx, "r2", other, entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: i})); err != nil {
			t.Fatal(err)
		}
		outline, err := l.Outline(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		if want := min(i+1, 3); len(outline) != want {
			t.Fatalf("after %d entries: outline of %d, want %d", i+1, len(outline), want)
		}
		if outline[0].Kind != contracts.KindRunStarted || outline[0].Seq != 1 || outline[len(outline)-1].StreamSeq != seq {
			t.Fatalf("after %d entries: outline %+v", i+1, outline)
		}
		all, err := l.Read(ctx, "r1")
		if err != nil {
			t.Fatal(err)
		}
		got, want := ledger.Fold("r1", outline), ledger.Fold("r1", all)
		if got.Status != want.Status || got.Objective != want.Objective || got.Actor != want.Actor ||
			!got.StartedAt.Equal(want.StartedAt) || !reflect.DeepEqual(got.FinishedAt, want.FinishedAt) ||
			!reflect.DeepEqual(got.GoalVerdict, want.GoalVerdict) || got.StopReason != want.StopReason {
			t.Fatalf("after %d entries: outline folds to %+v, ledger to %+v", i+1, got, want)
		}
	}
}
