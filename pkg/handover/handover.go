// Package handover decides whether a presented answer is also run in the
// user's editor (auto-execute). The decision is a pure function of what the
// run's ledger says about the answer's statement; it fails closed: evidence
// that is missing, partial or of an engine it cannot weigh reads as risky,
// and the statement is then placed in the editor unrun with a warning.
package handover

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
)

// The gate's thresholds, approved as a starting point that live measurement
// confirms or corrects.
const (
	// MaxPlanCost is the highest PostgreSQL estimated total cost (planner
	// units) a replayed statement's plan may report: about 400 MB of
	// sequential reading at the default seq_page_cost.
	MaxPlanCost = 50_000
	// MaxElapsedMs is the longest the run's own read of the statement may
	// have taken at the database: the editor's replay has no statement
	// timeout, and 2 s leaves a wide margin inside the run's own 10 s.
	MaxElapsedMs = 2_000
)

// Condition names one of the gate's three conditions, as a warning names it.
type Condition string

// The conditions, in the order the gate weighs them.
const (
	// CondExecuted: the run executed exactly this statement.
	CondExecuted Condition = "not-executed"
	// CondPlan: the estimating plan the run read of it is safe for the engine.
	CondPlan Condition = "plan-risky"
	// CondElapsed: the run's read of it took at most MaxElapsedMs.
	CondElapsed Condition = "too-slow"
)

// Evidence is what the run's ledger says about the presented statement.
type Evidence struct {
	Engine contracts.Engine
	// Executed: the run executed exactly this statement (joined on the
	// guard's canonical fingerprint). A statement it only planned is not one
	// it executed.
	Executed bool
	// Plan is the estimating plan this run read of the same statement; nil
	// when none.
	Plan *contracts.PlanSummary
	// ElapsedMs is the answer read's measured database time.
	ElapsedMs int64
}

// Gate decides the handover: contracts.HandoverAutoExecuted when all three
// conditions hold, else contracts.HandoverApplied with a warning sentence
// saying which condition failed and what to do.
func Gate(e Evidence) (contracts.Handover, string) {
	failed := Failed(e)
	if len(failed) == 0 {
		return contracts.HandoverAutoExecuted, ""
	}
	parts := make([]string, len(failed))
	for i, f := range failed {
		parts[i] = fmt.Sprintf("%s (%s)", f.Reason, f.Condition)
	}
	fixes := make([]string, 0, len(failed))
	for _, f := range failed {
		if !slices.Contains(fixes, f.Fix) {
			fixes = append(fixes, f.Fix)
		}
	}
	return contracts.HandoverApplied, "The statement was placed in the editor but not run: " +
		strings.Join(parts, "; ") + ". " + strings.Join(fixes, " ")
}

// Failure is one condition the evidence did not meet.
type Failure struct {
	Condition Condition
	// Reason says what the evidence showed; Fix what would satisfy it.
	Reason, Fix string
}

// Failed lists the conditions the evidence does not meet, in order; none
// when the statement may be replayed unattended.
func Failed(e Evidence) []Failure {
	var out []Failure
	if !e.Executed {
		out = append(out, Failure{CondExecuted,
			"this run did not itself execute this exact statement",
			"Run it yourself if it looks right; an answer is replayed only when the run read exactly the statement it presents, and a statement it only planned is not one it read."})
	}
	if reason, fix := planRisk(e.Engine, e.Plan); reason != "" {
		out = append(out, Failure{CondPlan, reason, fix})
	}
	switch {
	case e.ElapsedMs < 0:
		out = append(out, Failure{CondElapsed, "the run's read of it has no measured time",
			"Run it yourself; an answer is replayed only when its measured time is known."})
	case e.ElapsedMs > MaxElapsedMs:
		out = append(out, Failure{CondElapsed,
			fmt.Sprintf("the run's read of it took %d ms at the database, more than the %d ms an unattended replay may take", e.ElapsedMs, MaxElapsedMs),
			"Run it yourself when a slow read is acceptable, or narrow it (a tighter WHERE, an indexed column)."})
	}
	return out
}

// inspectFix is what a run must do to give the gate a plan to weigh.
const inspectFix = "Inspect the plan of the answer's statement (inspect_plan) before presenting it."

// planRisk says why plan p does not read as safe on engine, or "" when it
// does. Unknown reads as risky throughout.
//
// Steps the summary left uninterpreted are risky on every engine. On SQLite
// the access reading is the gate's whole evidence (no cost, no preemption),
// so a skipped step is no evidence. On PostgreSQL the summary already reads
// the structural nodes (joins, sorts, aggregates) as known, so what remains
// uninterpreted is a node whose reading it cannot weigh — a foreign, custom,
// sample or TID scan that reads a relation outside the access list, a
// function or recursive scan whose estimate is a guess — and the replay has
// no statement timeout to stop it. Such an answer is placed unrun, which
// costs the user one click.
func planRisk(engine contracts.Engine, p *contracts.PlanSummary) (reason, fix string) {
	switch {
	case p == nil:
		return "this run read no plan of this statement", inspectFix
	case p.Engine != "" && p.Engine != engine:
		return fmt.Sprintf("the plan is a %s plan, the connection is %s", p.Engine, engineName(engine)), inspectFix
	case p.HypotheticalIndex != "":
		return "the plan was made as if an index existed (" + p.HypotheticalIndex + "), not of the database as it is", inspectFix
	case !weighed(engine):
		return fmt.Sprintf("plans on %s are not weighed for an unattended replay (only %s plans are)", engineName(engine), weighedLabels()),
			"Run it yourself if it looks right."
	case len(p.Access) == 0:
		return "the plan names no relation it reads, so nothing says how it reads them", "Run it yourself if it looks right."
	case len(p.Uninterpreted) > 0:
		return "the plan holds steps the summary could not interpret (" + strings.Join(p.Uninterpreted, ", ") + ")",
			"Run it yourself if it looks right."
	}
	for _, a := range p.Access {
		ok := a.Access == contracts.AccessIndex
		if engine == contracts.EnginePostgres {
			ok = ok || a.Access == contracts.AccessMixed
		}
		if !ok {
			want := "an index (every step a SEARCH)"
			if engine == contracts.EnginePostgres {
				want = "an index, at least in part"
			}
			return fmt.Sprintf("the plan reads %s by %s, not by %s", a.Relation, accessWords(a.Access), want),
				"Narrow it to indexed columns if it should be cheap, or run it yourself."
		}
	}
	if engine == contracts.EnginePostgres {
		switch {
		case p.Cost == nil:
			return "the plan reports no estimated cost", inspectFix
		case math.IsNaN(*p.Cost) || *p.Cost < 0:
			return fmt.Sprintf("the plan's estimated cost (%g) is not a cost", *p.Cost), inspectFix
		case *p.Cost > MaxPlanCost:
			return fmt.Sprintf("the plan's estimated cost is %g, more than %d", *p.Cost, MaxPlanCost),
				"Narrow it if it should be cheap, or run it yourself."
		}
	}
	return "", ""
}

func accessWords(k contracts.AccessKind) string {
	switch k {
	case contracts.AccessFullScan:
		return "a full scan"
	case contracts.AccessMixed:
		return "a full scan in one step and an index in another"
	case contracts.AccessIndex:
		return "an index"
	}
	return "an access the summary could not read"
}

// weighed reports whether engine e's plans are weighed for an unattended
// replay (engine.Capabilities.WeighedReplay); an undeclared engine's are not.
func weighed(e contracts.Engine) bool {
	s, ok := enginespec.Lookup(e)
	return ok && s.Capabilities.WeighedReplay
}

// weighedLabels names the engines whose plans are weighed: "PostgreSQL and
// SQLite".
func weighedLabels() string {
	var labels []string
	for _, s := range enginespec.All() {
		if s.Capabilities.WeighedReplay {
			labels = append(labels, s.Label)
		}
	}
	if len(labels) < 2 {
		return strings.Join(labels, "")
	}
	return strings.Join(labels[:len(labels)-1], ", ") + " and " + labels[len(labels)-1]
}

func engineName(e contracts.Engine) string {
	if e == "" {
		return "an unknown engine"
	}
	return string(e)
}
