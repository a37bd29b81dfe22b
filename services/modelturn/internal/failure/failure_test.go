package failure

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

func TestErrorKeepsVendorTextOutOfItsMessage(t *testing.T) {
	vendor := errors.New("Incorrect API key provided: sk-abc")
	err := fmt.Errorf("turn: %w", New(contracts.ReasonModelUnauthorized, false, "the key was rejected", vendor))
	f := As(err)
	if f.Reason != contracts.ReasonModelUnauthorized || !errors.Is(err, vendor) {
		t.Fatalf("As = %+v", f)
	}
	if strings.Contains(err.Error(), "sk-abc") {
		t.Fatalf("Error() leaks the vendor text: %s", err)
	}
	if m := f.Model(); *m != (contracts.ModelFailure{Reason: contracts.ReasonModelUnauthorized, Message: "the key was rejected"}) {
		t.Fatalf("Model() = %+v", m)
	}
	if got := As(errors.New("plain")); got.Reason != contracts.ReasonInternal || got.Retryable {
		t.Fatalf("unclassified error became %+v", got)
	}
}
