package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/ledger"
)

// Every run belongs to a conversation. A run of its own is a thread of one; a
// run started with previousRunId continues the thread the previous run
// belonged to. The previous run's header carries the whole chain before it,
// so the new chain is that chain plus the previous run, and nothing has to
// enumerate anything. Continuing is an enhancement, never a precondition:
// whatever stands in the way declines the thread (recorded with its reason)
// and the run starts without it.

// threadFenceSource names the conversation block inside its fence.
const threadFenceSource = "the conversation this run continues: earlier objectives and the newest earlier report"

// threadPreamble is said outside the fence: a listed step reads as a step
// whose findings are in hand unless the model is told otherwise.
const threadPreamble = "This run continues a conversation. The earlier steps listed below say only what was ASKED in each run, not what was found; " +
	"only the newest step's report says what was found, it comes from an earlier run, and its citations cannot be cited in this run's report (read again to confirm what you rely on).\n"

// notYours is the reason given both for a run that does not exist and for
// another actor's run, so the answer does not reveal which.
const notYours = "the previous run %s is not one of your runs, so this run starts a conversation of its own"

// thread derives the conversation of a new run from its previous run's
// ledger. It never fails: a previous run that cannot be continued yields a
// thread of one that records why it was declined.
func (s *Service) thread(ctx context.Context, cmd contracts.StartRun, identity string) *contracts.Thread {
	own := &contracts.Thread{RootRunID: cmd.RunID, Position: 1}
	if cmd.PreviousRunID == "" {
		return own
	}
	decline := func(kind, reason string) *contracts.Thread {
		own.Declined, own.DeclinedReason = kind, reason
		s.log.Info("thread declined", "run", cmd.RunID, "previous", cmd.PreviousRunID, "declined", kind)
		return own
	}
	prev := fence.Quote(cmd.PreviousRunID)
	if s.cfg.NoThreadContext {
		return decline(contracts.ThreadDisabled, "conversation context is turned off on this server (SONDE_THREAD_CONTEXT=false), so this run starts without the earlier runs")
	}
	if !contracts.ValidRunID(cmd.PreviousRunID) || cmd.PreviousRunID == cmd.RunID {
		return decline(contracts.ThreadUnavailable, fmt.Sprintf(notYours, prev))
	}
	entries, err := s.ledger.Read(ctx, cmd.PreviousRunID)
	switch {
	case errIsNotFound(err):
		return decline(contracts.ThreadUnavailable, fmt.Sprintf(notYours, prev))
	case err != nil:
		s.log.Warn("read previous run", "run", cmd.RunID, "previous", cmd.PreviousRunID, "err", err)
		return decline(contracts.ThreadError, "the previous run's ledger could not be read, so this run starts without the earlier runs")
	}
	var header contracts.RunStarted
	if len(entries) == 0 || entries[0].Kind != contracts.KindRunStarted || json.Unmarshal(entries[0].Data, &header) != nil {
		return decline(contracts.ThreadError, "the previous run's ledger has no readable header, so this run starts without the earlier runs")
	}
	rec := ledger.Fold(cmd.PreviousRunID, entries)
	switch {
	case rec.Actor.ID == "" || rec.Actor.ID != cmd.Actor.ID:
		return decline(contracts.ThreadUnavailable, fmt.Sprintf(notYours, prev))
	case rec.ConnectionID != cmd.ConnectionID:
		return decline(contracts.ThreadUnavailable, "the previous run "+prev+" ran on another connection; a conversation stays on one connection")
	case header.ConnectionIdentity != "" && header.ConnectionIdentity != identity:
		// Same connection id, another database: the earlier claims are about
		// a database this run does not read. A run that recorded no identity
		// (written before identities were) is carried.
		return decline(contracts.ThreadUnavailable, "the connection now reaches another database than when the previous run "+prev+" ran, so its findings do not apply")
	case !rec.Status.Terminal():
		return decline(contracts.ThreadUnavailable, "the previous run "+prev+" has not ended yet; continue it once it has finished")
	}

	t := &contracts.Thread{RootRunID: cmd.PreviousRunID, Position: 2}
	var chain []contracts.ThreadStep
	if p := header.Thread; p != nil {
		if p.RootRunID != "" {
			t.RootRunID = p.RootRunID
		}
		t.Position = max(p.Position, 1) + 1
		chain = append(chain, p.Chain...)
	}
	chain = append(chain, contracts.ThreadStep{RunID: cmd.PreviousRunID, Objective: capObjective(rec.Objective)})
	if len(chain) > contracts.MaxThreadSteps {
		chain = chain[len(chain)-contracts.MaxThreadSteps:]
	}
	t.Chain = chain
	t.Context, t.Omitted = threadContext(chain, t.Position-1, rec)
	return t
}

// capObjective cuts an objective to ThreadObjectiveMaxChars characters, the
// cut marked with "…". A capped objective is returned as it is.
func capObjective(s string) string {
	s = strings.TrimSpace(s)
	return cutRunes(s, contracts.ThreadObjectiveMaxChars)
}

// cutRunes cuts s to at most n characters, ending a cut one with "…".
func cutRunes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " \n\t") + "…"
}

func runes(s string) int { return utf8.RuneCountInString(s) }

// threadContext renders what a continuing run reads of its conversation: a
// sentence outside the fence, then, fenced (every objective and the report
// are untrusted text), the spine — each earlier objective, oldest first —
// and the evidence — the newest earlier run's report claims with their
// citations, or its closing statement (Record.Closing) when it composed
// none. earlier is how many runs came before (chain holds the newest of them).
//
// The whole text is at most ThreadContextMaxChars characters and the spine
// at most ThreadSpineShare of that, so the newest report always has room.
// What the bounds leave out (the oldest objectives first, then the report's
// tail) is said in a line inside the block and in omitted. It is a pure
// function.
func threadContext(chain []contracts.ThreadStep, earlier int, newest contracts.Record) (context, omitted string) {
	if len(chain) > contracts.MaxThreadSteps {
		chain = chain[len(chain)-contracts.MaxThreadSteps:]
	}
	earlier = max(earlier, len(chain))
	// The fence's own text: the preamble, the markers and their line breaks.
	overhead := runes(threadPreamble) + runes(fence.Wrap(threadFenceSource, "x")) - 1
	budget := contracts.ThreadContextMaxChars - overhead
	// Neutralising can lengthen text that joins across pieces; shrink the
	// budget by any excess and render again (it converges at once in
	// practice).
	for range 4 {
		inner, om := threadBlock(chain, earlier, newest, budget)
		context = threadPreamble + fence.Wrap(threadFenceSource, inner)
		if over := runes(context) - contracts.ThreadContextMaxChars; over > 0 {
			budget -= over
			continue
		}
		return context, om
	}
	// Unreachable for text the fence leaves alone; never exceed the bound.
	inner, om := threadBlock(chain, earlier, newest, budget/2)
	return threadPreamble + fence.Wrap(threadFenceSource, inner), om
}

// threadSpineMax is the most characters the spine may take.
func threadSpineMax() int {
	return int(float64(contracts.ThreadContextMaxChars) * contracts.ThreadSpineShare)
}

// threadBlock renders the fenced text within budget characters.
func threadBlock(chain []contracts.ThreadStep, earlier int, newest contracts.Record, budget int) (string, string) {
	var left []string // what was left out, for omitted
	spine, spineLeft := threadSpine(chain, earlier, min(threadSpineMax(), budget/4*3))
	left = append(left, spineLeft...)
	evidence, evLeft := threadEvidence(newest, budget-runes(spine))
	left = append(left, evLeft...)
	om := ""
	if len(left) > 0 {
		om = "Left out of the conversation context: " + strings.Join(left, "; ") + "."
	}
	return spine + evidence, om
}

// threadSpine renders the earlier objectives, oldest first, within limit
// characters; the oldest are dropped first, and the drop is said in a line.
func threadSpine(chain []contracts.ThreadStep, earlier, limit int) (string, []string) {
	first := earlier - len(chain) + 1 // position of chain[0] in the conversation
	lines := make([]string, len(chain))
	cut := make([]bool, len(chain)) // the objective was capped
	for i, st := range chain {
		full := strings.TrimSpace(fence.Neutralise(st.Objective))
		obj := capObjective(full)
		cut[i] = obj != full
		lines[i] = fmt.Sprintf("%d. (run %s) %s\n", first+i, st.RunID, strings.ReplaceAll(obj, "\n", " "))
	}
	head := fmt.Sprintf("Earlier steps of this conversation: what each ASKED, oldest first (each objective up to %d characters; a cut one ends with …):\n", contracts.ThreadObjectiveMaxChars)
	notice := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("(%d older steps of this conversation are not listed here, to keep this block within %d characters.)\n", n, contracts.ThreadContextMaxChars)
	}
	// Keep the newest lines that fit with the heading and the notice.
	kept := len(lines)
	size := runes(head)
	for _, l := range lines {
		size += runes(l)
	}
	dropped := earlier - len(chain)
	for kept > 0 && size+runes(notice(dropped)) > limit {
		size -= runes(lines[len(lines)-kept])
		kept--
		dropped++
	}
	var b strings.Builder
	b.WriteString(head)
	b.WriteString(notice(dropped))
	for _, l := range lines[len(lines)-kept:] {
		b.WriteString(l)
	}
	var left []string
	if dropped > 0 {
		left = append(left, fmt.Sprintf("the objectives of the %d oldest of %d earlier steps", dropped, earlier))
	}
	if n := countTrue(cut[len(cut)-kept:]); n > 0 {
		left = append(left, fmt.Sprintf("the tail of %d objectives longer than %d characters", n, contracts.ThreadObjectiveMaxChars))
	}
	s := b.String()
	if runes(s) > limit {
		// Even the heading does not fit a tiny budget.
		s = cutRunes(s, limit)
	}
	return s, left
}

// threadEvidence renders the newest earlier run's report within limit
// characters, claim by claim; a claim that does not fit is cut, and the
// claims after it are counted in a line. A run that composed no report is
// represented by its closing statement, cut to fit.
func threadEvidence(newest contracts.Record, limit int) (string, []string) {
	if len(newest.Report) == 0 {
		closing := strings.TrimSpace(fence.Neutralise(newest.Closing))
		if closing == "" {
			line := fmt.Sprintf("The newest step (run %s) composed no report and wrote no closing statement; it ended %s", newest.RunID, newest.Status)
			if newest.StopReason != "" {
				line += " (" + string(newest.StopReason) + ")"
			}
			return cutRunes(line+".\n", limit), nil
		}
		head := fmt.Sprintf("The newest step (run %s, %s) composed no report; its closing statement:\n", newest.RunID, newest.Status)
		if newest.StopReason == contracts.StopQuestion && strings.TrimSpace(newest.Question) != "" {
			// The user's objective in this run answers it: say so.
			closing = strings.TrimSpace(fence.Neutralise(newest.Question))
			head = fmt.Sprintf("The newest step (run %s) stopped to ask the user this question, and this run's objective is the user's answer to it:\n", newest.RunID)
		}
		if runes(head)+runes(closing)+1 <= limit {
			return head + closing + "\n", nil
		}
		notice := fmt.Sprintf("(the rest of this statement is not shown, to keep this block within %d characters.)\n", contracts.ThreadContextMaxChars)
		room := limit - runes(head) - runes(notice) - 1
		return cutRunes(head+cutRunes(closing, room)+"\n"+notice, limit), []string{"the tail of the newest step's closing statement"}
	}
	head := fmt.Sprintf("Report of the newest step (run %s, %s), %d findings with their citations (from that run's evidence):\n", newest.RunID, newest.Status, len(newest.Report))
	texts := make([]string, len(newest.Report))
	cites := make([]string, len(newest.Report))
	items := make([]string, len(newest.Report))
	for i, c := range newest.Report {
		texts[i] = "- " + strings.ReplaceAll(strings.TrimSpace(fence.Neutralise(c.Text)), "\n", " ")
		cites[i] = citations(c.Evidence) + "\n"
		items[i] = texts[i] + cites[i]
	}
	notice := func(n int) string {
		if n == 0 {
			return ""
		}
		return fmt.Sprintf("(%d of this report's %d findings are not shown in full, to keep this block within %d characters.)\n", n, len(items), contracts.ThreadContextMaxChars)
	}
	var b strings.Builder
	b.WriteString(head)
	used := runes(head)
	shown, partial := 0, false
	for i, it := range items {
		rest := len(items) - i - 1
		if runes(it) <= limit-used-runes(notice(rest)) {
			b.WriteString(it)
			used += runes(it)
			shown++
			continue
		}
		// Cut this one to the room left when a useful part fits; it then
		// counts among those not shown whole.
		// Cut the finding's text, never its citations.
		if room := limit - used - runes(notice(rest+1)) - runes(cites[i]); room >= 80 {
			b.WriteString(cutRunes(texts[i], room) + cites[i])
			partial = true
		}
		break
	}
	notShown := len(items) - shown
	b.WriteString(notice(notShown))
	s := b.String()
	if runes(s) > limit {
		s = cutRunes(s, limit)
	}
	if notShown == 0 {
		return s, nil
	}
	what := fmt.Sprintf("%d of %d findings of the newest report", notShown, len(items))
	if partial {
		what += " (the first of them shown cut short)"
	}
	return s, []string{what}
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// citations renders a claim's evidence as plain text.
func citations(ev []contracts.EvidenceRef) string {
	if len(ev) == 0 {
		return " [no citation]"
	}
	parts := make([]string, 0, len(ev))
	for _, e := range ev {
		switch {
		case e.CorrelationID != "":
			parts = append(parts, string(e.Source)+" "+fence.Neutralise(e.CorrelationID))
		case e.Fingerprint != "":
			parts = append(parts, string(e.Source)+" "+fence.Neutralise(e.Fingerprint))
		default:
			parts = append(parts, string(e.Source))
		}
	}
	return " [cites: " + strings.Join(parts, "; ") + "]"
}
