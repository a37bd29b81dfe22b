package orchestrator

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// Shortfalls: what a report that would end the run unanswered lacks, said
// with this run's own ids — the step it skipped, the results it could cite
// — so the model's one more try can mend it. The sentences are the
// server's; a shortfall this file has no sentence for is said in the
// verdict package's words.

// shortfalls is the reason and the fix of a report_incomplete refusal: one
// sentence per shortfall of v, and what to do, ending with what sending the
// report unchanged does.
func (d *drive) shortfalls(v contracts.GoalVerdict, claims []contracts.Claim) (reason, fix string) {
	var whys, fixes []string
	for _, code := range v.Unmet {
		why, what := d.shortfall(code, v, claims)
		whys = append(whys, why)
		if what != "" {
			fixes = append(fixes, what)
		}
	}
	reason = "this report would end the run unanswered under " + v.Rule + ": " + strings.Join(whys, "; ")
	fix = strings.Join(fixes, "; ")
	if fix != "" {
		fix += ". "
	}
	fix += "Sent again with the same shortfall, the report is recorded and the run ends unanswered."
	return reason, fix
}

// shortfall is one shortfall's sentence and its fix, in this run's ids.
func (d *drive) shortfall(code string, v contracts.GoalVerdict, claims []contracts.Claim) (why, fix string) {
	rec := d.record()
	reads := d.resultsOf(rec, policy.ToolRunReadQuery)
	plans := d.resultsOf(rec, policy.ToolInspectPlan)
	switch code {
	case verdict.UnmetNoAnswer:
		why = "this data-analysis run has presented no answer"
		if id := answerCandidate(reads, claims); id != "" {
			return why, fmt.Sprintf("call present_answer with %s — the result that IS the answer — then compose_report citing %s", id, id)
		}
		return why, "read the answer with run_read_query, call present_answer with that result, then compose_report citing it"
	case verdict.UnmetAnswerUncited:
		id := rec.Answer.CorrelationID
		return fmt.Sprintf("no claim cites the presented answer %s", id),
			fmt.Sprintf("cite %s in at least one claim: the report is about what the run presented", id)
	case verdict.UnmetNoPlanEvidence:
		why = "the index recommendation cites no plan: " + cited(rec.Recommendations)
		if len(plans) > 0 {
			return why, fmt.Sprintf("call recommend_change again citing the inspect_plan result that shows the scan the index removes (%s), then compose_report", strings.Join(plans, " or "))
		}
		return why, "call inspect_plan on the slow statement first, then recommend the index citing that plan"
	case verdict.UnmetNoPlanComparison:
		why = "this optimization run compared no plans and recommended no index"
		switch len(plans) {
		case 0:
			return why, "call inspect_plan on the statement first: every ending of this workflow rests on a plan"
		case 1:
			return why, fmt.Sprintf("inspect the plan of a rewrite (or with a hypothetical index) and compare_plans it with %s; "+
				"or recommend a change citing %s; or, when the plan is already good, report that no change is needed, citing %s", plans[0], plans[0], plans[0])
		}
		a, b := plans[len(plans)-2], plans[len(plans)-1]
		return why, fmt.Sprintf("call compare_plans with before %s and after %s; or recommend a change citing a plan (%s); "+
			"or, when the plan is already good, report that no change is needed, citing the inspect_plan result %s", a, b, strings.Join(plans, ", "), a)
	case verdict.UnmetNoTableProfile:
		why = "an assessment rests on profiled data, and this run profiled no table"
		if tables := d.tablesFor(claims); len(tables) > 0 {
			return why, "call profile_table on a table the report is about: " + strings.Join(tables, ", ")
		}
		return why, "call profile_table on a table the report is about"
	case verdict.UnmetNoReading:
		why = "the report cites no reading this run took"
		if ops := d.resultsOf(rec, policy.ToolInspectOperations); len(ops) > 0 {
			return why, "cite the readings it rests on: " + strings.Join(ops, ", ")
		}
		return why, "take a reading with inspect_operations (kinds: " + kindList() + ") and cite it"
	case verdict.UnmetEmptyEvidence:
		return "every result the claims cite holds no rows: an empty result shows that nothing matched, not the answer",
			"cite, beside the empty reading, one that shows what does exist"
	case verdict.UnmetFigureUnverified:
		return unverifiedFigures(v, claims), "state each figure as the cited rows show it (at their shown precision), or cite the result that shows it"
	case verdict.UnmetSchemaOnly:
		return "the claims about data cite only the schema snapshot, which shows the database's structure, not its data",
			"read the data with run_read_query and cite the result; if it cannot be read, say so — the report then ends the run unanswered, honestly"
	case verdict.UnmetDataUnread:
		return "the report says the data could not be read, so the objective is not answered",
			"if a reading can still be made, make it and cite it; if not, send the report again as it is and the run ends unanswered, saying so"
	case verdict.UnmetUnseenEvidence:
		_, list := d.citable()
		return "a claim cites a result the model had not seen when it wrote it", "cite only results shown in an earlier turn. " + list
	}
	return explainShortfall(code), ""
}

// resultsOf lists the ids of tool's completed results, in ledger order.
func (d *drive) resultsOf(rec contracts.Record, tool string) []string {
	var out []string
	for _, st := range rec.Steps {
		if st.Tool == tool && st.Status == contracts.StepCompleted && st.Artifact != nil {
			out = append(out, st.Artifact.CorrelationID)
		}
	}
	return out
}

// answerCandidate is the read a report without an answer most likely
// rests on: the last one its claims cite, else the run's last read.
func answerCandidate(reads []string, claims []contracts.Claim) string {
	for i := len(claims) - 1; i >= 0; i-- {
		for j := len(claims[i].Evidence) - 1; j >= 0; j-- {
			if id := claims[i].Evidence[j].CorrelationID; slices.Contains(reads, id) {
				return id
			}
		}
	}
	if len(reads) > 0 {
		return reads[len(reads)-1]
	}
	return ""
}

// cited says what the run's index recommendations cite instead of a plan.
func cited(recs []contracts.Recommendation) string {
	var ids []string
	for _, r := range recs {
		if r.Kind != contracts.RecommendIndex {
			continue
		}
		for _, ref := range r.Evidence {
			if id := ref.CorrelationID; id != "" && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		return "it cites nothing"
	}
	return "it cites " + strings.Join(ids, ", ") + ", none of them an inspect_plan result"
}

// tablesFor names the tables an assessment could profile: those the claims
// name first, then the rest of the inventory's, at most six.
func (d *drive) tablesFor(claims []contracts.Claim) []string {
	inv := d.inventory(context.Background())
	if inv == nil {
		return nil
	}
	var text strings.Builder
	for _, c := range claims {
		text.WriteString(strings.ToLower(c.Text) + " ")
	}
	var named, rest []string
	for _, r := range inv.Relations {
		if r.Kind != contracts.RelationTable {
			continue
		}
		if strings.Contains(text.String(), strings.ToLower(r.Name)) {
			named = append(named, r.Name)
		} else {
			rest = append(rest, r.Name)
		}
	}
	out := append(named, rest...)
	return out[:min(len(out), 6)]
}

// unverifiedFigures names each figure the verifier found in none of its
// claim's evidence, and the ids it was looked for in.
func unverifiedFigures(v contracts.GoalVerdict, claims []contracts.Claim) string {
	var parts []string
	for _, cc := range v.Claims {
		var figs []string
		for _, f := range cc.Figures {
			if f.Status == contracts.FigureUnverified {
				figs = append(figs, fence.Quote(f.Text))
			}
		}
		if len(figs) == 0 {
			continue
		}
		var ids []string
		if cc.Claim >= 1 && cc.Claim <= len(claims) {
			for _, ref := range claims[cc.Claim-1].Evidence {
				ids = append(ids, refName(ref))
			}
		}
		parts = append(parts, fmt.Sprintf("claim %d states %s, found in none of the results it cites (%s) nor derived from them",
			cc.Claim, strings.Join(figs, ", "), strings.Join(ids, ", ")))
	}
	if len(parts) == 0 {
		return "a claim states a figure found in none of the results it cites"
	}
	return strings.Join(parts, "; ")
}

// refName is how a citation is named in a sentence.
func refName(ref contracts.EvidenceRef) string {
	if ref.CorrelationID != "" {
		return ref.CorrelationID
	}
	return "the context snapshot"
}

// explainShortfall is the verifier's sentence for a shortfall this file
// does not word itself.
func explainShortfall(code string) string {
	if s := verdict.Explain(code); s != "" {
		return s
	}
	return fmt.Sprintf("the verdict lists the shortfall %q", code)
}
