package gateway

import (
	"net/http"
	"reflect"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/console"
)

// route is one entry of the HTTP surface. The echo router and the OpenAPI
// document (GET /openapi.json, docs/openapi.json) are both built from
// routeTable, so a route cannot be served without being documented:
// TestOpenAPICoversEveryRoute fails on a route the document leaves out.
//
// To add a route, append one entry: method, path (echo syntax, ":id"),
// handler, operation id, summary, the request and response types (zero
// values of the very types the handler decodes and encodes), and the error
// statuses it answers besides 401 and 500 (added for every authenticated
// route, and every route). Then run
// `go test ./services/gateway -run TestOpenAPIDocument -update` to refresh
// docs/openapi.json.
//
// A route served by an http.Handler (the MCP endpoint, the console's
// assets) wraps it in Handle:
//
//	Handle: func(g *Gateway, c echo.Context) error { g.mcp.ServeHTTP(c.Response(), c.Request()); return nil },
//
// and either documents what it can (Produces, Summary, Description) or sets
// Undocumented to the reason it is not a JSON API.
type route struct {
	Method string
	// Path uses echo's syntax: ":id" is a path parameter ({id} in the
	// document), "*" a wildcard.
	Path string
	// Handle serves the route. A method expression such as
	// (*Gateway).getRun, so the table needs no gateway to be built.
	Handle func(*Gateway, echo.Context) error
	// Public routes need no bearer token; every other route does.
	Public bool
	// OperationID names the operation in the document; unique.
	OperationID string
	Summary     string
	Description string
	// Request is a zero value of the JSON body the handler decodes; nil
	// when the route takes no body.
	Request any
	// Status is the success status (200 when zero).
	Status int
	// Response is a zero value of the JSON body answered with Status; nil
	// when the answer has no body.
	Response any
	// Produces overrides the success answer's media types (a stream): each
	// maps to a zero value of what one item is, or nil for text.
	Produces map[string]any
	// Params are the query and header parameters; path parameters come from
	// Path.
	Params []param
	// Errors are the error statuses the handler answers, each with an
	// api.ErrorBody, or with the body ErrorBodies names for it (which must
	// carry the error shape too, and more).
	Errors      []int
	ErrorBodies map[int]any
	// Undocumented, when set, leaves the route out of the document's paths
	// and lists it under x-sonde-undocumented with this reason (a route
	// that is not a JSON API, such as static assets).
	Undocumented string
	// IDs names the kind of every path parameter that is an identifier (it
	// becomes a subject token or a key): each is checked with
	// contracts.CheckID before the handler runs. A path parameter that is
	// not an identifier is listed in textParams.
	IDs map[string]contracts.IDKind
}

// textParams are the path parameters that are not identifiers: they travel
// in a request's payload, never in a subject or a key.
var textParams = map[string]bool{"table": true}

// The identifier path parameters of the routes.
var (
	runIDParam        = map[string]contracts.IDKind{"id": contracts.IDRun}
	artifactIDParams  = map[string]contracts.IDKind{"id": contracts.IDRun, "cid": contracts.IDCorrelation}
	connectionIDParam = map[string]contracts.IDKind{"id": contracts.IDConnection}
)

// param is a query or header parameter of a route.
type param struct {
	// In is "query" or "header".
	In          string
	Name        string
	Description string
	// Integer types the value as an integer; it is a string otherwise.
	Integer bool
}

// routeTable is Sonde's HTTP surface.
var routeTable = []route{
	{
		Method: http.MethodGet, Path: api.PathHealth, Handle: (*Gateway).health, Public: true,
		OperationID: "health", Summary: "Liveness: 200 while the process serves HTTP and its NATS connection lives",
		Description: "503 once the NATS connection is closed for good (it does not come back): restart the process.",
		Response:    api.Health{}, Errors: []int{http.StatusServiceUnavailable},
	},
	{
		Method: http.MethodGet, Path: api.PathReady, Handle: (*Gateway).ready, Public: true,
		OperationID: "ready", Summary: "Readiness: 200 when a run could start now; 503 with the reason otherwise",
		Description: "Not ready while NATS is disconnected, JetStream does not answer for the run ledger, " +
			"no orchestrator answers or can record runs, or no executor answers for an engine a " +
			"published connection needs. A connection whose database is down leaves the server ready " +
			"and is listed in detail.",
		Response: api.Health{}, Errors: []int{http.StatusServiceUnavailable},
	},
	{
		Method: http.MethodGet, Path: api.PathOpenAPI, Handle: (*Gateway).openAPI, Public: true,
		OperationID: "openapi", Summary: "This OpenAPI 3.1 document",
		Produces: map[string]any{"application/json": nil},
	},
	{
		Method: http.MethodGet, Path: api.PathConfig, Handle: (*Gateway).agentConfig,
		OperationID: "getAgentConfig", Summary: "Whether this server runs agents and, if not, which condition failed",
		Response: api.AgentConfig{},
	},
	{
		Method: http.MethodGet, Path: api.PathRuns, Handle: (*Gateway).listRuns,
		OperationID: "listRuns", Summary: "The caller's runs, most recently started first",
		Params: []param{
			{In: "query", Name: "limit", Integer: true, Description: "page size, 1 to 100 (default 20)"},
			{In: "query", Name: "cursor", Description: "the previous page's next"},
		},
		Response: api.RunList{}, Errors: []int{http.StatusBadRequest, http.StatusServiceUnavailable},
	},
	{
		Method: http.MethodPost, Path: api.PathRuns, Handle: (*Gateway).startRun,
		OperationID: "startRun", Summary: "Start a run (or continue a conversation)",
		Description: "A model the capability probe found unable to do an agent run is refused 422 " +
			"model_capability_missing with what it lacks; planning mode needs no tools.",
		Params: []param{{In: "header", Name: api.HeaderIdempotencyKey,
			Description: "makes a retried start answer the run the first one created"}},
		Request: api.StartRunRequest{}, Status: http.StatusAccepted, Response: api.StartRunResponse{},
		Errors: []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusConflict,
			http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
		ErrorBodies: map[int]any{http.StatusUnprocessableEntity: api.AgentModelRefusal{}},
	},
	{
		Method: http.MethodGet, Path: api.PathRuns + "/:id", Handle: (*Gateway).getRun,
		IDs:         runIDParam,
		OperationID: "getRun", Summary: "A run's record, folded from its ledger",
		Response: contracts.Record{}, Errors: []int{http.StatusNotFound, http.StatusServiceUnavailable},
	},
	{
		Method: http.MethodDelete, Path: api.PathRuns + "/:id", Handle: (*Gateway).cancelRun,
		IDs:         runIDParam,
		OperationID: "cancelRun", Summary: "Ask a run to stop at its next checkpoint",
		Status: http.StatusAccepted, Response: api.CancelResponse{},
		Errors: []int{http.StatusNotFound, http.StatusConflict, http.StatusServiceUnavailable},
	},
	{
		Method: http.MethodGet, Path: api.PathRuns + "/:id/stream", Handle: (*Gateway).streamRun,
		IDs:         runIDParam,
		OperationID: "streamRun", Summary: "A run's ledger, live, until run-finished",
		Description: "NDJSON (one entry a line) by default; server-sent events when the caller accepts " +
			"text/event-stream (id: the entry's seq, event: its kind, data: the entry). A silent stream " +
			"sends a keep-alive (a blank line, an SSE comment).",
		Params: []param{
			{In: "query", Name: "from", Integer: true, Description: "resume after this seq (0: from the first entry)"},
			{In: "header", Name: "Last-Event-ID", Description: "SSE only: resume after this seq when from is absent"},
		},
		Produces: map[string]any{api.ContentTypeNDJSON: contracts.Entry{}, api.ContentTypeSSE: nil},
		Errors:   []int{http.StatusBadRequest, http.StatusNotFound, http.StatusServiceUnavailable},
	},
	{
		Method: http.MethodGet, Path: api.PathRuns + "/:id/artifacts/:cid", Handle: (*Gateway).getArtifact,
		IDs:         artifactIDParams,
		OperationID: "getArtifact", Summary: "One stored result of a run",
		Response: contracts.Artifact{}, Errors: []int{http.StatusNotFound, http.StatusServiceUnavailable},
	},
	{
		Method: http.MethodPost, Path: api.PathRuns + "/:id/handover", Handle: (*Gateway).handover,
		IDs:         runIDParam,
		OperationID: "handover", Summary: "Replay a run's auto-executed answer (takes no body)",
		Response: api.HandoverResponse{},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict,
			http.StatusUnprocessableEntity, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
	},
	{
		Method: http.MethodGet, Path: api.PathConnections, Handle: (*Gateway).listConnections,
		OperationID: "listConnections", Summary: "The connections runs can name, sorted by id",
		Response: api.Connections{}, Errors: []int{http.StatusServiceUnavailable},
	},
	{
		Method: http.MethodPost, Path: api.PathQuery, Handle: (*Gateway).query,
		OperationID: "query", Summary: "One guarded read under the inspect profile, no model involved",
		Description: "A statement the guard refuses is answered 422 with the guard's code, reason (message) and fix.",
		Request:     api.QueryRequest{}, Response: api.QueryResponse{},
		Errors: []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout},
	},
	{
		Method: http.MethodGet, Path: api.PathConnections + "/:id/tables", Handle: (*Gateway).listTables,
		IDs:         connectionIDParam,
		OperationID: "listTables", Summary: "One page of a connection's readable tables and views",
		Description: "At most api.TablesPageSize relations a page, in (schema, name) order; next continues it. Relations outside the readable patterns are counted (unreadable), never named.",
		Params: []param{
			{In: "query", Name: "pattern", Description: "name pattern: * any run, ? one character, case-insensitive; schema.name when it holds a dot"},
			{In: "query", Name: "after", Description: "continue after this schema.name (the previous page's next)"},
		},
		Response: api.TablesResponse{},
		Errors: []int{http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusBadGateway,
			http.StatusServiceUnavailable, http.StatusGatewayTimeout},
	},
	{
		Method: http.MethodGet, Path: api.PathConnections + "/:id/tables/:table", Handle: (*Gateway).describeTable,
		IDs:         connectionIDParam,
		OperationID: "describeTable", Summary: "One readable table or view described in full",
		Description: "table is name or schema.name, case-insensitive. A relation outside the readable patterns answers 404 exactly as a missing one; a name found in several schemas 409.",
		Response:    api.DescribeResponse{},
		Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
	},
	{
		Method: http.MethodPost, Path: api.PathExplain, Handle: (*Gateway).explain,
		OperationID: "explain", Summary: "The estimating plan of one statement, never executed",
		Description: "Guarded exactly like POST /api/query and refused as it is (422 with the guard's code, reason and fix).",
		Request:     api.ExplainRequest{}, Response: api.ExplainResponse{},
		Errors: []int{http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnprocessableEntity,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout},
	},
	{
		Method: http.MethodGet, Path: "/", Handle: func(_ *Gateway, c echo.Context) error { return console.Serve(c) }, Public: true,
		OperationID: "console", Summary: "The web console (docs/console.md)",
		Undocumented: "the web console's page: HTML, not a JSON API; it signs in with a bearer token of its own",
	},
	{
		Method: http.MethodGet, Path: console.Prefix + "*", Handle: func(_ *Gateway, c echo.Context) error { return console.Serve(c) }, Public: true,
		OperationID: "consoleAssets", Summary: "The web console's script and style, embedded",
		Undocumented: "static assets of the web console",
	},
}

// routes builds the echo router from routeTable. The edge's Host and
// Origin rules (edge.go) and CORS, when configured, run before routing, so
// they hold whatever the path. Then, per route: every route that is not
// Public requires an actor (authenticate, attached to each route so that a
// wrong method still answers 405); identifier path parameters are checked
// (IDs); a route with a Request type gets the one strict body decoder
// (bodyGate).
func (g *Gateway) routes() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = g.handleError
	e.Pre(g.edge, g.cors)
	e.Use(g.logRequests, g.recoverPanics)
	for _, r := range routeTable {
		h := func(c echo.Context) error { return r.Handle(g, c) }
		var mw []echo.MiddlewareFunc
		if !r.Public {
			mw = append(mw, g.authenticate)
		}
		if len(r.IDs) > 0 {
			mw = append(mw, pathIDs(r.IDs))
		}
		if r.Request != nil {
			mw = append(mw, bodyGate(reflect.TypeOf(r.Request)))
		}
		e.Add(r.Method, r.Path, h, mw...)
	}
	g.echo = e
	return e
}
