package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/services/gateway/api"
)

// health answers 200 while the process serves HTTP and its NATS connection
// lives. A closed connection never comes back (the client gives up on a
// protocol error, or after its reconnect attempts), and nothing works
// without it: 503, so that a liveness probe restarts the process. A
// connection that is only reconnecting stays live (readiness says it is
// not ready).
func (g *Gateway) health(c echo.Context) error {
	if g.nc.IsClosed() {
		return unavailable("the NATS connection is closed and will not come back",
			"restart the process; its log says why NATS closed the connection")
	}
	return c.JSON(http.StatusOK, api.Health{Status: "ok"})
}

// ready answers 200 when the gateway could start a run now: NATS is
// connected, JetStream answers for the run ledger, an orchestrator answers
// and can record runs (its JetStream store takes writes), an executor
// answers for every engine a published connection needs, and Config.Ready,
// when set, passes. Otherwise 503 unavailable with the reason.
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
	var h contracts.RunHealth
	err := natsx.Request(ctx, g.nc, contracts.SubjectRunHealth, nil, &h)
	switch {
	case errors.Is(err, natsx.ErrNotDelivered):
		return errors.New("no orchestrator is running")
	case errors.Is(err, natsx.ErrUnanswered):
		return fmt.Errorf("the orchestrator did not answer its health check: %w", err)
	case err != nil:
		return fmt.Errorf("the orchestrator's health reply is not valid: %w", err)
	}
	if !h.Ready {
		return errors.New("the orchestrator cannot record runs: " + h.Cause)
	}
	return g.executorsAnswer(ctx)
}

// executorsAnswer checks that an executor answers for every engine a
// published connection needs: it pings the engine's NATS micro service
// ($SRV.PING.executor-<engine>), which every replica answers. A connection
// whose database is down is not this check's concern (its executor answers
// and says so in the descriptor); a connection whose executor is gone is:
// every read and run on it would fail with no one to say why.
func (g *Gateway) executorsAnswer(ctx context.Context) error {
	ds, err := g.descriptors(ctx)
	switch {
	case errors.Is(err, jetstream.ErrBucketNotFound):
		return nil // no executor ever published a connection: nothing to check
	case err != nil:
		return fmt.Errorf("the connection registry (%s) cannot be read: %w", contracts.ConnectionsBucket, err)
	}
	byEngine := map[contracts.Engine][]string{}
	var engines []contracts.Engine
	for _, d := range ds {
		if _, seen := byEngine[d.Engine]; !seen {
			engines = append(engines, d.Engine)
		}
		byEngine[d.Engine] = append(byEngine[d.Engine], d.ID)
	}
	var missing []string
	for _, e := range engines {
		name := contracts.QueueExecutorPrefix + string(e) // the service's NATS micro name, as logs and `nats micro` show it
		subject, err := micro.ControlSubject(micro.PingVerb, name, "")
		if err == nil {
			err = natsx.Request(ctx, g.nc, subject, nil, nil)
		}
		conns := strings.Join(byEngine[e], ", ")
		var answered *natsx.ServiceError // an error reply still says it runs
		switch {
		case errors.Is(err, natsx.ErrNotDelivered):
			missing = append(missing, fmt.Sprintf("no %s is running (connections %s)", name, conns))
		case errors.As(err, &answered):
		case err != nil:
			missing = append(missing, fmt.Sprintf("%s did not answer its ping (connections %s): %v", name, conns, err))
		}
	}
	if len(missing) > 0 {
		return errors.New(strings.Join(missing, "; "))
	}
	return nil
}
