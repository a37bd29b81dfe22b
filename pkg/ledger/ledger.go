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
}

// Option configures a Ledger.
type Option func(*Ledger)

// WithWriter names this writer. The name goes into every message id, so a
// retried append of the same entry is deduplicated while two writers racing
// for one position never are.
func WithWriter(name string) Option { return func(l *Ledger) { l.writer = name } }

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
	return l, nil
}

// Append appends e to run's ledger, provided the run's last entry is at
// stream sequence after (0: the ledger must be empty). It returns the new
// entry's stream sequence. A lost race is a *ConflictError; if the entry
// that won is this writer's own earlier attempt, Append reports success.
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
	ack, err := l.js.Publish(ctx, subject, body,
		jetstream.WithExpectLastSequencePerSubject(after),
		jetstream.WithMsgID(msgID))
	if err == nil {
		return ack.Sequence, nil
	}
	if !isWrongLastSequence(err) {
		return 0, fmt.Errorf("ledger: append to %s: %w", runID, err)
	}
	last, lerr := l.stream.GetLastMsgForSubject(ctx, subject)
	if lerr != nil {
		return 0, &ConflictError{RunID: runID, Expected: after}
	}
	if last.Header.Get(jetstream.MsgIDHeader) == msgID {
		return last.Sequence, nil // our own earlier attempt landed
	}
	return 0, &ConflictError{RunID: runID, Expected: after, Actual: last.Sequence}
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
