package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
)

// The tokens of the test actors.
const (
	tokAlice = "tok-alice"
	tokBob   = "tok-bob"
	tokAdmin = "tok-admin"
)

var (
	alice = contracts.Actor{ID: "alice", Role: contracts.RoleMember}
	bob   = contracts.Actor{ID: "bob", Role: contracts.RoleMember}
	carol = contracts.Actor{ID: "carol", Role: contracts.RoleAdmin}
)

// env is a gateway on a real embedded NATS server, served by httptest.
type env struct {
	t   *testing.T
	srv *natstest.Server
	ctx context.Context
	nc  *nats.Conn
	js  jetstream.JetStream
	led *ledger.Ledger
	gw  *gateway.Gateway
	url string
}

func discardLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newEnv starts NATS and a gateway with the three test tokens; configure
// adjusts the config first.
func newEnv(t *testing.T, configure ...func(*gateway.Config)) *env {
	t.Helper()
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.Open(ctx, js, ledger.WithWriter("test"))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, srv: srv, ctx: ctx, nc: nc, js: js, led: led}
	return e.another(configure...)
}

// another is a second gateway on the same NATS server (natstest serves one
// server per test).
func (e *env) another(configure ...func(*gateway.Config)) *env {
	e.t.Helper()
	cfg := gateway.Config{
		Listen: "127.0.0.1:0",
		Tokens: map[string]contracts.Actor{tokAlice: alice, tokBob: bob, tokAdmin: carol},
		Logger: discardLogger(),
	}
	for _, f := range configure {
		f(&cfg)
	}
	gw, err := gateway.New(cfg, e.srv.Connect())
	if err != nil {
		e.t.Fatal(err)
	}
	hs := httptest.NewServer(gw.Handler())
	e.t.Cleanup(hs.Close)
	out := *e
	out.gw, out.url = gw, hs.URL
	return &out
}

func (e *env) client(token string) *client.Client { return client.New(e.url, token) }

// serveModel answers the model probe with reply, standing in for modelturn.
func (e *env) serveModel(reply contracts.ModelProbeReply) {
	e.t.Helper()
	e.respond(contracts.SubjectModelProbe, func([]byte) any { return reply })
}

// serveOrchestrator answers run starts with answer and hands every request it
// got to the returned channel.
func (e *env) serveOrchestrator(answer func(contracts.StartRun) contracts.StartRunReply) <-chan contracts.StartRun {
	e.t.Helper()
	got := make(chan contracts.StartRun, 16)
	e.respond(contracts.SubjectRunStart, func(data []byte) any {
		var req contracts.StartRun
		if err := json.Unmarshal(data, &req); err != nil {
			e.t.Errorf("orchestrator: %v", err)
		}
		got <- req
		return answer(req)
	})
	return got
}

// accept is an orchestrator that starts every run as asked.
func accept(req contracts.StartRun) contracts.StartRunReply {
	return contracts.StartRunReply{RunID: req.RunID, Mode: req.Mode, WorkflowType: req.WorkflowType}
}

func (e *env) respond(subject string, answer func([]byte) any) {
	e.t.Helper()
	sub, err := e.nc.QueueSubscribe(subject, "test", func(m *nats.Msg) {
		b, err := json.Marshal(answer(m.Data))
		if err != nil {
			e.t.Errorf("respond %s: %v", subject, err)
			return
		}
		if err := m.Respond(b); err != nil {
			e.t.Errorf("respond %s: %v", subject, err)
		}
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := e.nc.Flush(); err != nil {
		e.t.Fatal(err)
	}
}

// putConnection publishes a descriptor the way an executor does.
func (e *env) putConnection(d contracts.ConnectionDescriptor) {
	e.t.Helper()
	kv, err := e.js.KeyValue(e.ctx, contracts.ConnectionsBucket)
	if err != nil {
		e.t.Fatal(err)
	}
	b, _ := json.Marshal(d)
	if _, err := kv.Put(e.ctx, d.ID, b); err != nil {
		e.t.Fatal(err)
	}
}

// startedRun writes the header and driver entry of a run opened by a.
func (e *env) startedRun(runID string, a contracts.Actor) *ledger.Writer {
	e.t.Helper()
	w := e.led.Writer(runID, 0, nil)
	e.append(w, contracts.KindRunStarted, contracts.RunStarted{
		Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation,
		Objective: "why are orders slow", ConnectionID: "shop", Actor: a,
		Tools: []string{"inspect_schema", "run_read_query", "inspect_plan", "compose_report"},
	})
	e.append(w, contracts.KindDriverResolved, contracts.DriverResolved{Provider: "demo", Model: "replay", Demo: true, Drive: 1})
	return w
}

// finishedRun writes a whole run opened by a: header, one step, the end.
func (e *env) finishedRun(runID string, a contracts.Actor) {
	e.t.Helper()
	w := e.startedRun(runID, a)
	call := contracts.ToolCall{Turn: 1, CallID: "c1", Tool: "run_read_query", Arguments: json.RawMessage(`{"sql":"select 1"}`)}
	e.append(w, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call, StepID: "s1", CorrelationID: "c1"})
	e.append(w, contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: call, StepID: "s1", Outcome: contracts.OutcomeOK,
		Artifact: &contracts.ArtifactSummary{CorrelationID: "c1", Rows: 1}})
	e.append(w, contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed})
}

func (e *env) append(w *ledger.Writer, kind contracts.EventKind, payload any) {
	e.t.Helper()
	if _, err := w.Append(e.ctx, kind, payload); err != nil {
		e.t.Fatal(err)
	}
}

// call sends a raw request and returns the status, header and body.
func (e *env) call(method, path, token, body string) (int, http.Header, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" || method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// wantError checks that a raw answer is the API's error shape with status and code.
func wantError(t *testing.T, status int, body []byte, wantStatus int, wantCode contracts.Code) contracts.Error {
	t.Helper()
	var eb api.ErrorBody
	if err := json.Unmarshal(body, &eb); err != nil {
		t.Fatalf("status %d: body is not the error shape: %v: %s", status, err, body)
	}
	if status != wantStatus || eb.Error.Code != wantCode {
		t.Fatalf("got %d %s (%s), want %d %s", status, eb.Error.Code, eb.Error.Message, wantStatus, wantCode)
	}
	if eb.Error.Message == "" {
		t.Fatalf("%s: empty message", wantCode)
	}
	return eb.Error
}

// apiErr checks that err is an *client.APIError with status and code.
func apiErr(t *testing.T, err error, status int, code contracts.Code) *client.APIError {
	t.Helper()
	var ae *client.APIError
	if !errors.As(err, &ae) {
		t.Fatalf("err = %v, want *client.APIError %d %s", err, status, code)
	}
	if ae.Status != status || ae.Code != code {
		t.Fatalf("got %d %s (%s), want %d %s", ae.Status, ae.Code, ae.Message, status, code)
	}
	return ae
}
