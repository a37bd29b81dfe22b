package natsx_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natsx"
)

func TestEnsureCreatesMissingAndLeavesExisting(t *testing.T) {
	e, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	nc, err := e.Connect(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	// Only the named resources; none for modelturn.
	if err := (natsx.Resources{Only: natsx.Needs("modelturn")}).Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx, contracts.LedgerStream); err == nil {
		t.Fatal("Ensure for modelturn created the ledger")
	}
	if err := (natsx.Resources{Only: natsx.Needs("executor-sqlite")}).Ensure(ctx, js); err != nil {
		t.Fatal(err)
	}
	if _, err := js.KeyValue(ctx, contracts.ConnectionsBucket); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Stream(ctx, contracts.LedgerStream); err == nil {
		t.Fatal("Ensure for an executor created the ledger")
	}

	// All of them, twice (idempotent).
	for range 2 {
		if err := (natsx.Resources{Admin: true}).Ensure(ctx, js); err != nil {
			t.Fatal(err)
		}
	}

	// A process that is not the admin leaves an existing resource as it is:
	// three replicas cannot be applied on a single node, so an update would
	// fail.
	if err := (natsx.Resources{Replicas: 3}).Ensure(ctx, js); err != nil {
		t.Fatalf("non-admin Ensure updated an existing resource: %v", err)
	}
	if err := (natsx.Resources{Replicas: 3, Admin: true}).Ensure(ctx, js); err == nil {
		t.Fatal("admin Ensure with 3 replicas on a single node succeeded; it did not update")
	}
}
