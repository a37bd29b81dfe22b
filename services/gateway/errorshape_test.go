package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/api"
)

var openAPIRouter = sync.OnceValues(func() (routers.Router, error) {
	b, err := gateway.OpenAPI()
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(b)
	if err != nil {
		return nil, err
	}
	return legacy.NewRouter(doc)
})

// conforms checks an answer against the OpenAPI document: a documented
// route's status must be documented, and the body must match its schema.
// An answer of the router itself (unknown path, wrong method) has no
// operation and is not checked here.
func conforms(t *testing.T, req *http.Request, status int, header http.Header, body []byte) {
	t.Helper()
	router, err := openAPIRouter()
	if err != nil {
		t.Fatal(err)
	}
	route, params, err := router.FindRoute(req)
	if err != nil {
		return
	}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route},
		Status:                 status,
		Header:                 header,
		Options:                &openapi3filter.Options{IncludeResponseStatus: true},
	}
	in.SetBodyBytes(body)
	if err := openapi3filter.ValidateResponse(context.Background(), in); err != nil {
		t.Errorf("%s %s answered %d, which the OpenAPI document does not describe: %v\n%s", req.Method, req.URL.Path, status, err, body)
	}
}

// send is call with request headers; it returns the request too, for conforms.
func (e *env) send(method, path, token, body string, header map[string]string) (*http.Request, int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequestWithContext(e.ctx, method, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
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
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return req, resp.StatusCode, resp.Header, b
}

// TestEveryErrorIsTheErrorShape walks every kind of error answer and checks
// each is {"error":{"code","message","fix"}} with its status and code, and
// what the OpenAPI document says the route answers.
func TestEveryErrorIsTheErrorShape(t *testing.T) {
	e := newEnv(t)
	serveProber(e, contracts.ModelProbeReply{Provider: "ollama", Model: "gemma3:270m",
		Missing:   []string{contracts.CapabilityToolCalling},
		Disproved: []string{contracts.CapabilityToolCalling},
		Message:   `The ollama model "gemma3:270m" refused a request that declares a tool.`})
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	e.finishedRun("done", alice)

	cases := []struct {
		name         string
		method, path string
		token, body  string
		header       map[string]string
		status       int
		code         contracts.Code
	}{
		{"unknown route", http.MethodGet, "/api/nowhere", tokAlice, "", nil, http.StatusNotFound, api.CodeNotFound},
		{"unknown route outside /api", http.MethodGet, "/nowhere", "", "", nil, http.StatusNotFound, api.CodeNotFound},
		{"wrong method", http.MethodPut, api.PathRuns, tokAlice, "{}", nil, http.StatusMethodNotAllowed, api.CodeMethodNotAllowed},
		{"no token", http.MethodGet, api.PathRuns, "", "", nil, http.StatusUnauthorized, contracts.CodeUnauthorized},
		{"unknown token", http.MethodGet, api.PathConnections, "nobody", "", nil, http.StatusUnauthorized, contracts.CodeUnauthorized},
		{"bad JSON", http.MethodPost, api.PathRuns, tokAlice, `{"objective":`, nil, http.StatusBadRequest, contracts.CodeBadRequest},
		{"unknown field", http.MethodPost, api.PathQuery, tokAlice, `{"sql":"select 1","connection":"shop"}`, nil, http.StatusBadRequest, contracts.CodeBadRequest},
		{"bad query parameter", http.MethodGet, api.PathRuns + "?limit=x", tokAlice, "", nil, http.StatusBadRequest, contracts.CodeBadRequest},
		{"body too large", http.MethodPost, api.PathQuery, tokAlice, `{"sql":"` + strings.Repeat("x", 1<<20+1) + `"}`, nil, http.StatusRequestEntityTooLarge, contracts.CodeBadRequest},
		{"unknown run", http.MethodGet, api.RunPath("nope"), tokAlice, "", nil, http.StatusNotFound, contracts.CodeRunNotFound},
		{"foreign run", http.MethodGet, api.RunPath("done"), tokBob, "", nil, http.StatusNotFound, contracts.CodeRunNotFound},
		{"unknown artifact", http.MethodGet, api.ArtifactPath("done", "nope"), tokAlice, "", nil, http.StatusNotFound, contracts.CodeArtifactNotFound},
		{"cancel a finished run", http.MethodDelete, api.RunPath("done"), tokAlice, "", nil, http.StatusConflict, contracts.CodeRunFinished},
		{"model cannot call tools", http.MethodPost, api.PathRuns, tokAlice, `{"objective":"x","connectionId":"shop"}`, nil, http.StatusUnprocessableEntity, api.CodeModelCapabilityMissing},
		{"not ready", http.MethodGet, api.PathReady, "", "", nil, http.StatusServiceUnavailable, contracts.CodeUnavailable},
		{"no executor", http.MethodPost, api.PathQuery, tokAlice, `{"sql":"select 1","connectionId":"shop"}`, nil, http.StatusServiceUnavailable, contracts.CodeUnavailable},
		// A browser's cross-site "simple" request declares text/plain or a
		// form: refused before the body is read.
		{"text/plain body", http.MethodPost, api.PathQuery, tokAlice, `{"sql":"select 1","connectionId":"shop"}`,
			map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType},
		{"form body", http.MethodPost, api.PathRuns, tokAlice, `{"objective":"x","connectionId":"shop"}`,
			map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req, status, header, body := e.send(c.method, c.path, c.token, c.body, c.header)
			if ct := header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q", ct)
			}
			er := wantError(t, status, body, c.status, c.code)
			if er.Fix == "" {
				t.Errorf("%s: no fix: %s", c.code, body)
			}
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(body, &raw); err != nil || len(raw["error"]) == 0 || raw["error"][0] != '{' {
				t.Fatalf("error is not an object: %s", body)
			}
			if c.code == api.CodeModelCapabilityMissing {
				var refusal api.AgentModelRefusal
				if err := json.Unmarshal(body, &refusal); err != nil || len(refusal.Missing) != 1 || refusal.Mode != contracts.ModeAgent {
					t.Errorf("refusal %s: %v", body, err)
				}
			}
			req.Body = io.NopCloser(bytes.NewReader(nil))
			conforms(t, req, status, header, body)
		})
	}
}

// TestAnswersConformToOpenAPI: successful answers of the JSON routes match
// the document's schemas, and GET /openapi.json serves the document
// without a token.
func TestAnswersConformToOpenAPI(t *testing.T) {
	e := newEnv(t)
	e.respond(contracts.SubjectRunHealth, func([]byte) any { return contracts.RunHealth{Ready: true} })
	serveProber(e, contracts.ModelProbeReply{Provider: "ollama", Model: "m"})
	e.putConnection(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	e.finishedRun("done", alice)
	e.startedRun("live", alice)

	want, err := gateway.OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	_, status, header, body := e.send(http.MethodGet, api.PathOpenAPI, "", "", nil)
	if status != http.StatusOK || !bytes.Equal(body, want) || !strings.HasPrefix(header.Get("Content-Type"), "application/json") {
		t.Fatalf("GET %s: %d %s", api.PathOpenAPI, status, header.Get("Content-Type"))
	}

	for _, c := range []struct{ method, path, token string }{
		{http.MethodGet, api.PathHealth, ""},
		{http.MethodGet, api.PathConfig, tokAdmin},
		{http.MethodGet, api.PathConfig, tokAlice},
		{http.MethodGet, api.PathRuns, tokAlice},
		{http.MethodGet, api.RunPath("done"), tokAlice},
		{http.MethodGet, api.RunPath("live"), tokAlice},
		{http.MethodGet, api.PathConnections, tokAlice},
	} {
		req, status, header, body := e.send(c.method, c.path, c.token, "", nil)
		if status != http.StatusOK {
			t.Errorf("%s %s: %d %s", c.method, c.path, status, body)
			continue
		}
		req.Body = io.NopCloser(bytes.NewReader(nil))
		conforms(t, req, status, header, body)
	}
}
