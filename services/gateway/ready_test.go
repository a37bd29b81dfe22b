package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// TestReadyNeedsAnExecutorForEveryPublishedConnection: /readyz is 503, with
// the engine and the connections in the reason, while no executor answers
// for a published connection's engine, and 200 once one does (a NATS micro
// service under the executor's name, as services/executor registers).
func TestReadyNeedsAnExecutorForEveryPublishedConnection(t *testing.T) {
	e := newEnv(t)
	e.respond(contracts.SubjectRunHealth, func([]byte) any { return contracts.RunHealth{Ready: true} })
	ready := func() (int, []byte) {
		t.Helper()
		status, _, body := e.call(http.MethodGet, api.PathReady, "", "")
		return status, body
	}
	if status, body := ready(); status != http.StatusOK {
		t.Fatalf("no connection published: %d %s", status, body)
	}

	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	e.putConnection(contracts.ConnectionDescriptor{ID: "crm", Engine: contracts.EngineSQLite, Identity: "id-crm"})
	status, body := ready()
	er := wantError(t, status, body, http.StatusServiceUnavailable, contracts.CodeUnavailable)
	if !strings.Contains(er.Message, "no executor-sqlite is running (connections crm, shop)") || er.Fix == "" {
		t.Fatalf("reason: %+v", er)
	}

	svc, err := micro.AddService(e.srv.Connect(), micro.Config{Name: contracts.QueueExecutorPrefix + string(contracts.EngineSQLite), Version: "0.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	if status, body := ready(); status != http.StatusOK {
		t.Fatalf("with a sqlite executor: %d %s", status, body)
	}

	// An unavailable database keeps the server ready (its executor answers
	// and says why); it shows in detail.
	e.putConnection(contracts.ConnectionDescriptor{ID: "crm", Engine: contracts.EngineSQLite, Identity: "id-crm",
		Status: contracts.ConnectionUnavailable, Reason: "the database file does not exist"})
	if status, body := ready(); status != http.StatusOK || !strings.Contains(string(body), "connection crm (sqlite) is unavailable") {
		t.Fatalf("with an unavailable database: %d %s", status, body)
	}

	if err := svc.Stop(); err != nil {
		t.Fatal(err)
	}
	status, body = ready()
	if er := wantError(t, status, body, http.StatusServiceUnavailable, contracts.CodeUnavailable); !strings.Contains(er.Message, "no executor-sqlite") {
		t.Fatalf("after the executor stopped: %+v", er)
	}
}
