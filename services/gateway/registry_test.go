package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// TestAnInvalidRegistryEntryIsNoConnectionAnywhere (issue 19, item 5): an
// entry of the connection registry that is not a valid descriptor (not
// JSON, no engine, an id other than its key) is no connection for any
// reader: the list leaves it out, /readyz does not wait for an executor of
// it, a read on it and a run on it are both refused 503 as unreadable, and
// the start never reaches the orchestrator. Before, each reader had its own
// rule: the list kept a descriptor without an engine (and /readyz then
// waited for "executor-"), a read took one whose id was not its key, and a
// start ignored a JSON error and counted the connection available.
func TestAnInvalidRegistryEntryIsNoConnectionAnywhere(t *testing.T) {
	for name, value := range map[string]string{
		"not json":     `{"id":"shop","engine":`,
		"no engine":    `{"id":"shop","identity":"x"}`,
		"another id":   `{"id":"crm","engine":"sqlite","identity":"x"}`,
		"no id at all": `{"engine":"sqlite","identity":"x"}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := readyEnv(t)
			e.respond(contracts.SubjectRunHealth, func([]byte) any { return contracts.RunHealth{Ready: true} })
			got := e.serveOrchestrator(accept)
			e.putRaw("shop", value)

			conns, err := e.client(tokAlice).Connections(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(conns) != 0 {
				t.Errorf("the list has %+v", conns)
			}
			if status, _, body := e.call(http.MethodGet, api.PathReady, "", ""); status != http.StatusOK {
				t.Errorf("/readyz waits for an executor of the invalid entry: %d %s", status, body)
			}

			status, _, body := e.call(http.MethodPost, api.PathQuery, tokAlice, `{"connectionId":"shop","sql":"select 1"}`)
			read := wantError(t, status, body, http.StatusServiceUnavailable, contracts.CodeUnavailable)
			status, _, body = e.call(http.MethodPost, api.PathRuns, tokAlice, `{"objective":"x","connectionId":"shop"}`)
			run := wantError(t, status, body, http.StatusServiceUnavailable, contracts.CodeUnavailable)
			if read.Message != run.Message || !strings.Contains(run.Message, `"shop"`) {
				t.Errorf("a read is told %q, a run %q: want the one answer naming the connection", read.Message, run.Message)
			}
			select {
			case req := <-got:
				t.Errorf("a start on an invalid entry reached the orchestrator: %+v", req)
			default:
			}
		})
	}
}

// putRaw writes value under key in the registry, as no executor would.
func (e *env) putRaw(key, value string) {
	e.t.Helper()
	kv, err := e.js.KeyValue(e.ctx, contracts.ConnectionsBucket)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := kv.Put(e.ctx, key, []byte(value)); err != nil {
		e.t.Fatal(err)
	}
}
