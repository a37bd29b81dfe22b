package executor

import (
	"context"
	"fmt"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

// explain plans ereq.SQL for OpExplain: as the database is, or, when the
// request names a hypothetical index, as if that index existed — which only
// an engine.HypotheticalPlanner can do; any other engine refuses with
// contracts.RefuseHypotheticalUnavailable, returned as the error.
func explain(ctx context.Context, kind contracts.Engine, eng engine.Engine, p engine.Planner, ereq engine.Request, index string) (engine.Result, contracts.PlanSummary, error) {
	if index == "" {
		return p.Plan(ctx, ereq)
	}
	hp, ok := eng.(engine.HypotheticalPlanner)
	if !ok {
		return engine.Result{}, contracts.PlanSummary{Engine: kind, Access: []contracts.RelationAccess{}},
			refuse.New(contracts.RefuseHypotheticalUnavailable,
				fmt.Sprintf("the %s executor cannot plan with a hypothetical index", kind),
				"compare plans of rewrites instead, or recommend the index citing the plan you diagnosed")
	}
	ereq.HypotheticalIndex = index
	return hp.PlanHypothetical(ctx, ereq)
}
