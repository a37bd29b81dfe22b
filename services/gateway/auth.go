package gateway

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
)

const actorKey = "sonde.actor"

// authenticate resolves the caller's actor from "Authorization: Bearer
// <token>" and refuses the request 401 UNAUTHORIZED without a known token.
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

func (g *Gateway) actorOf(r *http.Request) (contracts.Actor, error) {
	if len(g.cfg.Tokens) == 0 {
		return localActor, nil
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		if a, found := lookupToken(g.cfg.Tokens, strings.TrimSpace(token)); found {
			return a, nil
		}
	}
	return contracts.Actor{}, fail(http.StatusUnauthorized, contracts.CodeUnauthorized,
		"a valid API token is required", "send Authorization: Bearer <token> with a token from SONDE_API_TOKENS")
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
