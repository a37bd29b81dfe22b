package ledger

import (
	"context"
	"time"

	"github.com/sondehq/sonde/contracts"
)

// Writer appends to one run's ledger, remembering the position it follows.
// It is not safe for concurrent use: a run has one driver at a time.
type Writer struct {
	l     *Ledger
	runID string
	last  uint64
	now   func() time.Time
}

// Writer returns a writer for run that follows stream sequence last (0 for a
// new ledger; a resumed drive passes the sequence of the last entry it read).
func (l *Ledger) Writer(runID string, last uint64, now func() time.Time) *Writer {
	if now == nil {
		now = time.Now
	}
	return &Writer{l: l, runID: runID, last: last, now: now}
}

// Append encodes payload as an entry of kind and appends it after the last
// entry this writer saw. On a *ConflictError the writer must stop.
func (w *Writer) Append(ctx context.Context, kind contracts.EventKind, payload any) (contracts.Entry, error) {
	e, err := contracts.NewEntry(w.runID, kind, w.now(), payload)
	if err != nil {
		return e, err
	}
	seq, err := w.l.Append(ctx, w.runID, w.last, e)
	if err != nil {
		return e, err
	}
	w.last = seq
	e.StreamSeq = seq
	return e, nil
}

// Last is the stream sequence of the last entry this writer appended or followed.
func (w *Writer) Last() uint64 { return w.last }
