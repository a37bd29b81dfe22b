package artifacts

import "errors"

var (
	// ErrNotFound reports that no artifact is stored under the key asked for:
	// it was never stored, or its TTL has passed.
	ErrNotFound = errors.New("artifact not found")
	// ErrInvalidKey reports a run or correlation id that cannot name an
	// artifact.
	ErrInvalidKey = errors.New("invalid artifact key")
)
