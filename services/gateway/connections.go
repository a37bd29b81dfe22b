package gateway

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/registry"
	"github.com/sondehq/sonde/services/gateway/api"
)

// listConnections answers GET /api/connections: every descriptor executors
// have published, sorted by id.
func (g *Gateway) listConnections(c echo.Context) error {
	if _, err := actor(c); err != nil {
		return err
	}
	conns, err := g.descriptors(c.Request().Context())
	if err != nil {
		g.log.Warn("list connections", "err", err)
		return unavailable("the connection registry cannot be read", "retry shortly; check NATS")
	}
	return c.JSON(http.StatusOK, api.Connections{Connections: conns})
}

// descriptors lists every valid descriptor of the registry, sorted by id.
func (g *Gateway) descriptors(ctx context.Context) ([]contracts.ConnectionDescriptor, error) {
	reg, err := g.registry(ctx)
	if err != nil {
		return nil, err
	}
	return reg.List(ctx)
}

// descriptor reads the published descriptor of connection id: 400
// unknown_connection when none is, 503 when its entry is not a valid
// descriptor or the registry cannot be read.
func (g *Gateway) descriptor(ctx context.Context, id string) (contracts.ConnectionDescriptor, error) {
	reg, err := g.registry(ctx)
	if err != nil {
		g.log.Warn("connection registry unavailable", "err", err)
		return contracts.ConnectionDescriptor{}, unavailable("the connection registry cannot be reached", "retry shortly; check NATS")
	}
	d, err := reg.Get(ctx, id)
	var invalid *registry.InvalidError
	switch {
	case errors.Is(err, registry.ErrUnknownConnection):
		return d, badRequest(contracts.CodeUnknownConnection, fmt.Sprintf("no connection %q is known to this server", id),
			"GET "+api.PathConnections+" lists the connection ids you can use")
	case errors.As(err, &invalid):
		g.log.Warn("invalid connection descriptor", "connection", id, "err", err)
		return d, unavailable(fmt.Sprintf("connection %q has no readable descriptor", id), "restart its executor")
	case err != nil:
		g.log.Warn("connection lookup failed", "connection", id, "err", err)
		return d, unavailable("the connection registry cannot be reached", "retry shortly; check NATS")
	}
	return d, nil
}

// unavailableConnections says which connections an executor could not open,
// and why: /readyz stays ready without them (one database down must not
// take the server out of service), but an operator should see it there.
func (g *Gateway) unavailableConnections(ctx context.Context) []string {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	ds, err := g.descriptors(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range ds {
		if d.Status == contracts.ConnectionUnavailable {
			out = append(out, fmt.Sprintf("connection %s (%s) is unavailable: %s", d.ID, d.Engine, d.Reason))
		}
	}
	return out
}
