package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
)

// BenchmarkAppend measures one compare-and-append on the embedded file store
// (the sync interval of natsx.DefaultSyncInterval), as a drive appends.
func BenchmarkAppend(b *testing.B) {
	srv := natstest.Start(b)
	l, err := ledger.Open(context.Background(), srv.JetStream())
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	w := l.Writer("bench", 0, nil)
	payload := contracts.ToolCompleted{ToolCall: contracts.ToolCall{Turn: 1, CallID: "c", Tool: "run_read_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)},
		StepID: "s", Outcome: contracts.OutcomeOK, Content: "Result stored as …"}
	for b.Loop() {
		if _, err := w.Append(ctx, contracts.KindToolCompleted, payload); err != nil {
			b.Fatal(err)
		}
	}
}

// syntheticRun is a ledger of n tool steps with the shape a drive writes.
func syntheticRun(n int) []contracts.Entry {
	at := time.Unix(1700000000, 0)
	mk := func(kind contracts.EventKind, p any) contracts.Entry {
		e, _ := contracts.NewEntry("r", kind, at, p)
		return e
	}
	es := []contracts.Entry{mk(contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, Objective: "o", Actor: contracts.Actor{ID: "a"}})}
	for i := range n {
		call := contracts.ToolCall{Turn: i + 1, CallID: fmt.Sprint("c", i), Tool: "run_read_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)}
		step := fmt.Sprint("s", i)
		es = append(es,
			mk(contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call, StepID: step, CorrelationID: "c" + step}),
			mk(contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: call, StepID: step, Outcome: contracts.OutcomeOK,
				Artifact: &contracts.ArtifactSummary{CorrelationID: "c" + step, Rows: 10}, Content: "rows…"}))
	}
	for i := range es {
		es[i].Seq, es[i].StreamSeq = uint64(i+1), uint64(i+1)
	}
	return es
}

// BenchmarkFold folds a run of 30 steps (61 entries): the largest
// investigation the statement budget allows.
func BenchmarkFold(b *testing.B) {
	es := syntheticRun(30)
	for b.Loop() {
		if r := ledger.Fold("r", es); len(r.Steps) != 30 {
			b.Fatal("bad fold")
		}
	}
}

// BenchmarkRead reads a 61-entry ledger back from the stream.
func BenchmarkRead(b *testing.B) {
	srv := natstest.Start(b)
	ctx := context.Background()
	l, err := ledger.Open(ctx, srv.JetStream())
	if err != nil {
		b.Fatal(err)
	}
	w := l.Writer("read", 0, nil)
	for _, e := range syntheticRun(30) {
		if _, err := l.Append(ctx, "read", w.Last(), e); err != nil {
			b.Fatal(err)
		}
		last, _ := l.LastSeq(ctx, "read")
		w = l.Writer("read", last, nil)
	}
	for b.Loop() {
		es, err := l.Read(ctx, "read")
		if err != nil || len(es) != 61 {
			b.Fatalf("read %d entries: %v", len(es), err)
		}
	}
}
