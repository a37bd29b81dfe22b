package natstest

import (
	"context"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

func TestStartDeclaresResources(t *testing.T) {
	s := Start(t)
	js := s.JetStream()
	ctx := context.Background()
	for _, name := range []string{contracts.LedgerStream, contracts.HistoryStream} {
		if _, err := js.Stream(ctx, name); err != nil {
			t.Errorf("stream %s: %v", name, err)
		}
	}
	for _, b := range []string{contracts.ConnectionsBucket, contracts.LeasesBucket} {
		if _, err := js.KeyValue(ctx, b); err != nil {
			t.Errorf("bucket %s: %v", b, err)
		}
	}
	if _, err := js.ObjectStore(ctx, contracts.ArtifactsBucket); err != nil {
		t.Errorf("object store: %v", err)
	}
	if s.ClientURL() == "" {
		t.Error("server does not listen on loopback")
	}
}

func TestTwoServersAtOnce(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.ClientURL() == b.ClientURL() {
		t.Fatalf("both servers listen on %s", a.ClientURL())
	}
}
