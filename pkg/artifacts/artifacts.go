// Package artifacts stores the full results of executor reads in the
// JetStream object store contracts.ArtifactsBucket, one JSON object per
// result under contracts.ArtifactKey(runID, correlationID).
//
// Executors write artifacts; the gateway and the orchestrator read them back
// by run and correlation id. The bucket itself (storage, TTL) is declared by
// natsx.Resources.Ensure; this package only reads and writes objects in it.
package artifacts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
)

// Store reads and writes artifacts. It is safe for concurrent use.
type Store struct {
	obj jetstream.ObjectStore
}

// New opens the artifacts object store. The bucket must already exist
// (natsx.Resources.Ensure creates it).
func New(ctx context.Context, js jetstream.JetStream) (*Store, error) {
	obj, err := js.ObjectStore(ctx, contracts.ArtifactsBucket)
	if err != nil {
		return nil, fmt.Errorf("artifacts: open object store %s: %w", contracts.ArtifactsBucket, err)
	}
	return &Store{obj: obj}, nil
}

// Put stores a in full, as JSON, under contracts.ArtifactKey(a.RunID,
// a.CorrelationID), replacing any artifact stored under the same key.
func (s *Store) Put(ctx context.Context, a contracts.Artifact) error {
	if err := checkKey(a.RunID, a.CorrelationID); err != nil {
		return err
	}
	data, err := json.Marshal(a)
	if err != nil {
		return fmt.Errorf("artifacts: encode %s: %w", a.CorrelationID, err)
	}
	key := contracts.ArtifactKey(a.RunID, a.CorrelationID)
	if _, err := s.obj.PutBytes(ctx, key, data); err != nil {
		return fmt.Errorf("artifacts: put %s: %w", key, err)
	}
	return nil
}

// Get reads the artifact stored under contracts.ArtifactKey(runID,
// correlationID). An artifact that was never stored, or whose TTL has passed,
// is reported as ErrNotFound.
func (s *Store) Get(ctx context.Context, runID, correlationID string) (contracts.Artifact, error) {
	if err := checkKey(runID, correlationID); err != nil {
		return contracts.Artifact{}, err
	}
	key := contracts.ArtifactKey(runID, correlationID)
	data, err := s.obj.GetBytes(ctx, key)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return contracts.Artifact{}, fmt.Errorf("artifacts: %s: %w", key, ErrNotFound)
		}
		return contracts.Artifact{}, fmt.Errorf("artifacts: get %s: %w", key, err)
	}
	var a contracts.Artifact
	if err := json.Unmarshal(data, &a); err != nil {
		return contracts.Artifact{}, fmt.Errorf("artifacts: decode %s: %w", key, err)
	}
	return a, nil
}

// checkKey rejects run and correlation ids that cannot name an artifact: both
// are tokens (letters, digits, '-' and '_'), the run id optional.
func checkKey(runID, correlationID string) error {
	if runID != "" && !contracts.ValidRunID(runID) {
		return fmt.Errorf("artifacts: run id %q: %w", runID, ErrInvalidKey)
	}
	if !ValidCorrelationID(correlationID) {
		return fmt.Errorf("artifacts: correlation id %q: %w", correlationID, ErrInvalidKey)
	}
	return nil
}

// ValidCorrelationID reports whether id can name an artifact: non-empty, at
// most 64 characters, only letters, digits, '-' and '_'.
func ValidCorrelationID(id string) bool {
	// The same token rule as a run id: both end up in an object name.
	return contracts.ValidRunID(id)
}
