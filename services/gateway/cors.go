package gateway

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/services/gateway/api"
)

// CORS answers to a listed origin.
const (
	corsAllowMethods = "GET, POST, DELETE"
	// The request headers a console sends: its token, JSON bodies, an
	// idempotent start, a resumed stream, and the MCP session headers.
	corsAllowHeaders  = "Authorization, Content-Type, Accept, Idempotency-Key, Last-Event-ID, Mcp-Session-Id, Mcp-Protocol-Version"
	corsExposeHeaders = "Idempotent-Replayed, WWW-Authenticate, Mcp-Session-Id"
	corsMaxAge        = "600"
)

// CORSOriginError reports an entry of SONDE_CORS_ORIGINS that is not an
// origin.
type CORSOriginError struct {
	// Origin is the refused entry.
	Origin string
	// Reason says what is wrong with it.
	Reason string
}

func (e *CORSOriginError) Error() string {
	return fmt.Sprintf("gateway: CORS origin %q: %s (want scheme://host[:port], e.g. https://console.example.com)", e.Origin, e.Reason)
}

// ParseCORSOrigins reads a list of origins separated by commas or spaces
// (SONDE_CORS_ORIGINS) into Config.CORSOrigins. It refuses "*" and anything
// that is not scheme://host[:port]: a browser sends the bearer token only to
// origins named one by one.
func ParseCORSOrigins(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		o, err := normalizeOrigin(f)
		if err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, nil
}

func normalizeOrigin(s string) (string, error) {
	if s == "*" || s == "null" {
		return "", &CORSOriginError{Origin: s, Reason: "list each origin allowed to send a token; a wildcard or null origin is refused"}
	}
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return "", &CORSOriginError{Origin: s, Reason: err.Error()}
	case u.Scheme != "http" && u.Scheme != "https":
		return "", &CORSOriginError{Origin: s, Reason: "the scheme must be http or https"}
	case u.Host == "" || u.User != nil:
		return "", &CORSOriginError{Origin: s, Reason: "it names no host"}
	case (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", &CORSOriginError{Origin: s, Reason: "an origin has no path, query or fragment"}
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// corsSet validates Config.CORSOrigins into a set; nil when CORS is off.
func corsSet(origins []string) (map[string]bool, error) {
	if len(origins) == 0 {
		return nil, nil
	}
	set := make(map[string]bool, len(origins))
	for _, o := range origins {
		n, err := normalizeOrigin(strings.TrimSpace(o))
		if err != nil {
			return nil, err
		}
		set[n] = true
	}
	return set, nil
}

// cors lets the listed origins call the API from a browser: their preflight
// is answered 204 with the methods and headers the API takes (Authorization
// included), and their requests get Access-Control-Allow-Origin (with
// credentials). Another origin's preflight is refused 403
// cors_origin_not_allowed and its requests get no CORS header, so its page
// cannot read the answer. With no origins configured it does nothing.
func (g *Gateway) cors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if len(g.corsOrigins) == 0 {
			return next(c)
		}
		r, h := c.Request(), c.Response().Header()
		h.Add("Vary", "Origin")
		origin := r.Header.Get("Origin")
		if origin == "" {
			return next(c)
		}
		allowed := g.corsOrigins[strings.ToLower(origin)]
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method")
			h.Add("Vary", "Access-Control-Request-Headers")
			if !allowed {
				return fail(http.StatusForbidden, api.CodeCORSOriginNotAllowed,
					fmt.Sprintf("origin %q may not call this API from a browser", origin),
					"the operator lists the origins allowed in SONDE_CORS_ORIGINS")
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", corsAllowMethods)
			h.Set("Access-Control-Allow-Headers", corsAllowHeaders)
			h.Set("Access-Control-Max-Age", corsMaxAge)
			return c.NoContent(http.StatusNoContent)
		}
		if allowed {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Expose-Headers", corsExposeHeaders)
		}
		return next(c)
	}
}
