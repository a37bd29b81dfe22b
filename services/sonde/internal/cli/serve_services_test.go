package cli

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/api"
)

// allInProcess is every service of serve, built in this process on nc with
// the gateway on listen.
func allInProcess(t *testing.T, nc *nats.Conn, listen string) (*serviceList, []unit) {
	t.Helper()
	demo, err := ensureDemo(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	b := &serviceList{
		o:   serveOptions{execMemMB: executor.DefaultMemoryBudget >> 20, threadCtx: true, contextMax: 6000, capturesMax: 8},
		log: slog.New(slog.DiscardHandler), nc: nc, conns: []connections.Connection{demo},
		gwCfg: gateway.Config{Listen: listen, Logger: slog.New(slog.DiscardHandler)},
	}
	list, err := b.build([]string{executor.ServiceName(contracts.EngineSQLite), svcModelTurn, svcOrchestrator, svcGateway})
	if err != nil {
		t.Fatal(err)
	}
	return b, list
}

// answered reports whether subject has a responder, by the outcome of a
// request: no responders, or any reply.
func answered(t *testing.T, nc *nats.Conn, subject string) bool {
	t.Helper()
	_, err := nc.Request(subject, []byte("{}"), 5*time.Second)
	if errors.Is(err, nats.ErrNoResponders) {
		return false
	}
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	return true
}

// subjects has one subject each of the executor, modelturn and the
// orchestrator serve.
var subjects = []string{contracts.ExecSubject(contracts.EngineSQLite, contracts.OpSchema), contracts.SubjectModelProbe, contracts.SubjectRunHealth}

// TestStartFailureStopsTheServicesStarted: the gateway, started last, cannot
// listen; runServices returns its error, never reports serving, and has
// stopped every service it started before, last started first.
func TestStartFailureStopsTheServicesStarted(t *testing.T) {
	srv := natstest.Start(t)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	_, list := allInProcess(t, srv.Connect(), taken.Addr().String())
	var stops []string
	record := func(name string) unit {
		return unit{name: name, svc: step{stop: func(context.Context) error { stops = append(stops, name); return nil }}}
	}
	list = append([]unit{record("first")}, list...)
	list = append(list[:len(list)-1], record("before the gateway"), list[len(list)-1])

	err = runServices(context.Background(), slog.New(slog.DiscardHandler), list, func() { t.Error("serving reported after a start failed") })
	if err == nil {
		t.Fatal("runServices started a gateway on an address in use")
	}
	if len(stops) != 2 || stops[0] != "before the gateway" || stops[1] != "first" {
		t.Fatalf("stopped %v, want the last started first", stops)
	}
	client := srv.Connect()
	for _, subject := range subjects {
		if answered(t, client, subject) {
			t.Errorf("%s is still served after the start failed", subject)
		}
	}
}

// TestServicesServeUntilTheContextEnds: every service serves once serving is
// reported; when ctx ends runServices stops them all and returns nil.
func TestServicesServeUntilTheContextEnds(t *testing.T) {
	srv := natstest.Start(t)
	_, list := allInProcess(t, srv.Connect(), "127.0.0.1:0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	serving := make(chan struct{})
	done := make(chan error, 1)
	go func() { done <- runServices(ctx, slog.New(slog.DiscardHandler), list, func() { close(serving) }) }()
	select {
	case <-serving:
	case err := <-done:
		t.Fatalf("runServices ended before serving: %v", err)
	}
	client := srv.Connect()
	for _, subject := range subjects {
		if !answered(t, client, subject) {
			t.Errorf("%s is not served", subject)
		}
	}
	gw := list[len(list)-1].svc.(*gateway.Gateway)
	health := "http://" + gw.Addr().String() + api.PathHealth
	resp, err := http.Get(health)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("runServices after its context ended: %v", err)
	}
	for _, subject := range subjects {
		if answered(t, client, subject) {
			t.Errorf("%s is still served after shutdown", subject)
		}
	}
	if _, err := http.Get(health); err == nil {
		t.Error("the gateway still answers after shutdown")
	}
}
