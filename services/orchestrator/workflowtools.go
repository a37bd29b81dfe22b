package orchestrator

import (
	"context"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/fence"
)

// What the tools that check a result against its rows share (compare_plans,
// present_answer): each tool itself is its own file, tool_<name>.go.

// held reports whether the run's result corr is still in the artifact
// store: a comparison and an answer are checked against rows, and rows
// that are gone are said to be gone.
func (d *drive) held(ctx context.Context, corr string) bool {
	_, err := d.rows(ctx, corr)
	return err == nil
}

// rows reads the run's stored result corr.
func (d *drive) rows(ctx context.Context, corr string) (contracts.Artifact, error) {
	if d.s.artifacts == nil {
		return contracts.Artifact{}, artifacts.ErrNotFound
	}
	return d.s.artifacts.Get(ctx, d.runID, corr)
}

func quoteEach(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fence.Quote(n)
	}
	return out
}
