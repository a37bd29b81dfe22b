package gateway

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// The HTTP edge: every request, on every route (the API, the MCP endpoint,
// the console, the health probes), passes these checks before routing.
//
//   - Host. A page of another site can rebind its own name to 127.0.0.1 and
//     call a token-less local gateway as a same-origin page would. The
//     browser then sends that name as Host, so a Host that names this
//     machine by a loopback name ("localhost", "*.localhost"), an IP literal
//     (no name, nothing to rebind: Kubernetes probes send the pod's IP) or a
//     name the operator listed (Config.AllowedHosts) passes; any other is
//     refused 403 host_not_allowed. With tokens and no list every Host
//     passes: a rebinding page does not have a token, and a reverse proxy
//     may use any name.
//   - Origin, when a browser sends one: it must be the request's own origin
//     (its host and port are the Host's) or one of Config.CORSOrigins; a
//     page elsewhere, a sandboxed "null" origin, is refused 403
//     origin_not_allowed, so no cross-site request (a no-cors fetch, a form)
//     reaches a handler, whatever it sends.
//
// Requests the gateway makes to itself (the MCP tools, selfTransport) were
// checked when they arrived and pass.

// inProcessKey marks a request made by the gateway to itself.
type inProcessKey struct{}

// withInProcess marks ctx as the gateway's own request (selfTransport).
func withInProcess(ctx context.Context) context.Context {
	return context.WithValue(ctx, inProcessKey{}, true)
}

func inProcess(r *http.Request) bool {
	v, _ := r.Context().Value(inProcessKey{}).(bool)
	return v
}

// HostError reports an entry of SONDE_ALLOWED_HOSTS that is not a host name.
type HostError struct {
	// Host is the refused entry.
	Host string
	// Reason says what is wrong with it.
	Reason string
}

func (e *HostError) Error() string {
	return fmt.Sprintf("gateway: allowed host %q: %s (want a host name such as sonde.example.com, without scheme or port)", e.Host, e.Reason)
}

// ParseAllowedHosts reads a list of host names separated by commas or spaces
// (SONDE_ALLOWED_HOSTS) into Config.AllowedHosts. A name is matched whatever
// the port; a wildcard is refused.
func ParseAllowedHosts(s string) ([]string, error) {
	var out []string
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		h, err := normalizeAllowedHost(f)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

func normalizeAllowedHost(s string) (string, error) {
	h := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), ".")
	switch {
	case h == "":
		return "", &HostError{Host: s, Reason: "it is empty"}
	case strings.Contains(h, "*"):
		return "", &HostError{Host: s, Reason: "list each name; a wildcard is refused"}
	case strings.ContainsAny(h, "/:@ \x00") || strings.ContainsFunc(h, func(r rune) bool { return r < 0x21 || r > 0x7e }):
		return "", &HostError{Host: s, Reason: "a host name has no scheme, port, path or user, and only printable ASCII"}
	}
	return h, nil
}

// hostSet validates Config.AllowedHosts into a set; nil when none.
func hostSet(hosts []string) (map[string]bool, error) {
	if len(hosts) == 0 {
		return nil, nil
	}
	set := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		n, err := normalizeAllowedHost(h)
		if err != nil {
			return nil, err
		}
		set[n] = true
	}
	return set, nil
}

// hostName is the lower-case name or address of a Host header value, without
// port, brackets or a trailing dot.
func hostName(host string) string {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	} else {
		h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	}
	return strings.TrimSuffix(strings.ToLower(h), ".")
}

// hostAllowed is the Host rule (see the top of this file).
func (g *Gateway) hostAllowed(host string) bool {
	name := hostName(host)
	if host == "" {
		return true // HTTP/1.0 without Host: not a browser, nothing to rebind
	}
	if net.ParseIP(name) != nil || name == "localhost" || strings.HasSuffix(name, ".localhost") || g.allowedHosts[name] {
		return true
	}
	return len(g.cfg.Tokens) > 0 && len(g.allowedHosts) == 0
}

// originAllowed is the Origin rule: the request's own origin, or a CORS
// origin the operator listed.
func (g *Gateway) originAllowed(origin, host string) bool {
	if g.corsOrigins[strings.ToLower(origin)] {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.Path != "" {
		return false // "null", a file: or extension origin, garbage
	}
	return sameHostPort(u.Scheme, u.Host, host)
}

// sameHostPort compares an origin's host[:port] with a Host header, a port
// left out standing for the scheme's default.
func sameHostPort(scheme, originHost, host string) bool {
	def := "80"
	if scheme == "https" {
		def = "443"
	}
	norm := func(hp string) string {
		hp = strings.ToLower(hp)
		if h, p, err := net.SplitHostPort(hp); err == nil {
			if p == def {
				return strings.TrimSuffix(h, ".")
			}
			return strings.TrimSuffix(h, ".") + ":" + p
		}
		return strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(hp, "["), "]"), ".")
	}
	return norm(originHost) == norm(host)
}

// edge applies the Host and Origin rules to every request, before routing.
func (g *Gateway) edge(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if inProcess(r) {
			return next(c)
		}
		if !g.hostAllowed(r.Host) {
			g.log.Warn("request refused: host not allowed", "method", r.Method, "path", r.URL.Path, "host", truncate(r.Host, 64))
			return fail(http.StatusForbidden, api.CodeHostNotAllowed,
				fmt.Sprintf("requests for host %q are not served here", truncate(r.Host, 64)),
				"open the server by a loopback address (http://127.0.0.1:<port>, http://localhost:<port>), "+
					"or have the operator list the name in SONDE_ALLOWED_HOSTS")
		}
		// A CORS preflight reaches no handler; cors answers it, refusing
		// an origin it does not list.
		preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
		if origin := r.Header.Get("Origin"); origin != "" && !preflight && !g.originAllowed(origin, r.Host) {
			g.log.Warn("request refused: origin not allowed", "method", r.Method, "path", r.URL.Path, "origin", truncate(origin, 64))
			return fail(http.StatusForbidden, api.CodeOriginNotAllowed,
				fmt.Sprintf("a page of origin %q may not call this server", truncate(origin, 64)),
				"use the console this server serves, or have the operator list the origin in SONDE_CORS_ORIGINS")
		}
		g.bodyDeadline(c)
		return next(c)
	}
}

// bodyDeadline bounds how long a request body may take to arrive
// (Config.BodyReadTimeout): a client that sends its body slowly holds a
// handler no longer than that. The deadline is the connection's read
// deadline, set only while a body is being read and lifted once it has
// been: a request without a body (a run stream, which lives long) gets none,
// and the connection's later reads (which end a request's context when they
// fail) are not cut short. http.Server.ReadTimeout cannot do this: it stays
// on for the whole request, streams included.
func (g *Gateway) bodyDeadline(c echo.Context) {
	r := c.Request()
	if r.Body == nil || r.Body == http.NoBody {
		return
	}
	rc := http.NewResponseController(c.Response())
	if rc.SetReadDeadline(time.Now().Add(g.cfg.BodyReadTimeout)) != nil {
		return // not a server connection (the in-process transport, a test recorder)
	}
	r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
}

// deadlineBody lifts the read deadline once its body has been read to the
// end. A body that failed (its deadline passed) keeps it: the server reads
// what is left of a body after the handler, and must not wait for a client
// that stopped sending.
type deadlineBody struct {
	io.ReadCloser
	lift   func()
	lifted bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF && !b.lifted {
		b.lifted = true
		b.lift()
	}
	return n, err
}

// pathIDs checks the route's path parameters that name identifiers (run,
// connection, correlation ids) with contracts.CheckID before the handler
// sees them: each becomes a subject token or a key.
func pathIDs(ids map[string]contracts.IDKind) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			for name, kind := range ids {
				if err := contracts.CheckID(kind, c.Param(name)); err != nil {
					return idError(err)
				}
			}
			return next(c)
		}
	}
}

// idError is a CheckID refusal as the API's 400 invalid_id.
func idError(err error) error {
	if ie, ok := err.(*contracts.IDError); ok {
		return badRequest(ie.Code(), ie.Error(), ie.Fix())
	}
	return badRequest(contracts.CodeInvalidID, err.Error(), "send an id from the API's own answers")
}

// truncate cuts s to at most n bytes for a message, quoting does the rest.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
