package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// TestQueryTimeoutsSayWhetherTheStatementMayHaveRun (issue 19, item 4): a
// read that no executor received, one the executor received and never
// answered, and one the database stopped at its timeout are three different
// answers, told apart by status and code. Before, the unanswered read and
// the database's timeout were the same 504 DB_TIMEOUT, so a client could
// not tell a statement that certainly ran (and was stopped) from one that
// may still be running; and the 503 never said that nothing ran.
func TestQueryTimeoutsSayWhetherTheStatementMayHaveRun(t *testing.T) {
	e := newEnv(t)
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EnginePostgres, Status: contracts.ConnectionAvailable})
	const body = `{"connectionId":"shop","sql":"select 1","timeoutMs":1}`

	// Nobody serves the engine: the read reached no executor.
	status, _, b := e.call(http.MethodPost, api.PathQuery, tokAlice, body)
	got := wantError(t, status, b, http.StatusServiceUnavailable, contracts.CodeUnavailable)
	if !strings.Contains(got.Message, "did not run") {
		t.Errorf("a read no executor received is answered %q, which does not say it did not run", got.Message)
	}

	// An executor takes the read and never answers: it may have run, and
	// the gateway, giving up, tells the executor to stop it.
	cancels := make(chan contracts.ExecCancel, 1)
	csub, err := e.nc.Subscribe(contracts.ExecCancelSubject(contracts.EnginePostgres), func(m *nats.Msg) {
		var c contracts.ExecCancel
		_ = json.Unmarshal(m.Data, &c)
		cancels <- c
	})
	if err != nil {
		t.Fatal(err)
	}
	defer csub.Unsubscribe()
	reads := make(chan contracts.ExecRequest, 1)
	silent, err := e.nc.QueueSubscribe(contracts.ExecSubject(contracts.EnginePostgres, contracts.OpRead), "executor-postgres", func(m *nats.Msg) {
		var r contracts.ExecRequest
		_ = json.Unmarshal(m.Data, &r)
		reads <- r
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.nc.Flush(); err != nil {
		t.Fatal(err)
	}
	status, _, b = e.call(http.MethodPost, api.PathQuery, tokAlice, body)
	got = wantError(t, status, b, http.StatusGatewayTimeout, api.CodeExecutorUnanswered)
	if !strings.Contains(got.Message, "may have run") {
		t.Errorf("an unanswered read is answered %q, which does not say it may have run", got.Message)
	}
	read := <-reads
	if c := <-cancels; c.StepID == "" || c.StepID != read.StepID {
		t.Errorf("cancel for step %q, want the unanswered read's %q", c.StepID, read.StepID)
	}
	_ = silent.Unsubscribe()

	// The executor answers that the database stopped the statement at its
	// timeout: it ran, and was stopped.
	e.respond(contracts.ExecSubject(contracts.EnginePostgres, contracts.OpRead), func([]byte) any {
		return contracts.ExecReply{Status: contracts.ExecError,
			Error: &contracts.DBError{Class: contracts.DBTimeout, Message: "canceling statement due to statement timeout"}}
	})
	status, _, b = e.call(http.MethodPost, api.PathQuery, tokAlice, body)
	wantError(t, status, b, http.StatusGatewayTimeout, contracts.CodeDBTimeout)
}
