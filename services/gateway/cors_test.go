package gateway_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/api"
)

const console = "https://console.example.com"

func preflight(origin string) map[string]string {
	return map[string]string{"Origin": origin, "Access-Control-Request-Method": http.MethodPost,
		"Access-Control-Request-Headers": "authorization, content-type"}
}

// TestCORSOffByDefault: with no origins configured the gateway sends no
// Access-Control header and answers no preflight; a request of a page
// elsewhere is refused at the edge.
func TestCORSOffByDefault(t *testing.T) {
	e := newEnv(t)
	_, status, header, body := e.send(http.MethodGet, api.PathConnections, tokAlice, "", map[string]string{"Origin": console})
	if header.Get("Access-Control-Allow-Origin") != "" || header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("CORS answered while off: %d %v", status, header)
	}
	wantError(t, status, body, http.StatusForbidden, api.CodeOriginNotAllowed)
	// The router answers OPTIONS itself (204 and Allow), but without the
	// Access-Control headers a browser needs, so the cross-origin call fails.
	_, status, header, _ = e.send(http.MethodOptions, api.PathRuns, "", "", preflight(console))
	if header.Get("Access-Control-Allow-Origin") != "" || header.Get("Access-Control-Allow-Headers") != "" ||
		header.Get("Access-Control-Allow-Methods") != "" {
		t.Fatalf("a preflight was answered while CORS is off: %d %v", status, header)
	}
}

// TestCORSAllowsListedOriginsOnly: a listed origin's preflight is answered
// with Authorization allowed, its requests (errors included) carry
// Access-Control-Allow-Origin and credentials; another origin gets none and
// its preflight is refused in the error shape.
func TestCORSAllowsListedOriginsOnly(t *testing.T) {
	e := newEnv(t, func(c *gateway.Config) { c.CORSOrigins = []string{console, "http://localhost:5173"} })

	_, status, header, body := e.send(http.MethodOptions, api.PathRuns, "", "", preflight(console))
	if status != http.StatusNoContent || header.Get("Access-Control-Allow-Origin") != console ||
		header.Get("Access-Control-Allow-Credentials") != "true" || len(body) != 0 {
		t.Fatalf("preflight: %d %v %s", status, header, body)
	}
	allowed := strings.Split(header.Get("Access-Control-Allow-Headers"), ", ")
	for _, h := range []string{"Authorization", "Content-Type", api.HeaderIdempotencyKey, "Last-Event-ID"} {
		if !slices.Contains(allowed, h) {
			t.Errorf("preflight does not allow %s: %v", h, allowed)
		}
	}
	if m := header.Get("Access-Control-Allow-Methods"); !strings.Contains(m, http.MethodPost) || !strings.Contains(m, http.MethodDelete) {
		t.Errorf("methods: %q", m)
	}
	if !slices.Contains(header.Values("Vary"), "Origin") {
		t.Errorf("no Vary: Origin: %v", header)
	}

	_, status, header, _ = e.send(http.MethodGet, api.PathConnections, tokAlice, "", map[string]string{"Origin": "http://localhost:5173"})
	if status != http.StatusOK || header.Get("Access-Control-Allow-Origin") != "http://localhost:5173" ||
		!strings.Contains(header.Get("Access-Control-Expose-Headers"), api.HeaderIdempotentReplayed) {
		t.Fatalf("request from a listed origin: %d %v", status, header)
	}
	// A browser must be able to read an error too.
	_, status, header, _ = e.send(http.MethodGet, api.PathConnections, "", "", map[string]string{"Origin": console})
	if status != http.StatusUnauthorized || header.Get("Access-Control-Allow-Origin") != console {
		t.Fatalf("error to a listed origin: %d %v", status, header)
	}

	const other = "https://evil.example.net"
	_, status, header, body = e.send(http.MethodOptions, api.PathRuns, "", "", preflight(other))
	if header.Get("Access-Control-Allow-Origin") != "" || header.Get("Access-Control-Allow-Headers") != "" {
		t.Fatalf("preflight of an unlisted origin answered: %v", header)
	}
	if er := wantError(t, status, body, http.StatusForbidden, api.CodeCORSOriginNotAllowed); er.Fix == "" || !strings.Contains(er.Message, other) {
		t.Fatalf("refusal: %+v", er)
	}
	_, status, header, body = e.send(http.MethodGet, api.PathConnections, tokAlice, "", map[string]string{"Origin": other})
	if header.Get("Access-Control-Allow-Origin") != "" || header.Get("Access-Control-Allow-Credentials") != "" {
		t.Fatalf("request from an unlisted origin got CORS headers: %d %v", status, header)
	}
	wantError(t, status, body, http.StatusForbidden, api.CodeOriginNotAllowed)
	// No Origin: not a browser's cross-origin call; served as before.
	if _, status, header, _ = e.send(http.MethodGet, api.PathHealth, "", "", nil); status != http.StatusOK || header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("without Origin: %d %v", status, header)
	}
}

func TestParseCORSOrigins(t *testing.T) {
	got, err := gateway.ParseCORSOrigins(" https://Console.Example.com/, http://localhost:5173 ")
	if err != nil || !slices.Equal(got, []string{"https://console.example.com", "http://localhost:5173"}) {
		t.Fatalf("%q %v", got, err)
	}
	if got, err := gateway.ParseCORSOrigins(""); err != nil || got != nil {
		t.Fatalf("empty: %q %v", got, err)
	}
	for _, bad := range []string{"*", "null", "console.example.com", "ftp://x", "https://x/path", "https://x?q", "https://user@x"} {
		_, err := gateway.ParseCORSOrigins(bad)
		var oe *gateway.CORSOriginError
		if !errors.As(err, &oe) || oe.Origin != bad {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", CORSOrigins: []string{"*"}}, newEnv(t).nc); err == nil {
		t.Fatal("New took a wildcard origin")
	}
}
