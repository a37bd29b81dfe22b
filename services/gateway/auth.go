package gateway

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
)

const actorKey = "sonde.actor"

// authenticate resolves the caller's actor from "Authorization: Bearer
// <token>" and refuses the request 401 unauthorized without a known token.
// With no tokens configured (the gateway then listens on loopback only) every
// caller is the local admin.
func (g *Gateway) authenticate(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		a, err := g.actorOf(c.Request())
		if err != nil {
			c.Response().Header().Set("WWW-Authenticate", `Bearer realm="sonde"`)
			return err
		}
		c.Set(actorKey, a)
		return next(c)
	}
}

// actorOf is the caller's actor. Only "Authorization: Bearer <token>"
// authenticates: a token under any other scheme (Basic, none) is refused,
// and so is a malformed Authorization header on a token-less local server,
// where a Bearer header's token goes unchecked (there is none to check).
func (g *Gateway) actorOf(r *http.Request) (contracts.Actor, error) {
	header, sent := r.Header["Authorization"]
	token, bearer := parseBearer(r.Header.Get("Authorization"))
	if len(g.cfg.Tokens) == 0 {
		if sent && (len(header) != 1 || !bearer) {
			return contracts.Actor{}, fail(http.StatusUnauthorized, contracts.CodeUnauthorized,
				"the Authorization header is not \"Bearer <token>\"",
				"this server needs no token: send no Authorization header, or one of the Bearer scheme")
		}
		return localActor, nil
	}
	if bearer && len(header) == 1 {
		if a, found := lookupToken(g.cfg.Tokens, token); found {
			return a, nil
		}
	}
	return contracts.Actor{}, fail(http.StatusUnauthorized, contracts.CodeUnauthorized,
		"a valid API token is required", "send Authorization: Bearer <token> with a token from SONDE_API_TOKENS")
}

// parseBearer reads an "Authorization: Bearer <token>" value: the scheme in
// any case, then one token with no space or control character in it.
func parseBearer(v string) (string, bool) {
	scheme, token, ok := strings.Cut(v, " ")
	token = strings.TrimLeft(token, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || strings.ContainsFunc(token, isSpaceOrControl) {
		return "", false
	}
	return token, true
}

// actor is the authenticated caller of a request under /api. Every handler
// there reads it; a handler reached without one refuses the request.
func actor(c echo.Context) (contracts.Actor, error) {
	a, ok := c.Get(actorKey).(contracts.Actor)
	if !ok || a.ID == "" {
		return contracts.Actor{}, fail(http.StatusUnauthorized, contracts.CodeUnauthorized,
			"a valid API token is required", "send Authorization: Bearer <token>")
	}
	return a, nil
}
