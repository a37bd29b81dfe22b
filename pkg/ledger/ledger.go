// Package ledger stores run ledgers in JetStream and folds them into records.
//
// Every run's ledger is the subject sonde.ledger.<runId> of the one stream
// SONDE_LEDGER. Appends are compare-and-append: the writer states the stream
// sequence of the last entry it saw, so two drivers of one run can never both
// append at the same position; the loser gets a *ConflictError. A run has no
// mutable row anywhere: its record is Fold over its entries.
package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
)

// Ledger reads and appends run ledgers.
type Ledger struct {
	js     jetstream.JetStream
	stream jetstream.Stream
	writer string
	// retryFor bounds how long an append is retried across a stream that
	// does not answer; attempt bounds each try.
	retryFor, attempt time.Duration
}

// Defaults of WithAppendRetry.
const (
	DefaultAppendRetry   = 30 * time.Second
	DefaultAppendAttempt = 5 * time.Second
)

// Option configures a Ledger.
type Option func(*Ledger)

// WithWriter names this writer. The name goes into every message id, so a
// retried append of the same entry is deduplicated while two writers racing
// for one position never are.
func WithWriter(name string) Option { return func(l *Ledger) { l.writer = name } }

// WithAppendRetry bounds how long Append keeps trying an entry while the
// stream does not answer (a replicated stream electing a leader, a server
// restarting): for at most total (default DefaultAppendRetry, negative: no
// retry), each try waiting at most attempt (default DefaultAppendAttempt).
func WithAppendRetry(total, attempt time.Duration) Option {
	return func(l *Ledger) { l.retryFor, l.attempt = total, attempt }
}

// Open binds to the ledger stream, which must already exist (natsx.Resources).
func Open(ctx context.Context, js jetstream.JetStream, opts ...Option) (*Ledger, error) {
	st, err := js.Stream(ctx, contracts.LedgerStream)
	if err != nil {
		return nil, fmt.Errorf("ledger: open stream %s: %w", contracts.LedgerStream, err)
	}
	l := &Ledger{js: js, stream: st, writer: nats.NewInbox()[len(nats.InboxPrefix):]}
	for _, o := range opts {
		o(l)
	}
	if l.retryFor == 0 {
		l.retryFor = DefaultAppendRetry
	}
	if l.attempt <= 0 {
		l.attempt = DefaultAppendAttempt
	}
	return l, nil
}

// Append appends e to run's ledger, provided the run's last entry is at
// stream sequence after (0: the ledger must be empty). It returns the new
// entry's stream sequence. A lost race is a *ConflictError; if the entry
// that won is this writer's own earlier attempt, Append reports success.
//
// A try the stream does not answer (no response from the stream, a
// timeout, JetStream temporarily unavailable or electing a leader) may or
// may not have landed. Append then reads the run's last entry: its
// message id says whether the try landed; if it did not, the same entry is
// published again at the same position, under the same message id, which
// JetStream deduplicates and the expected sequence keeps from landing
// twice. It keeps trying with backoff for the bound WithAppendRetry sets.
func (l *Ledger) Append(ctx context.Context, runID string, after uint64, e contracts.Entry) (uint64, error) {
	if !contracts.ValidRunID(runID) {
		return 0, fmt.Errorf("ledger: invalid run id %q", runID)
	}
	e.RunID = runID
	e.Seq, e.StreamSeq = 0, 0
	body, err := json.Marshal(e)
	if err != nil {
		return 0, fmt.Errorf("ledger: encode entry: %w", err)
	}
	// The id names this exact entry at this position from this writer: a
	// retried publish of it is deduplicated, while any other entry — even one
	// from the same writer — races for the position and can lose.
	sum := sha256.Sum256(body)
	msgID := runID + "." + strconv.FormatUint(after, 10) + "." + l.writer + "." + hex.EncodeToString(sum[:8])
	subject := contracts.LedgerSubject(runID)
	began := time.Now()
	for n := 0; ; n++ {
		seq, err := l.try(ctx, subject, body, after, msgID)
		if err == nil {
			return seq, nil
		}
		if isWrongLastSequence(err) {
			return l.resolve(ctx, runID, subject, after, msgID)
		}
		if !unanswered(err) || ctx.Err() != nil || l.retryFor < 0 || time.Since(began) >= l.retryFor {
			return 0, fmt.Errorf("ledger: append to %s: %w", runID, err)
		}
		// It may have landed: the run's last entry says.
		if seq, landed, err := l.landed(ctx, runID, subject, after, msgID); err != nil || landed {
			return seq, err
		}
		wait := min(100*time.Millisecond<<min(n, 5), 2*time.Second)
		select {
		case <-ctx.Done():
			return 0, fmt.Errorf("ledger: append to %s: %w", runID, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// try publishes the entry once, waiting at most l.attempt.
func (l *Ledger) try(ctx context.Context, subject string, body []byte, after uint64, msgID string) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, l.attempt)
	defer cancel()
	ack, err := l.js.Publish(ctx, subject, body,
		jetstream.WithExpectLastSequencePerSubject(after),
		jetstream.WithMsgID(msgID))
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// resolve answers a publish refused for its expected sequence: success if
// the entry at the run's end is this writer's own (an earlier try landed),
// else a conflict.
func (l *Ledger) resolve(ctx context.Context, runID, subject string, after uint64, msgID string) (uint64, error) {
	last, err := l.stream.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return 0, &ConflictError{RunID: runID, Expected: after}
	}
	if last.Header.Get(jetstream.MsgIDHeader) == msgID {
		return last.Sequence, nil // our own earlier attempt landed
	}
	return 0, &ConflictError{RunID: runID, Expected: after, Actual: last.Sequence}
}

// landed reads the run's last entry after a try nobody answered: landed
// with its sequence if it is this writer's entry, a conflict if another
// entry took the position, neither (try again) if the run still ends at
// after or its end cannot be read now.
func (l *Ledger) landed(ctx context.Context, runID, subject string, after uint64, msgID string) (uint64, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, l.attempt)
	defer cancel()
	last, err := l.stream.GetLastMsgForSubject(rctx, subject)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound) && after == 0:
		return 0, false, nil
	case err != nil:
		return 0, false, nil // not readable either: publish again
	case last.Header.Get(jetstream.MsgIDHeader) == msgID:
		return last.Sequence, true, nil
	case last.Sequence != after:
		return 0, false, &ConflictError{RunID: runID, Expected: after, Actual: last.Sequence}
	}
	return 0, false, nil
}

// Ended reports whether run's ledger ends with run-finished, reading only
// its last entry; ErrNotFound when it has no ledger.
func (l *Ledger) Ended(ctx context.Context, runID string) (bool, error) {
	if !contracts.ValidRunID(runID) {
		return false, ErrNotFound
	}
	m, err := l.stream.GetLastMsgForSubject(ctx, contracts.LedgerSubject(runID))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, ErrNotFound
	}
	if err != nil {
		return false, fmt.Errorf("ledger: last entry of %s: %w", runID, err)
	}
	var e struct {
		Kind contracts.EventKind `json:"kind"`
	}
	if err := json.Unmarshal(m.Data, &e); err != nil {
		return false, fmt.Errorf("ledger: decode last entry of %s: %w", runID, err)
	}
	return e.Kind == contracts.KindRunFinished, nil
}

// Runs lists every run that has a ledger, with its number of entries, in
// one stream-info request (paged by JetStream): what a sweep for runs
// nobody drives walks.
func (l *Ledger) Runs(ctx context.Context) (map[string]uint64, error) {
	info, err := l.stream.Info(ctx, jetstream.WithSubjectFilter(contracts.LedgerSubjects))
	if err != nil {
		return nil, fmt.Errorf("ledger: list runs: %w", err)
	}
	out := make(map[string]uint64, len(info.State.Subjects))
	for subject, n := range info.State.Subjects {
		if id := contracts.RunIDFromLedgerSubject(subject); id != "" {
			out[id] = n
		}
	}
	return out, nil
}

// Check asks JetStream for the ledger stream's state: an error means the
// ledger cannot be read or appended to now.
func (l *Ledger) Check(ctx context.Context) error {
	if _, err := l.stream.Info(ctx); err != nil {
		return fmt.Errorf("ledger: stream %s: %w", contracts.LedgerStream, err)
	}
	return nil
}

// LastSeq returns the stream sequence of run's last entry, or ErrNotFound.
func (l *Ledger) LastSeq(ctx context.Context, runID string) (uint64, error) {
	m, err := l.stream.GetLastMsgForSubject(ctx, contracts.LedgerSubject(runID))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, ErrNotFound
	}
	if err != nil {
		return 0, fmt.Errorf("ledger: last entry of %s: %w", runID, err)
	}
	return m.Sequence, nil
}

// Read returns every entry of run's ledger in order, or ErrNotFound. It walks
// the run's subject with direct gets, so a read leaves no consumer behind.
func (l *Ledger) Read(ctx context.Context, runID string) ([]contracts.Entry, error) {
	if !contracts.ValidRunID(runID) {
		return nil, ErrNotFound
	}
	last, err := l.LastSeq(ctx, runID)
	if err != nil {
		return nil, err
	}
	return l.walk(ctx, runID, last, -1)
}

// walk reads run's entries in order by direct get, up to stream sequence
// last and at most limit of them (negative: no limit).
func (l *Ledger) walk(ctx context.Context, runID string, last uint64, limit int) ([]contracts.Entry, error) {
	subject := contracts.LedgerSubject(runID)
	var out []contracts.Entry
	for seq := uint64(1); seq <= last && len(out) != limit; {
		m, err := l.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(subject))
		if err != nil {
			return nil, fmt.Errorf("ledger: read %s at %d: %w", runID, seq, err)
		}
		e, err := decodeData(m.Data, subject, uint64(len(out)+1), m.Sequence)
		if err != nil {
			return nil, err
		}
		out = append(out, e)
		seq = m.Sequence + 1
	}
	return out, nil
}

// Outline returns the entries of run's ledger that a listing of runs needs,
// in three direct gets whatever the ledger's length: the run-started header,
// the entry after it and the last entry (fewer when the ledger is shorter),
// or ErrNotFound. A run's first drive appends driver-resolved or run-finished
// right after the header and nothing follows run-finished, so Fold over the
// outline agrees with Fold over the whole ledger on the status, the header's
// fields, the start and end times, the stop reason and the goal verdict; the
// steps, spending and report need the whole ledger (Read). The last entry's
// Seq is 0 unless it is one of the first two: its position is not counted.
func (l *Ledger) Outline(ctx context.Context, runID string) ([]contracts.Entry, error) {
	if !contracts.ValidRunID(runID) {
		return nil, ErrNotFound
	}
	subject := contracts.LedgerSubject(runID)
	last, err := l.stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: last entry of %s: %w", runID, err)
	}
	out, err := l.walk(ctx, runID, last.Sequence, 2)
	if err != nil {
		return nil, err
	}
	if out[len(out)-1].StreamSeq == last.Sequence {
		return out, nil
	}
	e, err := decodeData(last.Data, subject, 0, last.Sequence)
	if err != nil {
		return nil, err
	}
	return append(out, e), nil
}

// Tail calls fn for each entry of run's ledger after position from (0: from
// the first), then for every entry appended later, until fn returns false, fn
// fails, or ctx ends. It waits for a ledger that does not exist yet.
func (l *Ledger) Tail(ctx context.Context, runID string, from uint64, fn func(contracts.Entry) (more bool, err error)) error {
	if !contracts.ValidRunID(runID) {
		return ErrNotFound
	}
	return l.each(ctx, runID, from, fn)
}

// each reads the run's subject with an ordered consumer from the start,
// skipping positions up to from.
func (l *Ledger) each(ctx context.Context, runID string, from uint64, fn func(contracts.Entry) (bool, error)) error {
	cons, err := l.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{contracts.LedgerSubject(runID)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		// A tail that ends without cleanup must not linger for the default 5 minutes.
		InactiveThreshold: 10 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("ledger: read %s: %w", runID, err)
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("ledger: read %s: %w", runID, err)
	}
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	defer func() {
		it.Stop()
		// Delete the server-side consumer now rather than at its inactivity threshold.
		if info := cons.CachedInfo(); info != nil {
			dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			_ = l.stream.DeleteConsumer(dctx, info.Name)
			cancel()
		}
	}()
	var pos uint64
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("ledger: read %s: %w", runID, err)
		}
		pos++
		if pos <= from {
			continue
		}
		e, err := decode(msg, pos)
		if err != nil {
			return err
		}
		more, err := fn(e)
		if err != nil || !more {
			return err
		}
	}
}

func decode(msg jetstream.Msg, pos uint64) (contracts.Entry, error) {
	meta, err := msg.Metadata()
	if err != nil {
		return contracts.Entry{}, fmt.Errorf("ledger: entry metadata: %w", err)
	}
	return decodeData(msg.Data(), msg.Subject(), pos, meta.Sequence.Stream)
}

// decodeData decodes a stored entry; position, stream sequence and run id
// come from the stream, never from the payload.
func decodeData(data []byte, subject string, pos, streamSeq uint64) (contracts.Entry, error) {
	var e contracts.Entry
	if err := json.Unmarshal(data, &e); err != nil {
		return e, fmt.Errorf("ledger: decode entry %d of %s: %w", pos, subject, err)
	}
	e.Seq = pos
	e.StreamSeq = streamSeq
	e.RunID = contracts.RunIDFromLedgerSubject(subject)
	return e, nil
}
