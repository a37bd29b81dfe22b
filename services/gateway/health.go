package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// health answers 200 while the process serves HTTP.
func (g *Gateway) health(c echo.Context) error {
	return c.JSON(http.StatusOK, api.Health{Status: "ok"})
}

// ready answers 200 when the gateway could start a run now: NATS is
// connected, JetStream answers for the run ledger, an orchestrator answers
// and can record runs (its JetStream store takes writes), and Config.Ready,
// when set, passes. Otherwise 503 UNAVAILABLE with the reason.
func (g *Gateway) ready(c echo.Context) error {
	if err := g.readiness(c.Request().Context()); err != nil {
		return unavailable("not ready: "+err.Error(), "see the gateway's and the orchestrator's logs and the NATS server")
	}
	return c.JSON(http.StatusOK, api.Health{Status: "ready", Detail: g.unavailableConnections(c.Request().Context())})
}

var errNATSDisconnected = errors.New("the NATS connection is not connected")

// readyTimeout bounds each readiness check's round trip.
const readyTimeout = 2 * time.Second

func (g *Gateway) readiness(ctx context.Context) error {
	if g.nc.Status() != nats.CONNECTED {
		return errNATSDisconnected
	}
	if g.cfg.Ready != nil {
		if err := g.cfg.Ready(ctx); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	// The checks a run start makes: JetStream reachable (it answers for a
	// while after NATS itself is back) and an orchestrator able to write.
	if _, err := g.js.Stream(ctx, contracts.LedgerStream); err != nil {
		return fmt.Errorf("JetStream does not answer for the run ledger (%s): %w", contracts.LedgerStream, err)
	}
	msg, err := g.nc.RequestWithContext(ctx, contracts.SubjectRunHealth, nil)
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return errors.New("no orchestrator is running")
	case err != nil:
		return fmt.Errorf("the orchestrator did not answer its health check: %w", err)
	}
	var h contracts.RunHealth
	if err := json.Unmarshal(msg.Data, &h); err != nil {
		return fmt.Errorf("the orchestrator's health reply is not valid: %w", err)
	}
	if !h.Ready {
		return errors.New("the orchestrator cannot record runs: " + h.Cause)
	}
	return nil
}
