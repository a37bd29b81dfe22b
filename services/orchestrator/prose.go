package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// A turn with no tool call is one of three things. A call no one could read
// (cut at the output limit, malformed, see textcalls.go) is refused with a
// fix; three of those in a row end the run. A question to the user ends the
// run at once, the question kept for every surface and answered by
// continuing the conversation. Anything else is prose: the model is shown a
// ready compose_report call with the run's own ids, and two prose turns in
// a row end the run.

// maxUnreadCalls is how many unreadable calls in a row end the run.
const maxUnreadCalls = 3

// questionDetail is the run-finished sentence of a run that stopped on a
// question.
const questionDetail = "The model asked a question instead of answering: answer it by continuing the conversation."

// proseTurn records a turn that called no tool and decides whether the run
// goes on: done reports that it ended. Two such turns in a row end it, and
// an empty one at once when the model's tuning says asking again does not
// help.
func (d *drive) proseTurn(ctx context.Context, turn int, reply contracts.ModelTurnReply) (done bool, err error) {
	usage := reply.Usage
	cs := contracts.ClosingStatement{Turn: turn, Text: reply.Text, Usage: &usage, ModelMs: d.turnMs}
	cs.Refused = unreadCall(reply, d.header.Tools)
	if err := d.append(ctx, contracts.KindClosingStatement, cs); err != nil {
		return false, err
	}
	if cs.Refused != nil {
		if unreadInARow(d.entries) >= maxUnreadCalls {
			return true, d.finish(ctx, contracts.StatusFailed, contracts.StopRepeatedCall, "",
				fmt.Sprintf("The model's last %d turns each sent a call that was cut off or could not be read.", maxUnreadCalls), true)
		}
		return false, nil
	}
	if q := question(reply.Text); q != "" {
		return true, d.askedQuestion(ctx, q)
	}
	empty := strings.TrimSpace(reply.Text) == ""
	giveUp := empty && d.settings.AskAgainOnEmptyTurn != nil && !*d.settings.AskAgainOnEmptyTurn
	if proseInARow(d.entries) >= 2 || giveUp {
		return true, d.finish(ctx, contracts.StatusFailed, contracts.StopModelStopped, "", "The model stopped without composing a report.", true)
	}
	return false, nil
}

// question is text as the model wrote it (trimmed) when it is a question to
// the user, else "". A question is prose whose last sentence ends with a
// question mark (closing quotes, brackets and emphasis after it aside): "Do
// you mean invoice totals or units? Which year?". A question answered in
// the same text ("Which genre sells best? Rock, with 826.65.") ends with
// its answer, so it is prose; so is a question mark anywhere but at the
// end. The limit: a prose answer that closes by offering more ("Shall I
// break it down by year?") is taken for a question too; the user then sees
// the whole text as the question.
func question(text string) string {
	t := strings.TrimRight(strings.TrimSpace(text), " \t\r\n*_\"'`)]»”’")
	if strings.HasSuffix(t, "?") || strings.HasSuffix(t, "？") {
		return strings.TrimSpace(text)
	}
	return ""
}

// askedQuestion ends the run on the model's question: stopped with
// StopQuestion and the question, its verdict unanswered with the
// question-asked shortfall.
func (d *drive) askedQuestion(ctx context.Context, q string) error {
	v := verdict.Verify(d.entries, false)
	v.Outcome = contracts.VerdictUnanswered
	if !slices.Contains(v.Unmet, verdict.UnmetQuestion) {
		v.Unmet = append(v.Unmet, verdict.UnmetQuestion)
	}
	fin := contracts.RunFinished{Status: contracts.StatusFailed, StopReason: contracts.StopQuestion,
		GoalVerdict: &v, Detail: questionDetail, Question: q}
	return d.end(ctx, fin)
}

// proseInARow counts the turns at the end of the ledger that called no
// tool: closing statements with no tool call after them. A call refused as
// unreadable is no prose: it ends the count.
func proseInARow(entries []contracts.Entry) int {
	n := 0
	for i := len(entries) - 1; i >= 0; i-- {
		switch entries[i].Kind {
		case contracts.KindClosingStatement:
			if refusedCall(entries[i]) != nil {
				return n
			}
			n++
		case contracts.KindToolInvoked, contracts.KindToolRefused, contracts.KindToolCompleted, contracts.KindReportComposed,
			contracts.KindPlanComparison, contracts.KindRecommendation, contracts.KindAnswerComposed:
			return n
		}
	}
	return n
}

// unreadInARow counts the turns at the end of the ledger that sent a call
// no one could read.
func unreadInARow(entries []contracts.Entry) int {
	n := 0
	for i := len(entries) - 1; i >= 0; i-- {
		switch entries[i].Kind {
		case contracts.KindClosingStatement:
			if refusedCall(entries[i]) == nil {
				return n
			}
			n++
		case contracts.KindToolInvoked, contracts.KindToolRefused, contracts.KindToolCompleted, contracts.KindReportComposed,
			contracts.KindPlanComparison, contracts.KindRecommendation, contracts.KindAnswerComposed:
			return n
		}
	}
	return n
}

// refusedCall is a closing statement's refusal, or nil.
func refusedCall(e contracts.Entry) *contracts.Refusal {
	var cs contracts.ClosingStatement
	if json.Unmarshal(e.Data, &cs) != nil {
		return nil
	}
	return cs.Refused
}

// shown is what a model had been shown, at some point of the ledger, that
// a report can cite: the results in order, and the schema snapshot's id.
type shown struct {
	results  []shownResult
	snapshot string
}

type shownResult struct {
	id, tool string
	rows     int
}

// see folds one entry into what the model has been shown.
func (s *shown) see(p any) {
	switch p := p.(type) {
	case *contracts.ToolCompleted:
		if p.Outcome != contracts.OutcomeOK || p.Artifact == nil {
			return
		}
		for _, r := range s.results {
			if r.id == p.Artifact.CorrelationID {
				return // a replay shows the same result again
			}
		}
		s.results = append(s.results, shownResult{id: p.Artifact.CorrelationID, tool: p.Tool, rows: p.Artifact.Rows})
	case *contracts.ContextCaptured:
		s.snapshot = p.CorrelationID
	}
}

// proseNudge is what a prose turn is answered with: the report, ready to
// send, with the run's own ids in compose_report's exact argument shape —
// the newest result with rows shown so far cited — and every id the model
// may cite. A run that has read no data yet is asked to read first. It is
// a pure function of what the ledger showed before the prose.
func proseNudge(h *contracts.RunStarted, s shown) string {
	if !slices.Contains(h.Tools, policy.ToolComposeReport) {
		return nudgeNoTool
	}
	var b strings.Builder
	b.WriteString("You wrote prose without calling a tool; prose is discarded, and only a compose_report call answers the run. ")
	// The newest result with rows; the newest at all when every one is
	// empty (an honest "nothing matches" cites it).
	cite := ""
	for i := len(s.results) - 1; i >= 0 && cite == ""; i-- {
		if s.results[i].rows > 0 {
			cite = s.results[i].id
		}
	}
	if cite == "" && len(s.results) > 0 {
		cite = s.results[len(s.results)-1].id
	}
	if cite == "" {
		b.WriteString("This run has read no data yet: call a tool to read what your answer rests on, then call compose_report citing that result's id. ")
		b.WriteString(citationRule)
		if s.snapshot != "" {
			fmt.Fprintf(&b, " Citable now: %s (the schema snapshot: structure only).", s.snapshot)
		}
		return b.String()
	}
	ref, _ := json.Marshal(contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: cite})
	b.WriteString("If your answer is complete, send it now as this tool call, one claim per finding, each claim's text with the figures as the results show them and its evidence the results it rests on:\n")
	fmt.Fprintf(&b, "compose_report %s\n", `{"claims":[{"text":"<your finding>","evidence":[`+string(ref)+`]}]}`)
	said := make([]string, 0, len(s.results)+1)
	for _, r := range s.results {
		said = append(said, fmt.Sprintf("%s (%s, %s)", r.id, r.tool, plural(r.rows, "row")))
	}
	if s.snapshot != "" {
		said = append(said, s.snapshot+" (the schema snapshot: structure only)")
	}
	b.WriteString("Citable in this run: " + strings.Join(said, ", ") + ". Otherwise continue the investigation with a tool.")
	return b.String()
}

// refusedTurn is what a turn refused as an unreadable call is answered
// with, in the shape of every refusal.
func refusedTurn(r *contracts.Refusal) string {
	s := fmt.Sprintf("Refused (%s): %s", r.Code, r.Message)
	if r.Fix != "" {
		s += "\nHow to fix: " + r.Fix
	}
	return s
}
