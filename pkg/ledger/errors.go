package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotFound is returned when a run has no ledger.
var ErrNotFound = errors.New("ledger: run not found")

// ConflictError reports a lost compare-and-append race: another writer
// appended to the run after the position this writer expected. The loser
// re-reads the ledger and stops driving.
type ConflictError struct {
	RunID string
	// Expected is the stream sequence the writer expected to follow.
	Expected uint64
	// Actual is the run's last stream sequence when the conflict was seen.
	Actual uint64
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("ledger: run %s moved on: expected to follow %d, last is %d", e.RunID, e.Expected, e.Actual)
}

// IsConflict reports whether err is a lost compare-and-append race.
func IsConflict(err error) bool {
	var c *ConflictError
	return errors.As(err, &c)
}

// isWrongLastSequence classifies a JetStream publish error by its code: 10071
// on a single node, 10164 on a replicated stream. Never by message text.
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// JetStream error codes of a write refused for lack of room: the server's or
// the account's storage is used up (10023, 10047, 10002), or the stream's own
// limits refuse new messages (10077, store failed: maximum bytes or messages).
const (
	errCodeInsufficientResources    = 10023
	errCodeStorageResourcesExceeded = 10047
	errCodeAccountResourcesExceeded = 10002
	errCodeStreamStoreFailed        = 10077
)

// IsStorageFull reports whether err is JetStream refusing a write for lack of
// storage. Such a write did not land and may be tried again once there is
// room; a ledger append that fails so is retried, never given up silently.
func IsStorageFull(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	switch apiErr.ErrorCode {
	case errCodeInsufficientResources, errCodeStorageResourcesExceeded,
		errCodeAccountResourcesExceeded, errCodeStreamStoreFailed:
		return true
	}
	return false
}

// JetStream error codes of a stream that cannot take a write now but will:
// the system is temporarily unavailable (10008), the node asked is not the
// leader (10009), the stream is offline (10118), an earlier try with the same
// message id is still being proposed (10158: a retry right after an election
// meets its own first try, whose outcome a later try or the read-back learns).
const (
	errCodeClusterNotAvailable = 10008
	errCodeClusterNotLeader    = 10009
	errCodeStreamOffline       = 10118
	errCodeDuplicateInProcess  = 10158
)

// unanswered reports a publish that got no answer from the stream, or one
// that says the stream cannot take it now (a replicated stream electing a
// leader, a server restarting): it may or may not have landed, and trying
// again later is safe. Classified by type and code, never by text.
func unanswered(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeClusterNotAvailable, errCodeClusterNotLeader, errCodeStreamOffline, errCodeDuplicateInProcess:
			return true
		}
		return false
	}
	return errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrDisconnected) ||
		errors.Is(err, nats.ErrReconnectBufExceeded)
}
