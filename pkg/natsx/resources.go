package natsx

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
)

// DefaultArtifactTTL is how long a stored result is kept.
const DefaultArtifactTTL = 24 * time.Hour

// Resources declares every stream, bucket and object store Sonde uses. It is
// idempotent: each service calls it at start so any subset can start first.
type Resources struct {
	// Memory keeps everything in memory (tests); the default is the file store.
	Memory bool
	// ArtifactTTL overrides DefaultArtifactTTL.
	ArtifactTTL time.Duration
	// Replicas is the replica count of every stream, bucket and object store
	// (1 when zero). Every process applies the declaration at start, so a
	// cluster must give every process the same count.
	Replicas int
}

// Ensure creates or updates the streams, buckets and object stores.
func (r Resources) Ensure(ctx context.Context, js jetstream.JetStream) error {
	storage := jetstream.FileStorage
	if r.Memory {
		storage = jetstream.MemoryStorage
	}
	ttl := r.ArtifactTTL
	if ttl == 0 {
		ttl = DefaultArtifactTTL
	}
	replicas := max(r.Replicas, 1)
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        contracts.LedgerStream,
		Description: "Sonde run ledgers: one subject per run",
		Subjects:    []string{contracts.LedgerSubjects},
		Storage:     storage,
		Replicas:    replicas,
		Retention:   jetstream.LimitsPolicy,
		// Ledgers are append-only audit records: never discard new entries
		// silently, and allow direct get for cheap reads.
		Discard:     jetstream.DiscardNew,
		AllowDirect: true,
		Duplicates:  2 * time.Minute,
	}); err != nil {
		return fmt.Errorf("natsx: ensure stream %s: %w", contracts.LedgerStream, err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        contracts.HistoryStream,
		Description: "Sonde per-actor run history: one pointer per finished run",
		Subjects:    []string{contracts.HistorySubjects},
		Storage:     storage,
		Replicas:    replicas,
		AllowDirect: true,
	}); err != nil {
		return fmt.Errorf("natsx: ensure stream %s: %w", contracts.HistoryStream, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      contracts.ConnectionsBucket,
		Description: "Connection descriptors (no secrets), written by executors",
		Storage:     storage,
		Replicas:    replicas,
	}); err != nil {
		return fmt.Errorf("natsx: ensure bucket %s: %w", contracts.ConnectionsBucket, err)
	}
	if _, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      contracts.LeasesBucket,
		Description: "Drive claims of running runs",
		Storage:     storage,
		Replicas:    replicas,
	}); err != nil {
		return fmt.Errorf("natsx: ensure bucket %s: %w", contracts.LeasesBucket, err)
	}
	if _, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{
		Bucket:      contracts.ArtifactsBucket,
		Description: "Full results of executor reads",
		Storage:     storage,
		Replicas:    replicas,
		TTL:         ttl,
	}); err != nil && !errors.Is(err, jetstream.ErrBucketExists) {
		return fmt.Errorf("natsx: ensure object store %s: %w", contracts.ArtifactsBucket, err)
	}
	return nil
}
