package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/gateway/api"
)

// edgeIDs are identifier values no subject or key may hold.
var edgeIDs = map[string]string{
	"4 KB":          strings.Repeat("a", 4096),
	"64 KB":         strings.Repeat("b", 64<<10),
	"one too long":  strings.Repeat("c", contracts.MaxIDLength+1),
	"dots":          "shop.orders.x",
	"star":          "*",
	"gt":            ">",
	"space":         "shop orders",
	"NUL":           "shop\x00x",
	"CR LF":         "shop\r\nPUB x 1",
	"unicode":       "café",
	"slash":         "shop/x",
	"percent":       "shop%2Ex",
	"invalid UTF-8": "shop\xffx",
}

// edgeEnv is a gateway on a real embedded NATS server with one connection
// published, as its own package sees it.
type edgeEnv struct {
	g   *Gateway
	nc  *nats.Conn
	srv *httptest.Server
}

const edgeToken = "tok-edge"

func newEdgeEnv(t testing.TB) *edgeEnv {
	t.Helper()
	ns := natstest.Start(t)
	nc := ns.Connect()
	g, err := New(Config{Listen: "127.0.0.1:0", Tokens: map[string]contracts.Actor{edgeToken: {ID: "edge", Role: contracts.RoleMember}},
		Logger: slog.New(slog.DiscardHandler)}, nc)
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(ns.Connect())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(context.Background(), contracts.ConnectionsBucket)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := json.Marshal(contracts.ConnectionDescriptor{ID: "shop", Engine: contracts.EngineSQLite, Identity: "id-shop"})
	if _, err := kv.Put(context.Background(), "shop", d); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(g.Handler())
	t.Cleanup(srv.Close)
	return &edgeEnv{g: g, nc: nc, srv: srv}
}

func (e *edgeEnv) do(t testing.TB, method, path, body string, header map[string]string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+edgeToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// stillServes fails unless the gateway's NATS connection is connected and a
// normal request answers.
func (e *edgeEnv) stillServes(t testing.TB, after string) {
	t.Helper()
	if s := e.nc.Status(); s != nats.CONNECTED {
		t.Fatalf("after %s the gateway's NATS connection is %v", after, s)
	}
	if status, body := e.do(t, http.MethodGet, api.PathConnections, "", nil); status != http.StatusOK || !strings.Contains(string(body), `"shop"`) {
		t.Fatalf("after %s: GET %s answered %d %s", after, api.PathConnections, status, body)
	}
}

var edgePathParam = regexp.MustCompile(`:([a-z]+)`)

// hostileRequests builds, for every route of the table, one request per
// identifier it takes (a path parameter, a body field tagged id), with v in
// that place and valid values elsewhere. It fails a route whose path
// parameter has no declared kind.
func hostileRequests(t testing.TB, v string) []hostileRequest {
	t.Helper()
	valid := map[contracts.IDKind]string{contracts.IDRun: "r1", contracts.IDConnection: "shop", contracts.IDCorrelation: "c1"}
	var out []hostileRequest
	for _, r := range routeTable {
		params := edgePathParam.FindAllStringSubmatch(r.Path, -1)
		fill := func(hostile string) string {
			p := r.Path
			for _, m := range params {
				val := "orders"
				if kind, ok := r.IDs[m[1]]; ok {
					val = valid[kind]
				}
				if m[1] == hostile {
					val = url.PathEscape(v)
				}
				p = strings.Replace(p, m[0], val, 1)
			}
			return p
		}
		for _, m := range params {
			if _, ok := r.IDs[m[1]]; !ok && !textParams[m[1]] {
				t.Errorf("%s %s: path parameter %s is neither an identifier (IDs) nor text (textParams)", r.Method, r.Path, m[1])
				continue
			}
			if textParams[m[1]] {
				continue
			}
			out = append(out, hostileRequest{name: r.OperationID + " :" + m[1], method: r.Method, path: fill(m[1]), body: minimalBody(t, r.Request, "", "")})
		}
		if r.Request == nil {
			continue
		}
		rt := reflect.TypeOf(r.Request)
		for f := range rt.Fields() {
			if _, ok := f.Tag.Lookup("id"); !ok {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out = append(out, hostileRequest{name: r.OperationID + " " + name, method: r.Method, path: fill(""), body: minimalBody(t, r.Request, f.Name, v)})
		}
	}
	return out
}

type hostileRequest struct{ name, method, path, body string }

// minimalBody is a JSON body of type req (nil: none) with field set to v
// and every other identifier field valid.
func minimalBody(t testing.TB, req any, field, v string) string {
	t.Helper()
	if req == nil {
		return ""
	}
	rv := reflect.New(reflect.TypeOf(req)).Elem()
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		switch kind, ok := f.Tag.Lookup("id"); {
		case f.Name == field:
			rv.Field(i).SetString(v)
		case ok && contracts.IDKind(kind) == contracts.IDConnection:
			rv.Field(i).SetString("shop")
		}
		if f.Name == "SQL" || f.Name == "Objective" {
			rv.Field(i).SetString("select 1")
		}
	}
	b, err := json.Marshal(rv.Interface())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEveryRouteRefusesHostileIDs: on every route of the table, an
// identifier that could not be a subject token or a key (4 KB long, dots,
// wildcards, spaces, NUL, unicode) is refused 400 invalid_id before the
// handler runs, and the gateway's NATS connection stays up.
func TestEveryRouteRefusesHostileIDs(t *testing.T) {
	e := newEdgeEnv(t)
	for name, v := range edgeIDs {
		reqs := hostileRequests(t, v)
		if len(reqs) < 9 {
			t.Fatalf("only %d identifier places found in the route table", len(reqs))
		}
		for _, hr := range reqs {
			status, body := e.do(t, hr.method, hr.path, hr.body, nil)
			var eb api.ErrorBody
			if err := json.Unmarshal(body, &eb); err != nil || status != http.StatusBadRequest || eb.Error.Code != contracts.CodeInvalidID || eb.Error.Fix == "" {
				t.Errorf("%s with a %s id: %d %.300s", hr.name, name, status, body)
			}
			e.stillServes(t, hr.name+" with a "+name+" id")
		}
	}
}

// TestRequestFieldsNamingIDsAreChecked: every string field of a request
// body whose name says it is an identifier carries the id tag the body
// gate checks, so a new field cannot slip past it.
func TestRequestFieldsNamingIDsAreChecked(t *testing.T) {
	for _, r := range routeTable {
		if r.Request == nil {
			continue
		}
		rt := reflect.TypeOf(r.Request)
		for f := range rt.Fields() {
			if f.Type.Kind() != reflect.String || !strings.HasSuffix(f.Name, "ID") {
				continue
			}
			kind, ok := f.Tag.Lookup("id")
			if !ok {
				t.Errorf("%s.%s names an identifier but has no id tag", rt.Name(), f.Name)
				continue
			}
			if err := contracts.CheckID(contracts.IDKind(kind), "ok"); err != nil {
				t.Errorf("%s.%s: %v", rt.Name(), f.Name, err)
			}
		}
	}
}

// TestMCPListTablesRefusesAHostileID: the MCP tools reach the same routes,
// so list_tables with a 4 KB connection id is refused and the connection
// stays up.
func TestMCPListTablesRefusesAHostileID(t *testing.T) {
	e := newEdgeEnv(t)
	for name, v := range edgeIDs {
		args, _ := json.Marshal(map[string]any{"connection_id": v})
		call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_tables","arguments":` + string(args) + `}}`
		status, body := e.do(t, http.MethodPost, api.PathMCP, call, map[string]string{"Accept": "application/json, text/event-stream"})
		if status != http.StatusOK || !strings.Contains(string(body), string(contracts.CodeInvalidID)) {
			t.Errorf("list_tables with a %s id: %d %.300s", name, status, body)
		}
		e.stillServes(t, "list_tables with a "+name+" id")
	}
}

// FuzzEdgeIDs sends every identifier place of every route a fuzzed value:
// whatever it is, the gateway's NATS connection stays up and the answer is
// no 5xx but the ones a missing run or executor gives.
func FuzzEdgeIDs(f *testing.F) {
	for _, v := range edgeIDs {
		f.Add(v)
	}
	f.Add("shop")
	f.Add("r1")
	e := newEdgeEnv(f)
	f.Fuzz(func(t *testing.T, v string) {
		for _, hr := range hostileRequests(t, v) {
			status, body := e.do(t, hr.method, hr.path, hr.body, nil)
			if status >= 500 && status != http.StatusServiceUnavailable && status != http.StatusGatewayTimeout {
				t.Errorf("%s with %q: %d %.200s", hr.name, v, status, body)
			}
			if s := e.nc.Status(); s != nats.CONNECTED {
				t.Fatalf("%s with %q closed the NATS connection (%v)", hr.name, v, s)
			}
		}
	})
}
