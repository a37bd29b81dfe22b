package gateway

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
)

// getArtifact answers GET /api/agent/runs/{id}/artifacts/{cid}: one stored
// result of a run the caller owns.
func (g *Gateway) getArtifact(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	runID, cid := c.Param("id"), c.Param("cid")
	if _, err := g.ownedRun(ctx, a, runID); err != nil {
		return err
	}
	st, err := g.artifactStore(ctx)
	if err != nil {
		g.log.Warn("artifact store unavailable", "err", err)
		return unavailable("the artifact store cannot be reached", "retry shortly; check NATS")
	}
	art, err := st.Get(ctx, runID, cid)
	switch {
	case errors.Is(err, artifacts.ErrNotFound), errors.Is(err, artifacts.ErrInvalidKey):
		return fail(http.StatusNotFound, contracts.CodeArtifactNotFound,
			fmt.Sprintf("run %s has no stored result %q", runID, cid),
			"use a correlationId from the run's steps; results expire after the artifact TTL")
	case err != nil:
		g.log.Warn("artifact read failed", "run", runID, "correlation", cid, "err", err)
		return unavailable("the artifact store cannot be read", "retry shortly; check NATS")
	}
	return c.JSON(http.StatusOK, art)
}
