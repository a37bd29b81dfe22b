package registry_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/registry"
)

// TestOneValidityRule: Get and List read an entry by the one rule: a JSON
// descriptor whose id is its key and which names its engine. Get answers an
// invalid entry with an *InvalidError and List leaves it out; an id never
// published is ErrUnknownConnection; a descriptor without a status is
// available.
func TestOneValidityRule(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	kv, err := srv.JetStream().KeyValue(ctx, contracts.ConnectionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	put := func(key string, v any) {
		t.Helper()
		b, ok := v.([]byte)
		if !ok {
			b, _ = json.Marshal(v)
		}
		if _, err := kv.Put(ctx, key, b); err != nil {
			t.Fatal(err)
		}
	}
	put("shop", contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EnginePostgres, Identity: "i1", Status: contracts.ConnectionUnavailable, Reason: "down"})
	put("demo", contracts.ConnectionDescriptor{ID: "demo", Engine: contracts.EngineSQLite, Identity: "i2"})
	invalid := map[string]any{
		"garbled":    []byte(`{"id":"garbled",`),
		"engineless": contracts.ConnectionDescriptor{ID: "engineless", Identity: "i3"},
		"misfiled":   contracts.ConnectionDescriptor{ID: "elsewhere", Engine: contracts.EngineSQLite},
		"idless":     contracts.ConnectionDescriptor{Engine: contracts.EngineDuckDB},
	}
	for k, v := range invalid {
		put(k, v)
	}
	reg := registry.New(kv, nil)

	list, err := reg.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "demo" || list[1].ID != "shop" {
		t.Fatalf("List = %+v, want demo and shop only", list)
	}
	if list[0].Status != contracts.ConnectionAvailable || list[1].Status != contracts.ConnectionUnavailable || list[1].Reason != "down" {
		t.Errorf("statuses %q %q (%q)", list[0].Status, list[1].Status, list[1].Reason)
	}
	for _, want := range list {
		got, err := reg.Get(ctx, want.ID)
		if err != nil || got.ID != want.ID || got.Engine != want.Engine || got.Status != want.Status {
			t.Errorf("Get(%s) = %+v, %v; List had %+v", want.ID, got, err, want)
		}
	}
	for k := range invalid {
		_, err := reg.Get(ctx, k)
		var ie *registry.InvalidError
		if !errors.As(err, &ie) || ie.ID != k || errors.Is(err, registry.ErrUnknownConnection) {
			t.Errorf("Get(%s) = %v, want an *InvalidError", k, err)
		}
	}
	for _, id := range []string{"nobody", "", "  ", "a.b*"} {
		if _, err := reg.Get(ctx, id); !errors.Is(err, registry.ErrUnknownConnection) {
			t.Errorf("Get(%q) = %v, want ErrUnknownConnection", id, err)
		}
	}
}
