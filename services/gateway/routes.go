package gateway

import (
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/services/gateway/api"
)

// routes builds the echo router. Every route under /api requires an actor
// (authenticate, attached to each route so that a wrong method still answers
// 405); /healthz and /readyz do not.
func (g *Gateway) routes() http.Handler {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = g.handleError
	e.Use(g.logRequests, g.recoverPanics)

	e.GET(api.PathHealth, g.health)
	e.GET(api.PathReady, g.ready)

	auth := g.authenticate
	e.GET(api.PathConfig, g.agentConfig, auth)
	e.GET(api.PathRuns, g.listRuns, auth)
	e.POST(api.PathRuns, g.startRun, auth)
	e.GET(api.PathRuns+"/:id", g.getRun, auth)
	e.DELETE(api.PathRuns+"/:id", g.cancelRun, auth)
	e.GET(api.PathRuns+"/:id/stream", g.streamRun, auth)
	e.GET(api.PathRuns+"/:id/artifacts/:cid", g.getArtifact, auth)
	e.POST(api.PathRuns+"/:id/handover", g.handover, auth)
	e.GET(api.PathConnections, g.listConnections, auth)
	e.POST(api.PathQuery, g.query, auth)
	return e
}
