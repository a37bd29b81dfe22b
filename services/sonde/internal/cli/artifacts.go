package cli

import (
	"context"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/render"
)

// runArtifacts fetches a run's results from the gateway for the printers.
func runArtifacts(ctx context.Context, c *client.Client, runID string) render.Source {
	return func(correlationID string) (contracts.Artifact, error) {
		return c.Artifact(ctx, runID, correlationID)
	}
}
