// Package registry reads the connection registry: the NATS KV bucket
// contracts.ConnectionsBucket, where each executor publishes one
// contracts.ConnectionDescriptor per connection it serves, keyed by the
// connection's id. Every reader of the bucket reads it through a Reader, so
// that one rule says which entries are connections.
package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
)

// ErrUnknownConnection is an id no executor has published (or an empty id,
// or one that is no valid key).
var ErrUnknownConnection = errors.New("registry: unknown connection")

// InvalidError is an entry that is not a valid descriptor (see Decode): it
// is no connection anyone can use. Its executor, restarted, publishes it
// again.
type InvalidError struct {
	ID     string
	Reason string
	Err    error // the JSON error, when the entry does not decode
}

func (e *InvalidError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("registry: connection %q has no readable descriptor: %s: %v", e.ID, e.Reason, e.Err)
	}
	return fmt.Sprintf("registry: connection %q has no readable descriptor: %s", e.ID, e.Reason)
}

func (e *InvalidError) Unwrap() error { return e.Err }

// Decode is the one validity rule of an entry: its value is a JSON
// descriptor whose id is the entry's key and which names its engine. A
// descriptor without a status (from an executor older than the field) is
// available, as contracts.ConnectionDescriptor says.
func Decode(key string, value []byte) (contracts.ConnectionDescriptor, error) {
	var d contracts.ConnectionDescriptor
	if err := json.Unmarshal(value, &d); err != nil {
		return contracts.ConnectionDescriptor{}, &InvalidError{ID: key, Reason: "not a JSON descriptor", Err: err}
	}
	switch {
	case d.ID != key:
		return contracts.ConnectionDescriptor{}, &InvalidError{ID: key, Reason: fmt.Sprintf("its id is %q", d.ID)}
	case d.Engine == "":
		return contracts.ConnectionDescriptor{}, &InvalidError{ID: key, Reason: "it names no engine"}
	}
	if d.Status == "" {
		d.Status = contracts.ConnectionAvailable
	}
	return d, nil
}

// Reader reads descriptors from the registry bucket.
type Reader struct {
	kv  jetstream.KeyValue
	log *slog.Logger
}

// New reads the registry in kv (the contracts.ConnectionsBucket bucket).
// List logs the entries it skips to log; nil discards them.
func New(kv jetstream.KeyValue, log *slog.Logger) *Reader {
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Reader{kv: kv, log: log}
}

// Get returns the descriptor of connection id: ErrUnknownConnection when
// none is published, an *InvalidError when the entry is not a valid
// descriptor, or the bucket's error when it cannot be read.
func (r *Reader) Get(ctx context.Context, id string) (contracts.ConnectionDescriptor, error) {
	if strings.TrimSpace(id) == "" {
		return contracts.ConnectionDescriptor{}, ErrUnknownConnection
	}
	e, err := r.kv.Get(ctx, id)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrInvalidKey):
		return contracts.ConnectionDescriptor{}, fmt.Errorf("%w: %q", ErrUnknownConnection, id)
	case err != nil:
		return contracts.ConnectionDescriptor{}, fmt.Errorf("registry: read connection %q: %w", id, err)
	}
	return Decode(id, e.Value())
}

// List returns every valid descriptor, sorted by id (an empty list, never
// nil, when there is none). An entry that is not valid is skipped (and
// logged): it is no connection, as Get says.
func (r *Reader) List(ctx context.Context) ([]contracts.ConnectionDescriptor, error) {
	lister, err := r.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("registry: list connections: %w", err)
	}
	defer lister.Stop()
	out := []contracts.ConnectionDescriptor{}
	for key := range lister.Keys() {
		d, err := r.Get(ctx, key)
		var invalid *InvalidError
		switch {
		case errors.Is(err, ErrUnknownConnection):
			continue // deleted since it was listed
		case errors.As(err, &invalid):
			r.log.Warn("skipping an invalid connection descriptor", "connection", key, "err", err)
			continue
		case err != nil:
			return nil, err
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b contracts.ConnectionDescriptor) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
