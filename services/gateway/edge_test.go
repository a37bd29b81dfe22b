package gateway_test

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sondehq/sonde/services/gateway"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// TestALongConnectionIDLeavesTheServerServing: a 4 KB connection id on
// /api/query (a KV key, then a subject) once closed the gateway's NATS
// connection for good. It is refused 400 invalid_id, and the next normal
// request still answers.
func TestALongConnectionIDLeavesTheServerServing(t *testing.T) {
	e := newEnv(t)
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	long := strings.Repeat("a", 4096)
	status, _, body := e.call(http.MethodPost, api.PathQuery, tokAlice, `{"connectionId":"`+long+`","sql":"select 1"}`)
	wantError(t, status, body, http.StatusBadRequest, contracts.CodeInvalidID)
	status, _, body = e.call(http.MethodGet, api.PathConnections, tokAlice, "")
	if status != http.StatusOK || !strings.Contains(string(body), `"shop"`) {
		t.Fatalf("after a 4 KB id: %d %s", status, body)
	}
}

// TestOnlyBearerAuthenticates: a token sent under any other scheme (Basic,
// bare, a lower-case or doubled scheme) is refused 401, with tokens and
// without (where a malformed Authorization still means a confused client).
func TestOnlyBearerAuthenticates(t *testing.T) {
	for _, local := range []bool{false, true} {
		e := newEnv(t)
		if local {
			e = e.another(func(c *gateway.Config) { c.Tokens = nil })
		}
		for _, h := range []string{
			"Basic " + tokAlice,
			"Basic " + base64.StdEncoding.EncodeToString([]byte(tokAlice+":")),
			"Basic " + base64.StdEncoding.EncodeToString([]byte(":"+tokAlice)),
			tokAlice,
			"Token " + tokAlice,
			"Bearer" + tokAlice,
			"Bearer  Bearer " + tokAlice,
			"Digest " + tokAlice,
		} {
			_, status, _, body := e.send(http.MethodGet, api.PathConnections, "", "", map[string]string{"Authorization": h})
			if status != http.StatusUnauthorized {
				t.Errorf("local=%v: Authorization %q: %d %s", local, h, status, body)
				continue
			}
			wantError(t, status, body, http.StatusUnauthorized, contracts.CodeUnauthorized)
		}
		if status, _, body := e.call(http.MethodGet, api.PathConnections, tokAlice, ""); status != http.StatusOK {
			t.Fatalf("local=%v: a Bearer token: %d %s", local, status, body)
		}
	}
}

// edgeRequest sends method path with Host and extra headers set.
func (e *env) edgeRequest(method, path, host, body string, header map[string]string) (int, []byte) {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(e.ctx, method, e.url+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// edgeRoutes are requests on every kind of route: the API (reads, a body,
// a stream), the MCP endpoint, the console, the probes and the document.
var edgeRoutes = []struct{ method, path, body string }{
	{http.MethodPost, api.PathQuery, `{"connectionId":"shop","sql":"select 1"}`},
	{http.MethodPost, api.PathRuns, `{"connectionId":"shop","objective":"x"}`},
	{http.MethodGet, api.PathConnections, ""},
	{http.MethodGet, api.PathRuns + "/r1/stream", ""},
	{http.MethodPost, api.PathMCP, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
	{http.MethodGet, "/", ""},
	{http.MethodGet, api.PathHealth, ""},
	{http.MethodGet, api.PathReady, ""},
	{http.MethodGet, api.PathOpenAPI, ""},
	{http.MethodGet, "/nowhere", ""},
}

// TestRebindingHostIsRefusedOnEveryRoute: without tokens (the default local
// set-up), a request whose Host is a name other than a loopback one (what a
// DNS-rebinding page sends) is refused 403 host_not_allowed on every route,
// /mcp included, with or without a matching Origin; loopback names, IP
// literals and listed names pass.
func TestRebindingHostIsRefusedOnEveryRoute(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.Tokens = nil; c.AllowedHosts = []string{"sonde.lan"} })
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.url, "http://"))
	for _, r := range edgeRoutes {
		for _, host := range []string{"evil.example:" + port, "evil.example", "127.0.0.1.evil.example:" + port, "localhost.evil.example:" + port, "sonde.lan.evil:" + port} {
			for _, origin := range []string{"", "http://" + host} {
				status, body := e.edgeRequest(r.method, r.path, host, r.body, map[string]string{"Origin": origin})
				if status != http.StatusForbidden || !strings.Contains(string(body), string(api.CodeHostNotAllowed)) {
					t.Errorf("%s %s with Host %s, Origin %q: %d %.200s", r.method, r.path, host, origin, status, body)
				}
			}
		}
		for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST.:" + port, "app.localhost:" + port, "[::1]:" + port, "10.1.2.3:" + port, "sonde.lan:" + port, "Sonde.LAN"} {
			if status, body := e.edgeRequest(r.method, r.path, host, r.body, nil); status == http.StatusForbidden {
				t.Errorf("%s %s with Host %s refused: %.200s", r.method, r.path, host, body)
			}
		}
	}
}

// TestMCPRefusesARebindingHost pins the /mcp Host check on its own.
func TestMCPRefusesARebindingHost(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.Tokens = nil })
	status, body := e.edgeRequest(http.MethodPost, api.PathMCP, "rebind.example:8080", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		map[string]string{"Accept": "application/json, text/event-stream"})
	wantError(t, status, body, http.StatusForbidden, api.CodeHostNotAllowed)
	status, body = e.edgeRequest(http.MethodPost, api.PathMCP, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		map[string]string{"Accept": "application/json, text/event-stream"})
	if status != http.StatusOK || !strings.Contains(string(body), "list_tables") {
		t.Fatalf("tools/list on a loopback Host: %d %.300s", status, body)
	}
}

// TestHostRuleWithTokens: with tokens and no list, any Host passes (a
// reverse proxy may use any name; a rebinding page has no token); with a
// list, other names are refused but an IP literal still passes, as a
// Kubernetes probe sends.
func TestHostRuleWithTokens(t *testing.T) {
	e := newEnv(t)
	if status, body := e.edgeRequest(http.MethodGet, api.PathHealth, "sonde.example.com", "", nil); status != http.StatusOK {
		t.Fatalf("any Host with tokens: %d %s", status, body)
	}
	e = e.another(func(c *gateway.Config) { c.AllowedHosts = []string{"sonde.example.com"} })
	for _, path := range []string{api.PathHealth, api.PathReady, api.PathConnections} {
		status, body := e.edgeRequest(http.MethodGet, path, "other.example.com", "", nil)
		wantError(t, status, body, http.StatusForbidden, api.CodeHostNotAllowed)
		if status, body := e.edgeRequest(http.MethodGet, path, "10.244.1.7:8080", "", nil); status == http.StatusForbidden {
			t.Errorf("%s: a probe's IP Host refused: %s", path, body)
		}
	}
	if status, body := e.edgeRequest(http.MethodGet, api.PathHealth, "sonde.example.com:443", "", nil); status != http.StatusOK {
		t.Fatalf("a listed Host: %d %s", status, body)
	}
	for _, bad := range []string{"*.example.com", "https://sonde.example.com", "sonde.example.com:8080", "sonde.example.com/x", "sonde\x00x"} {
		var he *gateway.HostError
		if _, err := gateway.ParseAllowedHosts(bad); !errors.As(err, &he) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if got, err := gateway.ParseAllowedHosts(" Sonde.Example.com., b.example "); err != nil || len(got) != 2 || got[0] != "sonde.example.com" {
		t.Errorf("%q %v", got, err)
	}
}

// TestCrossOriginRequestsAreRefused: a browser request from a page of
// another origin (another port of this machine too) is refused 403
// origin_not_allowed before any handler, on every route; the server's own
// origin and a listed CORS origin pass.
func TestCrossOriginRequestsAreRefused(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.Tokens = nil; c.CORSOrigins = []string{"https://console.example.com"} })
	got := e.serveOrchestrator(accept)
	e.serveModel(contracts.ModelProbeReply{Provider: "openai", Model: "gpt-test"})
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	self := e.url
	for _, r := range edgeRoutes {
		for _, origin := range []string{"http://127.0.0.1:1", "http://localhost" + strings.TrimPrefix(self, "http://127.0.0.1"), "https://" + strings.TrimPrefix(self, "http://") + ".evil", "null", "file://", "chrome-extension://abc"} {
			status, body := e.edgeRequest(r.method, r.path, "", r.body, map[string]string{"Origin": origin})
			if status != http.StatusForbidden || !strings.Contains(string(body), string(api.CodeOriginNotAllowed)) {
				t.Errorf("%s %s from %s: %d %.200s", r.method, r.path, origin, status, body)
			}
		}
		for _, origin := range []string{self, "https://console.example.com"} {
			if status, body := e.edgeRequest(r.method, r.path, "", r.body, map[string]string{"Origin": origin}); status == http.StatusForbidden {
				t.Errorf("%s %s from %s refused: %.200s", r.method, r.path, origin, body)
			}
		}
	}
	// Only the same-origin and the listed-origin starts reached the orchestrator.
	for i := 0; i < 2; i++ {
		<-got
	}
	select {
	case req := <-got:
		t.Fatalf("a cross-origin start reached the orchestrator: %+v", req)
	default:
	}
}

// TestJSONBodiesAreStrict: every body route refuses a body without
// Content-Type: application/json (a no-cors Blob declares none), a key
// spelled in another case, a key twice, and a nested object where a value
// belongs; a declared JSON body with a charset passes.
func TestJSONBodiesAreStrict(t *testing.T) {
	e := newEnv(t)
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	for _, path := range []string{api.PathQuery, api.PathExplain, api.PathRuns} {
		ok := `{"connectionId":"shop","sql":"select 1"}`
		if path == api.PathRuns {
			ok = `{"connectionId":"shop","objective":"x"}`
		}
		for _, ct := range []string{"", "text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", "application/json-patch+json"} {
			req, err := http.NewRequestWithContext(e.ctx, http.MethodPost, e.url+path, strings.NewReader(ok))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+tokAlice)
			if ct != "" {
				req.Header.Set("Content-Type", ct)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			wantError(t, resp.StatusCode, body, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType)
		}
		for _, bad := range []string{
			strings.Replace(ok, `"connectionId"`, `"ConnectionID"`, 1),
			strings.Replace(ok, `"connectionId":"shop"`, `"connectionId":"shop","CONNECTIONID":"other"`, 1),
			strings.Replace(ok, `"connectionId":"shop"`, `"connectionId":"shop","connectionId":"shop"`, 1),
			strings.Replace(ok, `{`, `{"SQL":"select 2","Objective":"y",`, 1),
		} {
			status, _, body := e.call(http.MethodPost, path, tokAlice, bad)
			er := wantError(t, status, body, http.StatusBadRequest, contracts.CodeBadRequest)
			if !strings.Contains(er.Message, "unknown field") && !strings.Contains(er.Message, "twice") {
				t.Errorf("%s %s: %s", path, bad, er.Message)
			}
		}
	}
	_, status, _, body := e.send(http.MethodPost, api.PathQuery, tokAlice, `{"connectionId":"shop","sql":"select 1","params":[{"a":1,"a":2}]}`, nil)
	wantError(t, status, body, http.StatusBadRequest, contracts.CodeBadRequest)
	_, status, _, body = e.send(http.MethodPost, api.PathQuery, tokAlice, `{"connectionId":"shop","sql":"select 1"}`,
		map[string]string{"Content-Type": "application/json; charset=utf-8"})
	if status == http.StatusUnsupportedMediaType || status == http.StatusBadRequest {
		t.Fatalf("a JSON body with a charset: %d %s", status, body)
	}
}

// TestHealthIsUnhealthyOnceNATSIsClosed: a closed NATS connection never
// comes back, so /healthz answers 503 (a liveness probe restarts the
// process) and /readyz 503.
func TestHealthIsUnhealthyOnceNATSIsClosed(t *testing.T) {
	e := newEnv(t)
	nc := e.srv.Connect()
	gw, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", Logger: discardLogger()}, nc)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw.Handler())
	defer hs.Close()
	get := func(path string) int {
		resp, err := http.Get(hs.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get(api.PathHealth); s != http.StatusOK {
		t.Fatalf("healthz while connected: %d", s)
	}
	nc.Close()
	if s := get(api.PathHealth); s != http.StatusServiceUnavailable {
		t.Fatalf("healthz with NATS closed: %d", s)
	}
	if s := get(api.PathReady); s != http.StatusServiceUnavailable {
		t.Fatalf("readyz with NATS closed: %d", s)
	}
}

// TestSlowBodiesAreTimedOutButStreamsLive: a body that stops arriving is
// answered 408 request_timeout once the body deadline passes (it was held
// as long as the client cared to), on a body route and on /mcp; a run
// stream, which has no body, lives on well past that deadline.
func TestSlowBodiesAreTimedOutButStreamsLive(t *testing.T) {
	const timeout = 300 * time.Millisecond
	e := newEnv(t, func(c *gateway.Config) { c.BodyReadTimeout = timeout; c.StreamHeartbeat = 50 * time.Millisecond })
	hostPort := strings.TrimPrefix(e.url, "http://")
	for _, path := range []string{api.PathQuery, api.PathRuns, api.PathMCP} {
		conn, err := net.Dial("tcp", hostPort)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 200\r\n\r\n{\"sql\":", path, hostPort, tokAlice)
		// Generous: the deadline is 300 ms; without one no answer comes.
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: no answer to a stalled body: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		conn.Close()
		if path == api.PathMCP {
			// The SDK reads the body and answers the failed read itself.
			if resp.StatusCode < 400 {
				t.Errorf("%s: a stalled body answered %d %s", path, resp.StatusCode, body)
			}
			continue
		}
		wantError(t, resp.StatusCode, body, http.StatusRequestTimeout, api.CodeRequestTimeout)
	}

	e.startedRun("live", alice)
	req, err := http.NewRequestWithContext(e.ctx, http.MethodGet, e.url+api.RunPath("live")+"/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tokAlice)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	lines := bufio.NewScanner(resp.Body)
	until := time.Now().Add(8 * timeout)
	n := 0
	for time.Now().Before(until) {
		if !lines.Scan() {
			t.Fatalf("the stream ended after %d lines, within %s of its start: %v", n, 8*timeout, lines.Err())
		}
		n++
	}
}

// TestParameterMistakesAre400: an executor's bad_request refusal (a
// parameter of a type it cannot bind, too many of them) is the caller's
// mistake: 400 with the executor's code, reason and fix, not 422 or a
// database failure.
func TestParameterMistakesAre400(t *testing.T) {
	e := newEnv(t)
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	e.respond(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpRead), func([]byte) any {
		return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: contracts.RefuseBadRequest,
			Message: "parameter 1: an object cannot be bound", Fix: "bind null, a boolean, a finite number or a string"}}
	})
	status, _, body := e.call(http.MethodPost, api.PathQuery, tokAlice, `{"connectionId":"shop","sql":"select ?","params":[{"a":1}]}`)
	if er := wantError(t, status, body, http.StatusBadRequest, contracts.RefuseBadRequest); er.Fix == "" {
		t.Fatalf("no fix: %s", body)
	}
}

// TestDescribeTakesAnEscapedTableName: a table whose name needs escaping in
// a path (a space, a slash, a '<', a '%') reaches the executor as the name
// itself, not in its escaped form.
func TestDescribeTakesAnEscapedTableName(t *testing.T) {
	e := newEnv(t)
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	asked := make(chan string, 4)
	e.respond(contracts.ExecSubject(contracts.EngineSQLite, contracts.OpInventory), func(b []byte) any {
		var req contracts.ExecRequest
		_ = json.Unmarshal(b, &req)
		asked <- req.Table
		return contracts.ExecReply{Status: contracts.ExecOK, Inventory: &contracts.Inventory{}}
	})
	for _, name := range []string{"order items", "a/b", "<x>", "50%"} {
		e.call(http.MethodGet, api.PathConnections+"/shop/tables/"+url.PathEscape(name), tokAlice, "")
		select {
		case got := <-asked:
			if got != name {
				t.Errorf("asked for %q, want %q", got, name)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%q never reached the executor", name)
		}
	}
}
