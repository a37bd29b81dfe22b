package ledger

import (
	"encoding/json"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// Fold derives a run's record from its entries. It is a pure function of the
// entries: the same ledger always folds to the same record, in any process.
// Entries of kinds it does not know, or whose payload does not decode, are
// skipped, so a ledger written by a newer release still folds.
func Fold(runID string, entries []contracts.Entry) contracts.Record {
	r := contracts.Record{RunID: runID, Status: contracts.StatusQueued, Steps: []contracts.Step{}}
	open := map[string]int{}  // step id -> index of its invoked, unsettled step
	counted := map[int]bool{} // turns whose usage is summed
	for _, e := range entries {
		r.Entries++
		r.LastSeq = e.StreamSeq
		v, err := e.Decode()
		if err != nil {
			continue
		}
		if r.Status.Terminal() {
			continue // nothing after run-finished counts
		}
		if turn, u := usageOf(v); u != nil && !counted[turn] {
			counted[turn] = true
			r.Usage.InputTokens += u.InputTokens
			r.Usage.OutputTokens += u.OutputTokens
			r.Usage.CachedTokens += u.CachedTokens
		}
		switch p := v.(type) {
		case *contracts.RunStarted:
			r.Mode = p.Mode
			r.WorkflowType = p.WorkflowType
			if r.WorkflowType == "" {
				r.WorkflowType = contracts.WorkflowInvestigation
			}
			r.Objective = p.Objective
			r.ConnectionID = p.ConnectionID
			r.ConnectionIdentity = p.ConnectionIdentity
			r.Actor = p.Actor
			r.PreviousRunID = p.PreviousRunID
			r.Thread = p.Thread
			r.Budget = p.Budget
			r.Tools = p.Tools
			r.StartedAt = e.At
		case *contracts.DriverResolved:
			r.Status = contracts.StatusRunning
			r.Provider, r.Model, r.Demo = p.Provider, p.Model, p.Demo
			r.Drives++
		case *contracts.PlanStatementDrafted:
			r.Plan = p
		case *contracts.ContextCaptured:
			r.ContextFingerprint = p.Fingerprint
			r.Spent.Statements += p.Statements
			r.Spent.DBTimeMs += p.DurationMs
		case *contracts.ToolInvoked:
			r.Spent.Turns = max(r.Spent.Turns, p.Turn)
			if p.CorrelationID != "" {
				r.Spent.Statements++ // a step that reaches the database names its artifact
			}
			open[p.StepID] = len(r.Steps)
			r.Steps = append(r.Steps, contracts.Step{
				StepID: p.StepID, Turn: p.Turn, Tool: p.Tool, Arguments: p.Arguments,
				Status: contracts.StepInvoked, CorrelationID: p.CorrelationID,
			})
		case *contracts.ToolCompleted:
			r.Spent.Turns = max(r.Spent.Turns, p.Turn)
			r.Spent.DBTimeMs += p.DurationMs
			i, ok := open[p.StepID]
			if !ok {
				continue
			}
			delete(open, p.StepID)
			s := &r.Steps[i]
			s.DurationMs, s.Fingerprint, s.Plan = p.DurationMs, p.Fingerprint, p.Plan
			switch p.Outcome {
			case contracts.OutcomeOK:
				s.Status = contracts.StepCompleted
				s.Artifact = p.Artifact
			case contracts.OutcomeError:
				s.Status = contracts.StepFailed
				s.DBError = p.DBError
				r.Spent.Repairs++
			default:
				s.Status = contracts.StepIndeterminate
			}
		case *contracts.ToolRefused:
			r.Spent.Turns = max(r.Spent.Turns, p.Turn)
			refusal := &contracts.Refusal{Code: p.Code, Message: p.Reason, Fix: p.Fix}
			if i, ok := open[p.StepID]; ok && p.StepID != "" {
				// Refused after it was invoked (by the executor's guard):
				// the step settles without having run.
				delete(open, p.StepID)
				r.Steps[i].Status, r.Steps[i].Refusal = contracts.StepRefused, refusal
				if !contracts.RefusalRan(p.Code) && r.Steps[i].CorrelationID != "" {
					// Refused before the database ran it (the guard, a
					// statement that already failed, a saturated or
					// unavailable executor): the step costs no statement. A
					// result refused as too large ran, and counts.
					r.Spent.Statements--
				}
				continue
			}
			r.Steps = append(r.Steps, contracts.Step{
				StepID: p.StepID, Turn: p.Turn, Tool: p.Tool, Arguments: p.Arguments,
				Status: contracts.StepRefused, Refusal: refusal,
			})
		case *contracts.ReportComposed:
			r.Spent.Turns = max(r.Spent.Turns, p.Turn)
			r.Report = p.Claims
			r.Steps = append(r.Steps, recorded(p.ToolCall))
		case *contracts.PlanComparison:
			r.Spent.Turns = max(r.Spent.Turns, p.Turn)
			r.Comparisons = append(r.Comparisons, *p)
			r.Steps = append(r.Steps, recorded(p.ToolCall))
		case *contracts.Recommendation:
			r.Spent.Turns = max(r.Spent.Turns, p.Turn)
			r.Recommendations = append(r.Recommendations, *p)
			r.Steps = append(r.Steps, recorded(p.ToolCall))
		case *contracts.TableProfiled:
			r.Profiles = append(r.Profiles, *p) // its step is the profile's own
		case *contracts.AnswerComposed:
			r.Spent.Turns = max(r.Spent.Turns, p.Turn)
			r.Answer = p
			r.Steps = append(r.Steps, recorded(p.ToolCall))
		case *contracts.ClosingStatement:
			r.Spent.Turns = max(r.Spent.Turns, p.Turn)
			if strings.TrimSpace(p.Text) != "" && p.Refused == nil { // a call refused as unreadable is no closing
				r.Closing = p.Text
			}
		case *contracts.RunFinished:
			r.Status = p.Status
			r.StopReason = p.StopReason
			r.Reason = p.Reason
			r.GoalVerdict = p.GoalVerdict
			r.Detail = p.Detail
			r.Question = p.Question
			at := e.At
			r.FinishedAt = &at
		}
	}
	if r.Status.Terminal() {
		// A step still open when its run ended never settled: it may or may
		// not have run, and nothing will ever run it again.
		for _, i := range open {
			r.Steps[i].Status = contracts.StepIndeterminate
		}
	}
	return r
}

// recorded is the step of a tool that reaches no database and records what
// it was told (a comparison, a recommendation, an answer).
func recorded(tc contracts.ToolCall) contracts.Step {
	return contracts.Step{Turn: tc.Turn, Tool: tc.Tool, Arguments: tc.Arguments, Status: contracts.StepCompleted}
}

// OpenSteps returns the steps of entries that were invoked and never settled,
// in ledger order. A resuming drive records each as indeterminate.
func OpenSteps(entries []contracts.Entry) []contracts.ToolInvoked {
	var inv []contracts.ToolInvoked
	settled := map[string]bool{}
	for _, e := range entries {
		switch e.Kind {
		case contracts.KindToolInvoked:
			var p contracts.ToolInvoked
			if json.Unmarshal(e.Data, &p) == nil {
				inv = append(inv, p)
				settled[p.StepID] = false
			}
		case contracts.KindToolCompleted, contracts.KindToolRefused:
			var p struct {
				StepID string `json:"stepId"`
			}
			if json.Unmarshal(e.Data, &p) == nil && p.StepID != "" {
				settled[p.StepID] = true
			}
		}
	}
	var out []contracts.ToolInvoked
	for _, p := range inv {
		if !settled[p.StepID] {
			out = append(out, p)
			settled[p.StepID] = true
		}
	}
	return out
}

// usageOf returns the model-turn usage an entry carries, with its turn.
func usageOf(v any) (int, *contracts.Usage) {
	switch p := v.(type) {
	case *contracts.ToolInvoked:
		return p.Turn, p.Usage
	case *contracts.ToolCompleted:
		return p.Turn, p.Usage
	case *contracts.ToolRefused:
		return p.Turn, p.Usage
	case *contracts.ReportComposed:
		return p.Turn, p.Usage
	case *contracts.ClosingStatement:
		return p.Turn, p.Usage
	case *contracts.PlanComparison:
		return p.Turn, p.Usage
	case *contracts.Recommendation:
		return p.Turn, p.Usage
	case *contracts.AnswerComposed:
		return p.Turn, p.Usage
	}
	return 0, nil
}
