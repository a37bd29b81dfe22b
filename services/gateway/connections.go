package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
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

func (g *Gateway) descriptors(ctx context.Context) ([]contracts.ConnectionDescriptor, error) {
	kv, err := g.connectionsKV(ctx)
	if err != nil {
		return nil, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	defer lister.Stop()
	out := []contracts.ConnectionDescriptor{}
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue // deleted since it was listed
		}
		if err != nil {
			return nil, err
		}
		var d contracts.ConnectionDescriptor
		if err := json.Unmarshal(e.Value(), &d); err != nil || d.ID == "" {
			g.log.Warn("skipping undecodable connection descriptor", "key", key, "err", err)
			continue
		}
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b contracts.ConnectionDescriptor) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
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
