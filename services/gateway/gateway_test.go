package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
)

func TestParseTokens(t *testing.T) {
	got, err := gateway.ParseTokens(" t1=alice:admin, t2 = bob:member ")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]contracts.Actor{"t1": {ID: "alice", Role: contracts.RoleAdmin}, "t2": {ID: "bob", Role: contracts.RoleMember}}
	if len(got) != len(want) || got["t1"] != want["t1"] || got["t2"] != want["t2"] {
		t.Fatalf("got %v, want %v", got, want)
	}
	if got, err := gateway.ParseTokens("  "); err != nil || len(got) != 0 {
		t.Fatalf("blank: %v, %v", got, err)
	}
	for _, bad := range []string{
		"secret",                               // no '='
		"secret=alice",                         // no role
		"secret=alice:owner",                   // unknown role
		"secret=:admin",                        // no actor
		"=alice:admin",                         // no token
		"secret=alice:admin,",                  // empty entry
		"secret=alice:admin,secret=bob:member", // repeated token
		"sec ret=alice:admin",                  // space in token
	} {
		_, err := gateway.ParseTokens(bad)
		var te *gateway.TokenError
		if !errors.As(err, &te) {
			t.Errorf("%q: err = %v, want *TokenError", bad, err)
			continue
		}
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: error repeats the token: %v", bad, err)
		}
	}
}

func TestNewRefusesPublicListenWithoutTokens(t *testing.T) {
	nc := natstest.Start(t).Connect()
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "192.168.1.10:80", "example.com:80"} {
		_, err := gateway.New(gateway.Config{Listen: addr}, nc)
		var le *gateway.InsecureListenError
		if !errors.As(err, &le) || le.Listen != addr {
			t.Errorf("%s: err = %v, want *InsecureListenError", addr, err)
		}
	}
	for _, addr := range []string{"", "127.0.0.1:0", "localhost:8080", "[::1]:8080"} {
		if _, err := gateway.New(gateway.Config{Listen: addr}, nc); err != nil {
			t.Errorf("%s: %v", addr, err)
		}
	}
	tokens := map[string]contracts.Actor{"t": alice}
	if _, err := gateway.New(gateway.Config{Listen: "0.0.0.0:8080", Tokens: tokens}, nc); err != nil {
		t.Errorf("with tokens: %v", err)
	}
	if _, err := gateway.New(gateway.Config{}, nil); !errors.Is(err, gateway.ErrNoConn) {
		t.Errorf("no conn: err = %v", err)
	}
}

func TestStartListensAndStopShutsDown(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.Tokens = nil })
	gw, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", Logger: discardLogger()}, e.srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	base := "http://" + gw.Addr().String()
	resp, err := http.Get(base + api.PathHealth)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}

	// A live stream must not hold the shutdown up.
	e.startedRun("live", contracts.Actor{ID: "local", Role: contracts.RoleAdmin})
	streaming := make(chan struct{})
	streamDone := make(chan error, 1)
	go func() {
		streamDone <- client.New(base, "").Stream(context.Background(), "live", 0, func(en contracts.Entry) error {
			if en.Kind == contracts.KindRunStarted {
				close(streaming)
			}
			return nil
		})
	}()
	<-streaming
	if err := gw.Stop(context.Background()); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := <-streamDone; err != nil {
		t.Fatalf("stream after shutdown: %v", err)
	}
	if err := gw.Stop(context.Background()); err != nil {
		t.Fatalf("Stop again: %v", err)
	}
	if _, err := http.Get(base + api.PathHealth); err == nil {
		t.Fatal("a stopped gateway still answers")
	}
}

func TestHealthAndReady(t *testing.T) {
	e := newEnv(t)
	if status, _, _ := e.call(http.MethodGet, api.PathHealth, "", ""); status != http.StatusOK {
		t.Fatalf("healthz without a token: %d", status)
	}
	// With no orchestrator a run cannot start, and readiness says so.
	status, _, body := e.call(http.MethodGet, api.PathReady, "", "")
	if er := wantError(t, status, body, http.StatusServiceUnavailable, contracts.CodeUnavailable); !strings.Contains(er.Message, "no orchestrator") {
		t.Fatalf("readyz without an orchestrator: %q", er.Message)
	}
	e.respond(contracts.SubjectRunHealth, func([]byte) any { return contracts.RunHealth{Ready: true} })
	if status, _, body := e.call(http.MethodGet, api.PathReady, "", ""); status != http.StatusOK {
		t.Fatalf("readyz: %d %s", status, body)
	}

	notReady := e.another(func(c *gateway.Config) {
		c.Ready = func(context.Context) error { return errors.New("executors not registered") }
	})
	status, _, body = notReady.call(http.MethodGet, api.PathReady, "", "")
	er := wantError(t, status, body, http.StatusServiceUnavailable, contracts.CodeUnavailable)
	if !strings.Contains(er.Message, "executors not registered") {
		t.Fatalf("readyz does not say why: %q", er.Message)
	}
}

func TestUnauthorized(t *testing.T) {
	e := newEnv(t)
	e.finishedRun("r1", alice)
	routes := []struct{ method, path, body string }{
		{http.MethodGet, api.PathConfig, ""},
		{http.MethodPost, api.PathRuns, `{"objective":"x","connectionId":"shop"}`},
		{http.MethodGet, api.RunPath("r1"), ""},
		{http.MethodDelete, api.RunPath("r1"), ""},
		{http.MethodGet, api.StreamPath("r1"), ""},
		{http.MethodGet, api.ArtifactPath("r1", "c1"), ""},
		{http.MethodGet, api.PathConnections, ""},
	}
	for _, r := range routes {
		for _, token := range []string{"", "not-a-token"} {
			status, h, body := e.call(r.method, r.path, token, r.body)
			wantError(t, status, body, http.StatusUnauthorized, contracts.CodeUnauthorized)
			if h.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s: no WWW-Authenticate", r.method, r.path)
			}
		}
	}
	_, err := e.client("wrong").Connections(e.ctx)
	apiErr(t, err, http.StatusUnauthorized, contracts.CodeUnauthorized)
}

func TestLocalActorWithoutTokens(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.Tokens = nil; c.Disabled = true })
	e.finishedRun("mine", contracts.Actor{ID: "local", Role: contracts.RoleAdmin})
	cl := e.client("")
	rec, err := cl.Run(e.ctx, "mine")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusSucceeded {
		t.Fatalf("status %s", rec.Status)
	}
	cfg, err := cl.Config(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Detail == "" {
		t.Fatal("the local actor is admin and should get the detail")
	}
}

func TestAgentConfig(t *testing.T) {
	t.Run("operator disabled", func(t *testing.T) {
		e := newEnv(t, func(c *gateway.Config) { c.Disabled = true })
		e.serveModel(contracts.ModelProbeReply{Provider: "openai", Model: "gpt"})
		member, err := e.client(tokAlice).Config(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if member.Enabled || member.Reason != contracts.CodeOperatorDisabled || member.Detail != "" {
			t.Fatalf("member sees %+v", member)
		}
		admin, err := e.client(tokAdmin).Config(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if admin.Reason != contracts.CodeOperatorDisabled || admin.Detail == "" {
			t.Fatalf("admin sees %+v", admin)
		}
	})
	t.Run("no model service", func(t *testing.T) {
		e := newEnv(t)
		got, err := e.client(tokAdmin).Config(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Enabled || got.Reason != contracts.CodeNoModelConfigured || got.Detail == "" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("model probe failed", func(t *testing.T) {
		e := newEnv(t)
		e.serveModel(contracts.ModelProbeReply{Failure: &contracts.ModelFailure{
			Reason: contracts.ReasonModelUnauthorized, Message: "the API key was refused"}})
		got, err := e.client(tokAlice).Config(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Enabled || got.Reason != contracts.CodeNoModelConfigured || got.Detail != "" {
			t.Fatalf("got %+v", got)
		}
	})
	t.Run("model present", func(t *testing.T) {
		e := newEnv(t)
		e.serveModel(contracts.ModelProbeReply{Provider: "ollama", Model: "qwen3", Demo: true})
		status, _, body := e.call(http.MethodGet, api.PathConfig, tokAlice, "")
		if status != http.StatusOK {
			t.Fatalf("%d %s", status, body)
		}
		var raw map[string]any
		if err := json.Unmarshal(body, &raw); err != nil {
			t.Fatal(err)
		}
		if raw["enabled"] != true || raw["provider"] != "ollama" || raw["model"] != "qwen3" || raw["demo"] != true {
			t.Fatalf("got %s", body)
		}
		if _, ok := raw["reason"]; ok {
			t.Fatalf("an enabled answer carries a reason: %s", body)
		}
	})
	t.Run("ledger unavailable", func(t *testing.T) {
		e := newEnv(t)
		e.serveModel(contracts.ModelProbeReply{Provider: "openai", Model: "gpt"})
		if err := e.js.DeleteStream(e.ctx, contracts.LedgerStream); err != nil {
			t.Fatal(err)
		}
		got, err := e.client(tokAdmin).Config(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got.Enabled || got.Reason != contracts.CodeLedgerUnavailable || !strings.Contains(got.Detail, contracts.LedgerStream) {
			t.Fatalf("got %+v", got)
		}
		// JetStream is back: the next answer says so at once, not after the
		// memo of the unavailable answer lapses.
		if err := (natsx.Resources{Admin: true}).Ensure(e.ctx, e.js); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if got, err := e.client(tokAdmin).Config(e.ctx); err != nil || !got.Enabled {
			t.Fatalf("after the ledger came back: %+v %v", got, err)
		}
	})
}

func TestErrorsAreJSON(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) {
		c.Ready = func(context.Context) error { panic("secret internal state") }
	})
	status, _, body := e.call(http.MethodGet, api.PathReady, "", "")
	wantError(t, status, body, http.StatusInternalServerError, contracts.CodeInternal)
	if strings.Contains(string(body), "secret") || strings.Contains(string(body), "goroutine") {
		t.Fatalf("a panic leaked: %s", body)
	}

	status, _, body = e.call(http.MethodGet, "/api/nowhere", tokAlice, "")
	wantError(t, status, body, http.StatusNotFound, api.CodeNotFound)
	status, _, body = e.call(http.MethodGet, "/nowhere", "", "")
	wantError(t, status, body, http.StatusNotFound, api.CodeNotFound)
	status, _, body = e.call(http.MethodPut, api.PathRuns, tokAlice, "{}")
	wantError(t, status, body, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed)
}
