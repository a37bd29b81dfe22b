package gateway

import (
	"context"
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/services/gateway/api"
)

// health answers 200 while the process serves HTTP.
func (g *Gateway) health(c echo.Context) error {
	return c.JSON(http.StatusOK, api.Health{Status: "ok"})
}

// ready answers 200 when Config.Ready passes (or, without one, while NATS is
// connected), else 503 UNAVAILABLE with the reason.
func (g *Gateway) ready(c echo.Context) error {
	if err := g.readiness(c.Request().Context()); err != nil {
		return unavailable("not ready: "+err.Error(), "see the gateway's log and the NATS connection")
	}
	return c.JSON(http.StatusOK, api.Health{Status: "ready"})
}

var errNATSDisconnected = errors.New("the NATS connection is not connected")

func (g *Gateway) readiness(ctx context.Context) error {
	if g.cfg.Ready != nil {
		return g.cfg.Ready(ctx)
	}
	if g.nc.Status() != nats.CONNECTED {
		return errNATSDisconnected
	}
	return nil
}
