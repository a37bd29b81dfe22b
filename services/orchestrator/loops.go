package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// Loops: a call the run has already answered is answered again from the
// ledger, and a model that keeps sending it is told, then stopped.

// refuseRepeatedCall records the call that ended a run for repeating itself.
const refuseRepeatedCall = contracts.RefuseRepeatedCall

// loopLimit is how many identical calls, or identical refusals, end a run;
// one fewer earns the notice that names the loop.
const loopLimit = 3

// replayedNote opens every replayed result, once however often it is replayed.
const replayedNote = "(Replayed from this run's ledger: the same call settled earlier and is never run twice.)\n"

// replayedTooLarge opens a replayed refusal of a result too large to show.
const replayedTooLarge = "(Replayed from this run's ledger: this statement ran earlier and its result was refused for its size; it is not run or charged again.)\n"

// settledContent is what a settled step said, without the note of an
// earlier replay and without the status line of the turn it was recorded
// in (where the run stood then; the replay says where it stands now).
func settledContent(content string) string {
	content = strings.TrimPrefix(strings.TrimPrefix(content, replayedNote), replayedTooLarge)
	if i := strings.LastIndex(content, "\n[turn "); i >= 0 {
		content = content[:i]
	}
	return content
}

// replay answers a repeated call of a settled step from the ledger: the
// step's first completion, under one note that it is a replay.
func (d *drive) replay(tc contracts.ToolCall, stepID string) contracts.ToolCompleted {
	for _, e := range d.entries {
		if e.Kind != contracts.KindToolCompleted {
			continue
		}
		var p contracts.ToolCompleted
		if json.Unmarshal(e.Data, &p) != nil || p.StepID != stepID {
			continue
		}
		p.ToolCall, p.DurationMs = tc, 0
		p.Content = replayedNote + settledContent(p.Content) + d.status(tc.Turn, false, false)
		return p
	}
	return contracts.ToolCompleted{ToolCall: tc, StepID: stepID, Outcome: contracts.OutcomeIndeterminate, Content: indeterminateContent}
}

// replayRefusal answers a statement sent again after its result was
// refused for its size (it ran, and was charged): the refusal again, from
// the ledger, never the statement. The fold counts no statement for it.
func (d *drive) replayRefusal(tc contracts.ToolCall, stepID string) (contracts.ToolRefused, bool) {
	for _, e := range d.entries {
		if e.Kind != contracts.KindToolRefused {
			continue
		}
		var p contracts.ToolRefused
		if json.Unmarshal(e.Data, &p) != nil || p.StepID != stepID {
			continue
		}
		p.ToolCall, p.Normalised = tc, nil
		p.Content = replayedTooLarge + settledContent(p.Content) + d.status(tc.Turn, false, false)
		return p, true
	}
	return contracts.ToolRefused{}, false
}

// sentCall is one tool call of the run as the ledger holds it: what it
// asked (key) and, when it was refused, how.
type sentCall struct {
	turn    int
	tool    string
	args    string
	key     string
	refusal string // code and reason; "" when not refused (or refused as a loop)
	code    contracts.Code
	reason  string
}

// toolEntries are the kinds that answer a tool call.
var toolEntries = map[contracts.EventKind]bool{
	contracts.KindToolInvoked: true, contracts.KindToolCompleted: true, contracts.KindToolRefused: true,
	contracts.KindReportComposed: true, contracts.KindPlanComparison: true, contracts.KindRecommendation: true,
	contracts.KindAnswerComposed: true,
}

// notLoops are refusals that say where the service stands, not what the
// model did: sending the call again later is what their fix asks.
var notLoops = map[contracts.Code]bool{
	contracts.RefuseConnectionUnavailable: true,
	contracts.RefuseExecutorBusy:          true,
	refuseRepeatedCall:                    true,
}

// sentCalls lists the run's tool calls in ledger order, one per call (a
// call's invocation and its outcome are one call).
func sentCalls(entries []contracts.Entry) []sentCall {
	var out []sentCall
	at := map[string]int{}
	for _, e := range entries {
		if !toolEntries[e.Kind] {
			continue
		}
		var p struct {
			contracts.ToolCall
			Code   contracts.Code `json:"code"`
			Reason string         `json:"reason"`
		}
		if json.Unmarshal(e.Data, &p) != nil {
			continue
		}
		id := fmt.Sprintf("%d/%s", p.Turn, p.CallID)
		i, seen := at[id]
		if !seen {
			i = len(out)
			at[id] = i
			out = append(out, sentCall{turn: p.Turn, tool: p.Tool, args: string(p.Arguments), key: callKey(p.Tool, string(p.Arguments))})
		}
		if e.Kind == contracts.KindToolRefused && !notLoops[p.Code] {
			out[i].refusal, out[i].code, out[i].reason = string(p.Code)+"\x00"+p.Reason, p.Code, p.Reason
		}
	}
	return out
}

// callKey is a call's identity for loops: the tool, and for a tool that
// reaches the database the step its arguments make (stepKey: the prose
// reason and the spelling of the JSON do not count); for any other tool,
// or arguments that do not decode, the arguments in a canonical JSON form.
func callKey(tool, args string) string {
	tool = strings.ToLower(strings.TrimSpace(tool))
	if i := strings.LastIndex(tool, "."); i >= 0 {
		tool = tool[i+1:] // a "functions." prefix names the same tool
	}
	if t, ok := toolTable[tool]; ok && t.step != nil {
		if a, err := t.step(args); err == nil {
			return "s_" + stepKey(tool, a)
		}
	}
	return tool + "\x00" + canonicalJSON(args)
}

// isStep reports a call key that names a database step: a call the run
// answers the same way each time it is sent (from the ledger after the
// first). Any other call (a report, a comparison, a recommendation) is
// answered anew as the run moves on, so only its refusals make a loop.
func isStep(key string) bool { return strings.HasPrefix(key, "s_") }

// canonicalJSON is args with its keys sorted and its spacing dropped, or
// the text trimmed when it is not JSON.
func canonicalJSON(args string) string {
	var v any
	dec := json.NewDecoder(strings.NewReader(args))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return strings.TrimSpace(args)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if enc.Encode(v) != nil {
		return strings.TrimSpace(args)
	}
	return strings.TrimSpace(b.String())
}

// loop is a repetition the run holds: a database step sent n times, or n
// calls refused the same way.
type loop struct {
	n       int
	call    sentCall
	refused bool
}

// loops counts the run's identical calls and identical refusals: the
// largest repetition the calls of since (a turn; 0 for any) take part in.
func loops(calls []sentCall, since int) (loop, bool) {
	keys, refusals := map[string]int{}, map[string]int{}
	for _, c := range calls {
		keys[c.key]++
		if c.refusal != "" {
			refusals[c.refusal]++
		}
	}
	var worst loop
	for _, c := range calls {
		if since > 0 && c.turn < since {
			continue
		}
		if n := keys[c.key]; isStep(c.key) && n > worst.n {
			worst = loop{n: n, call: c}
		}
		if n := refusals[c.refusal]; c.refusal != "" && n > worst.n {
			worst = loop{n: n, call: c, refused: true}
		}
	}
	return worst, worst.n >= 2
}

// repeated is asked before each call is handled: done reports that the run
// was ended for repeating itself. A call identical to two before it is
// recorded, refused, and ends the run; so does a run whose calls were
// already refused the same way loopLimit times.
func (d *drive) repeated(ctx context.Context, mc contracts.ModelToolCall, turn int) (done bool, err error) {
	if done, err := d.loopEnded(ctx); done || err != nil {
		return done, err
	}
	args := string(rawArgs(mc.Arguments))
	key := callKey(mc.Name, args)
	if !isStep(key) {
		return false, nil // answered anew each time: a loop of it shows as refusals
	}
	n := 0
	for _, c := range sentCalls(d.entries) {
		if c.key == key {
			n++
		}
	}
	if n < loopLimit-1 {
		return false, nil
	}
	tc := contracts.ToolCall{Turn: turn, CallID: mc.ID, Tool: mc.Name, Arguments: rawArgs(mc.Arguments), Signature: mc.Signature}
	if tc.CallID == "" {
		tc.CallID = fmt.Sprintf("call_%d_%d", turn, len(d.entries))
	}
	reason := fmt.Sprintf("this is the %s identical %s call of the run (%s); it is answered no more", ordinal(n+1), fence.Quote(mc.Name), brief(args))
	if err := d.append(ctx, contracts.KindToolRefused, contracts.ToolRefused{
		ToolCall: tc, Code: refuseRepeatedCall, Reason: reason, Content: "Refused (" + string(refuseRepeatedCall) + "): " + reason + d.status(turn, false, false),
	}); err != nil {
		return false, err
	}
	detail := fmt.Sprintf("The model sent the same %s call %d times (%s), so the run was stopped rather than answer it again.", mc.Name, n+1, brief(args))
	return true, d.finish(ctx, contracts.StatusFailed, contracts.StopRepeatedCall, "", detail, true)
}

// loopEnded ends the run when its calls were refused the same way
// loopLimit times: done reports that it did.
func (d *drive) loopEnded(ctx context.Context) (done bool, err error) {
	l, _ := loops(sentCalls(d.entries), 0)
	if !l.refused || l.n < loopLimit {
		return false, nil
	}
	detail := fmt.Sprintf("The model's calls were refused the same way %d times (%s: %s; the last a %s call), so the run was stopped rather than refuse it again.",
		l.n, l.call.code, brief(l.call.reason), l.call.tool)
	return true, d.finish(ctx, contracts.StatusFailed, contracts.StopRepeatedCall, "", detail, true)
}

// loopNotice is the notice naming a loop the model is in, or "": the last
// turn's calls repeat one sent before, or were refused as one was before.
func (d *drive) loopNotice(rec contracts.Record) string {
	calls := sentCalls(d.entries)
	if len(calls) == 0 {
		return ""
	}
	l, ok := loops(calls, calls[len(calls)-1].turn)
	if !ok {
		return ""
	}
	_, citable := d.citable()
	instead := "Send a different call that can answer what the last one could not, or call compose_report with what you have. " + citable
	if ex := reportExample(d); ex != "" {
		instead += " For example: compose_report " + ex
	}
	if l.refused {
		return fmt.Sprintf("You are in a loop: %d of your calls were refused the same way (%s: %s). A %s such refusal ends the run unanswered. Do not send it again: follow the refusal's fix. %s",
			l.n, l.call.code, brief(l.call.reason), ordinal(loopLimit), instead)
	}
	return fmt.Sprintf("You are in a loop: you have sent the same %s call %d times (%s), and it was answered the same way each time (from the ledger after the first). A %s identical call ends the run unanswered. %s",
		l.call.tool, l.n, brief(l.call.args), ordinal(loopLimit), instead)
}

// reportExample is a compose_report call citing the run's latest citable
// result, or "" when it has none.
func reportExample(d *drive) string {
	ids, _ := d.citable()
	if len(ids) == 0 {
		return ""
	}
	id := ids[0]
	for _, x := range ids {
		if x != snapshotID {
			id = x // the latest result read, not the schema
		}
	}
	text := "…what " + id + " shows, with its figures…"
	if id == snapshotID {
		text = "…what the run could not read, and why…"
	}
	b, _ := json.Marshal(reportArgs{Claims: []contracts.Claim{{Text: text,
		Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: id}}}}})
	return string(b)
}

// brief is a call's arguments (or a refusal's reason) on one line, cut
// to a length a sentence can carry and neutralised: it may quote what the
// database holds.
func brief(args string) string {
	const most = 160
	args = strings.Join(strings.Fields(args), " ")
	if r := []rune(args); len(r) > most {
		args = string(r[:most]) + "…"
	}
	return fence.Neutralise(args)
}

func ordinal(n int) string {
	switch n {
	case 1:
		return "first"
	case 2:
		return "second"
	case 3:
		return "third"
	}
	return fmt.Sprintf("%dth", n)
}
