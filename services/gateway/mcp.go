package gateway

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/gateway/mcpserver"
)

// selfBase is the base URL of the gateway's in-process client; requests to
// it never leave the process (selfTransport serves them).
const selfBase = "http://sonde.gateway.internal"

// The MCP endpoint's routes join routeTable here, so the router and the
// OpenAPI document (which lists them as undocumented) both see them. The
// handler is stateless streamable HTTP: it answers POST and refuses GET and
// DELETE with 405 (after authentication, like every route under /api).
func init() {
	for _, m := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
		routeTable = append(routeTable, route{Method: m, Path: api.PathMCP, Handle: (*Gateway).serveMCP,
			OperationID: "mcp" + strings.ToLower(m), Summary: "Model Context Protocol endpoint",
			Undocumented: "the Model Context Protocol endpoint (streamable HTTP, JSON-RPC 2.0), described in docs/mcp.md"})
	}
}

// serveMCP serves the MCP endpoint. The route is authenticated like /api; each
// tool call then goes through the gateway's own handler with the caller's
// Authorization, so an MCP call is exactly an API request of the same actor:
// the same guard, the same inspect profile, the same ownership checks.
func (g *Gateway) serveMCP(c echo.Context) error {
	g.mcpOnce.Do(func() { g.mcpHTTP = g.newMCPHandler() })
	g.mcpHTTP.ServeHTTP(c.Response(), c.Request())
	return nil
}

func (g *Gateway) newMCPHandler() http.Handler {
	self := func(h http.Header) mcpserver.Backend {
		return client.New(selfBase, bearerToken(h), client.WithHTTPClient(&http.Client{Transport: selfTransport{g}}))
	}
	srv := mcpserver.New(self(nil), mcpserver.Options{Logger: g.log, ForRequest: self})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		// Stateless: every POST stands alone, authenticated on its own; no
		// session outlives a request, and no session can change hands.
		Stateless: true,
		Logger:    g.log,
		// The edge (edge.go) checks Host and Origin for every route, this
		// one included, by one rule; the SDK's own loopback Host check
		// would be a second rule that could disagree with it.
		DisableLocalhostProtection: true,
	})
}

// bearerToken is the token of an "Authorization: Bearer …" header, or "".
func bearerToken(h http.Header) string {
	token, _ := parseBearer(h.Get("Authorization"))
	return token
}

// selfTransport answers a request with the gateway's own handler, in
// process. It buffers the answer, which suits every route the MCP tools
// call (none streams).
type selfTransport struct{ g *Gateway }

func (t selfTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	req.RemoteAddr = "127.0.0.1:0" // in process: the MCP caller was authenticated already
	// The caller's request passed the edge's Host and Origin rules; this
	// one, made here for it, is marked as in process so it passes too.
	req = req.WithContext(withInProcess(req.Context()))
	w := &bufferedResponse{header: http.Header{}}
	t.g.handler.ServeHTTP(w, req)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status: http.StatusText(w.status), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()),
		Request: req,
	}, nil
}

// bufferedResponse is an http.ResponseWriter that keeps the answer.
type bufferedResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *bufferedResponse) Header() http.Header { return w.header }

func (w *bufferedResponse) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *bufferedResponse) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(p)
}

// Flush lets a handler that flushes run; the answer is whole either way.
func (w *bufferedResponse) Flush() {}
