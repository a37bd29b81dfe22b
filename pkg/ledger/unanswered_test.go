package ledger

import (
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
)

// TestUnansweredByCode: the codes of a stream that cannot take a write now —
// an election, an offline stream, a try still being proposed under the same
// message id (seen right after a leader is lost) — are retried; a lost race
// and a full store are not.
func TestUnansweredByCode(t *testing.T) {
	for code, want := range map[jetstream.ErrorCode]bool{
		10008: true, 10009: true, 10118: true, 10158: true,
		10071: false, 10164: false, 10047: false,
	} {
		err := fmt.Errorf("ledger: append: %w", &jetstream.APIError{Code: 503, ErrorCode: code})
		if got := unanswered(err); got != want {
			t.Errorf("code %d: retried %v, want %v", code, got, want)
		}
	}
	if !unanswered(fmt.Errorf("append: %w", jetstream.ErrNoStreamResponse)) {
		t.Error("no response from the stream is not retried")
	}
	if unanswered(errors.New("something else")) {
		t.Error("an unknown error is retried")
	}
}
