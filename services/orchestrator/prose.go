package orchestrator

import (
	"context"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// proseTurn records a turn that called no tool and decides whether the run
// goes on: done reports that it ended. Two such turns in a row end it, and
// an empty one at once when the model's tuning says asking again does not
// help.
func (d *drive) proseTurn(ctx context.Context, turn int, reply contracts.ModelTurnReply) (done bool, err error) {
	usage := reply.Usage
	if err := d.append(ctx, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: turn, Text: reply.Text, Usage: &usage, ModelMs: d.turnMs}); err != nil {
		return false, err
	}
	empty := strings.TrimSpace(reply.Text) == ""
	giveUp := empty && d.settings.AskAgainOnEmptyTurn != nil && !*d.settings.AskAgainOnEmptyTurn
	if proseInARow(d.entries) >= 2 || giveUp {
		return true, d.finish(ctx, contracts.StatusFailed, contracts.StopModelStopped, "", "The model stopped without composing a report.", true)
	}
	return false, nil
}

// proseInARow counts the turns at the end of the ledger that called no
// tool: closing statements with no tool call after them.
func proseInARow(entries []contracts.Entry) int {
	n := 0
	for i := len(entries) - 1; i >= 0; i-- {
		switch entries[i].Kind {
		case contracts.KindClosingStatement:
			n++
		case contracts.KindToolInvoked, contracts.KindToolRefused, contracts.KindToolCompleted, contracts.KindReportComposed,
			contracts.KindPlanComparison, contracts.KindRecommendation, contracts.KindAnswerComposed:
			return n
		}
	}
	return n
}
