package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/exectext"
	"github.com/sondehq/sonde/pkg/fence"
)

// Refusal codes of the run loop (the guard's own codes come from executors);
// each is declared in contracts with every other code.
const (
	refuseUnknownTool       = contracts.RefuseUnknownTool
	refuseInvalidArguments  = contracts.CodeInvalidArguments
	refuseUnresolved        = contracts.RefuseUnresolvedEvidence
	refuseStatementBudget   = contracts.RefuseStatementBudget
	refuseDBTimeBudget      = contracts.RefuseDBTimeBudget
	refuseRepairBudget      = contracts.RefuseRepairBudget
	refuseIndeterminateStep = contracts.RefuseStepIndeterminate
	refuseExecutor          = contracts.CodeExecutorUnavailable
	refuseDeadline          = contracts.RefuseRunDeadline
)

// rawArgs keeps the model's arguments as JSON; text that is not JSON is kept
// as a JSON string so the ledger entry still encodes.
func rawArgs(s string) json.RawMessage {
	if json.Valid([]byte(s)) {
		return json.RawMessage(s)
	}
	b, _ := json.Marshal(s)
	return b
}

// turnHead is what a turn records once, on its first entry: its token
// usage and the prose the model wrote beside its calls.
type turnHead struct {
	usage   *contracts.Usage
	text    string
	modelMs int64
}

// call handles one tool call of a turn. done reports that the run ended.
// head, for the turn's first call, is recorded on the call's first entry.
func (d *drive) call(ctx context.Context, turn int, mc contracts.ModelToolCall, head turnHead) (done bool, err error) {
	tc := contracts.ToolCall{Turn: turn, CallID: mc.ID, Tool: mc.Name, Arguments: rawArgs(mc.Arguments),
		Usage: head.usage, Text: head.text, ModelMs: head.modelMs, Signature: mc.Signature}
	if tc.CallID == "" {
		tc.CallID = fmt.Sprintf("call_%d_%d", turn, len(d.entries))
	}
	// The tool set is the run's persisted one, re-checked at this seam. A
	// name in another case or after a "functions." prefix is the run's tool
	// (recorded under its own name, the name as sent noted).
	name, ok := toolNamed(mc.Name, d.header.Tools)
	if !ok {
		return false, d.refuse(ctx, tc, "", refuseUnknownTool,
			"this run has no tool "+fence.Quote(mc.Name),
			"use one of: "+strings.Join(d.header.Tools, ", "))
	}
	if name != mc.Name {
		tc.Tool = name
		d.note(tc.CallID, fmt.Sprintf("tool %s read as %s", fence.Quote(mc.Name), fence.Quote(name)))
	}
	if t, ok := toolTable[name]; ok {
		return t.call(d, ctx, t.op, tc, mc.Arguments)
	}
	return false, d.refuse(ctx, tc, "", refuseUnknownTool, "tool "+fence.Quote(mc.Name)+" is not available in this release", "use run_read_query")
}

// status is the line every tool result ends with, so the model can act on
// where the run stands: its turn of the turns it has, the statements spent,
// the repairs left and the time left. failing counts the result being
// recorded when it is a statement the database failed.
func (d *drive) status(turn int, failing, refunded bool) string {
	rec := d.record()
	b := d.header.Budget
	failed, statements := rec.Spent.Repairs, rec.Spent.Statements
	if failing {
		failed++
	}
	// The first failure uses no repair yet; each statement after one does.
	left := b.MaxRepairs - max(failed-1, 0)
	if failed > b.MaxRepairs {
		left = 0
	}
	if refunded {
		statements-- // the refusal being recorded gives its statement back
	}
	return fmt.Sprintf("\n[turn %d/%d · %d/%d statements · %s left · %d s left]",
		max(turn, rec.Spent.Turns), d.maxTurns(), statements, b.MaxStatements,
		plural(max(left, 0), "repair"), max(int(d.remaining().Seconds()), 0))
}

func (d *drive) refuse(ctx context.Context, tc contracts.ToolCall, stepID string, code contracts.Code, reason, fix string) error {
	content := fmt.Sprintf("Refused (%s): %s", code, reason)
	if fix != "" {
		content += "\nHow to fix: " + fix
	}
	if unreadable(code) {
		// The guard could not read the statement at all: most often another
		// dialect's habit, so this one's is said again, as with a syntax error.
		content += dialectHint(d.header.Engine)
	}
	// A step refused after it was invoked reached no database (unless its
	// result was refused for size): the fold gives its statement back.
	content += d.status(tc.Turn, false, stepID != "" && !contracts.RefusalRan(code))
	return d.append(ctx, contracts.KindToolRefused, contracts.ToolRefused{
		ToolCall: tc, StepID: stepID, Code: code, Reason: reason, Fix: fix, Content: content,
	})
}

// statement runs one database-reaching step: replay if settled, refuse if
// indeterminate or over budget, else record the invocation, then ask. It
// returns the executor's reply when the step has just completed with a
// result (nil otherwise: replayed, refused, failed), for a tool that records
// more about it.
func (d *drive) statement(ctx context.Context, tc contracts.ToolCall, op contracts.ExecOp, args stepArgs, notes []string, req contracts.ExecRequest) (*contracts.ExecReply, error) {
	err := d.step(ctx, tc, op, args, notes, &req)
	if err != nil || req.CorrelationID == "" || !d.completedOK(req.StepID) {
		return nil, err
	}
	return d.lastReply, nil
}

// completedOK reports whether the ledger's last entry completed stepID with
// a result.
func (d *drive) completedOK(stepID string) bool {
	if len(d.entries) == 0 {
		return false
	}
	e := d.entries[len(d.entries)-1]
	if e.Kind != contracts.KindToolCompleted {
		return false
	}
	p, err := e.Decode()
	if err != nil {
		return false
	}
	c := p.(*contracts.ToolCompleted)
	return c.StepID == stepID && c.Outcome == contracts.OutcomeOK
}

// step is statement's work; req is filled in with the step's identity.
func (d *drive) step(ctx context.Context, tc contracts.ToolCall, op contracts.ExecOp, args stepArgs, notes []string, reqp *contracts.ExecRequest) error {
	req := reqp
	stepID := "s_" + stepKey(tc.Tool, args)
	rec := d.record()
	for _, st := range rec.Steps {
		if st.StepID != stepID {
			continue
		}
		switch st.Status {
		case contracts.StepIndeterminate, contracts.StepInvoked:
			return d.refuse(ctx, tc, "", refuseIndeterminateStep,
				"this exact call was started before and its outcome is unknown; it is never run twice",
				"draft a different statement if you still need the reading")
		case contracts.StepCompleted, contracts.StepFailed:
			// A settled step is replayed from the ledger, never re-executed.
			return d.append(ctx, contracts.KindToolCompleted, d.replay(tc, stepID))
		case contracts.StepRefused:
			// A result refused for its size ran and was charged: sent again,
			// its refusal is replayed, never the statement.
			if st.Refusal != nil && contracts.RefusalRan(st.Refusal.Code) {
				if r, ok := d.replayRefusal(tc, stepID); ok {
					return d.append(ctx, contracts.KindToolRefused, r)
				}
			}
		}
	}
	b := d.header.Budget
	switch {
	case d.remaining() <= 0:
		return d.refuse(ctx, tc, "", refuseDeadline, "the run has no time left for a statement", "")
	case rec.Spent.Statements >= b.MaxStatements:
		return d.refuse(ctx, tc, "", refuseStatementBudget,
			fmt.Sprintf("the run has used its %d statements", b.MaxStatements), "call compose_report with what you have")
	case rec.Spent.DBTimeMs >= b.DBTimeMs:
		return d.refuse(ctx, tc, "", refuseDBTimeBudget,
			fmt.Sprintf("the run has used its %d s of database time", b.DBTimeMs/1000), "call compose_report with what you have")
	case toolTable[tc.Tool].repairBound && rec.Spent.Repairs > b.MaxRepairs:
		// MaxRepairs statements that failed at the database may each be
		// repaired; the one after them that fails too may not, so from
		// then on the model's statements are refused. A tool the entry
		// does not bind (the schema read is the server's own query, never
		// a repair) stays available.
		return d.refuse(ctx, tc, "", refuseRepairBudget,
			fmt.Sprintf("%d statements failed at the database and the run's %d repairs are spent, so no further statement is run", rec.Spent.Repairs, b.MaxRepairs),
			"call compose_report with what you have"+stillAnswers(d.header.Tools, " (%s)"))
	}

	corr := shortID(rec)
	inv := contracts.ToolInvoked{ToolCall: tc, StepID: stepID, CorrelationID: corr, Normalised: notes}
	if err := d.append(ctx, contracts.KindToolInvoked, inv); err != nil {
		return err
	}
	tc.Usage, tc.Text, tc.ModelMs = nil, "", 0 // recorded once, on the invocation
	if hook := d.s.afterInvoke; hook != nil {
		hook(d.runID, inv)
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	req.RunID, req.StepID, req.CorrelationID = d.runID, stepID, corr
	req.ConnectionID = d.header.ConnectionID
	if req.Profile == "" {
		req.Profile = contracts.ProfileAgentReadOnly
	}
	req.TimeoutMs = d.statementTimeout(rec)
	req.MaxRows, req.MaxBytes = b.MaxRows, b.MaxBytes
	req.ShowBytes = d.showBytes()
	req.FailedFingerprints = failedFingerprints(rec)
	reply, err := d.execute(ctx, op, *req)
	d.lastReply = &reply
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err() // this drive is over; the next one records the step indeterminate
		}
		var ee *executorError
		if errors.As(err, &ee) {
			// Nobody received the request: the statement certainly did not run.
			if err := d.refuse(ctx, tc, stepID, refuseExecutor,
				"no executor serves "+string(d.header.Engine)+" connections right now", "try again later"); err != nil {
				return err
			}
			return d.finish(ctx, contracts.StatusFailed, contracts.StopFailed, contracts.ReasonExecutorUnavailable,
				fmt.Sprintf("No %s executor answered for %s: start one (sonde serve, or --services executor-%s) and check its NATS connection.",
					d.header.Engine, d.s.cfg.AbsenceGrace, d.header.Engine), true)
		}
		return d.append(ctx, contracts.KindToolCompleted, contracts.ToolCompleted{
			ToolCall: tc, StepID: stepID, Outcome: contracts.OutcomeIndeterminate, Content: indeterminateContent + d.status(tc.Turn, false, false),
		})
	}
	switch reply.Status {
	case contracts.ExecOK:
		return d.append(ctx, contracts.KindToolCompleted, contracts.ToolCompleted{
			ToolCall: tc, StepID: stepID, Outcome: contracts.OutcomeOK, Artifact: reply.Artifact, Plan: reply.Plan,
			DurationMs: reply.DurationMs, Fingerprint: reply.Fingerprint, Content: okContent(op, *req, reply) + d.status(tc.Turn, false, false),
		})
	case contracts.ExecRefused:
		r := reply.Refusal
		if r == nil {
			r = &contracts.Refusal{Code: contracts.RefuseRefused, Message: "the executor refused the statement"}
		}
		if connectionLost(reply) {
			return d.unreachable(ctx, tc, stepID)
		}
		return d.refuse(ctx, tc, stepID, r.Code, r.Message, r.Fix)
	default:
		if connectionLost(reply) {
			return d.unreachable(ctx, tc, stepID)
		}
		dbErr := reply.Error
		if dbErr == nil {
			dbErr = &contracts.DBError{Class: contracts.DBOther}
		}
		left := b.MaxRepairs - rec.Spent.Repairs // repairs still allowed once this failure is counted
		return d.append(ctx, contracts.KindToolCompleted, contracts.ToolCompleted{
			ToolCall: tc, StepID: stepID, Outcome: contracts.OutcomeError, DBError: dbErr,
			DurationMs: reply.DurationMs, Fingerprint: reply.Fingerprint, Content: errorContent(dbErr, exectext.Render(op, *req, reply), left, d.header.Engine, d.header.Tools) + d.status(tc.Turn, true, false),
		})
	}
}

// connectionLost reports an executor reply that says the connection's
// database does not answer: a connection_unavailable refusal, or a failure
// the executor classified as the database being unavailable. Either is a
// state of the connection, not a failure of the statement.
func connectionLost(r contracts.ExecReply) bool {
	switch r.Status {
	case contracts.ExecRefused:
		return r.Refusal != nil && r.Refusal.Code == contracts.RefuseConnectionUnavailable
	case contracts.ExecError:
		return r.Error != nil && r.Error.Class == contracts.DBUnavailable
	}
	return false
}

// unreachable records a step whose database did not answer: refused as
// connection_unavailable, so it costs no statement and no repair, in the
// orchestrator's own words (the engine's text, which may name a host, a
// port, a role or a file, stays out of what the model reads).
func (d *drive) unreachable(ctx context.Context, tc contracts.ToolCall, stepID string) error {
	return d.refuse(ctx, tc, stepID, contracts.RefuseConnectionUnavailable,
		"the database of connection "+fence.Quote(d.header.ConnectionID)+" cannot be reached right now; nothing ran, and this costs no statement and no repair",
		"the server is reconnecting in the background: try the reading again in a while, or call compose_report with what you have")
}

// shortID names the artifact of the run's next database-reaching step:
// "r" and its ordinal ("r1", "r2", …), short enough to copy without a
// slip and made of digits after one letter, so no two ids differ only by a
// look-alike character. It is recorded on the step's tool-invoked entry, so
// a resumed run keeps it.
func shortID(rec contracts.Record) string {
	n := 1
	for _, st := range rec.Steps {
		if st.CorrelationID != "" {
			n++
		}
	}
	return fmt.Sprintf("r%d", n)
}

// execute asks the executor, waiting out for AbsenceGrace one that nobody
// serves (no responders: restarting, draining), that refuses as saturated
// (executor_busy) or whose database does not answer (connectionLost). Neither reached the database, so the identical request
// is sent again; what is still refused after the grace is returned as is.
func (d *drive) execute(ctx context.Context, op contracts.ExecOp, req contracts.ExecRequest) (contracts.ExecReply, error) {
	var gone absence
	for {
		reply, err := d.s.execs.Exec(ctx, d.header.Engine, op, req)
		var ee *executorError
		absent := errors.As(err, &ee)
		busy := err == nil && reply.Status == contracts.ExecRefused && reply.Refusal != nil && reply.Refusal.Code == contracts.RefuseExecutorBusy
		// A database that stopped answering is reopened by the executor in
		// the background: asked again the same way, within the grace.
		busy = busy || err == nil && connectionLost(reply)
		if !absent && !busy || ctx.Err() != nil || d.remaining() <= 0 {
			return reply, err
		}
		if !gone.wait(ctx, d.s.cfg.Now, d.s.cfg.AbsenceGrace) {
			return reply, err
		}
		d.s.log.Info("executor absent or busy; asking again", "run", d.runID, "step", req.StepID, "busy", busy)
		req.TimeoutMs = max(min(req.TimeoutMs, d.remaining().Milliseconds()), 1)
	}
}

// okContent is what the model reads of the executor's reply r to op asked
// with req: its rendering (pkg/exectext), which says how to cite it, within
// req.ShowBytes; or, when there is nothing of r to render that does (a reply
// that holds none of op's data), one line that does.
func okContent(op contracts.ExecOp, req contracts.ExecRequest, r contracts.ExecReply) string {
	text := exectext.Render(op, req, r)
	a := r.Artifact
	if a == nil || strings.Contains(text, `"correlationId":"`+a.CorrelationID+`"`) {
		return text
	}
	ref, _ := json.Marshal(contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: a.CorrelationID})
	return fmt.Sprintf("Result stored as %s: %s, %s. Cite it exactly in that shape.\n", ref, plural(a.Rows, "row"), plural(len(a.Columns), "column")) + text
}

// errorContent is what the model reads of a statement the database failed.
// repairsLeft is how many more statements the run still allows after a
// failure, this one counted: MaxRepairs after the first failure, one fewer
// after each further one, and none after the failure that exceeds them.
func errorContent(e *contracts.DBError, text string, repairsLeft int, engine contracts.Engine, tools []string) string {
	var b strings.Builder
	switch {
	case text != "":
		b.WriteString(text) // the reply rendered (pkg/exectext), the engine's words fenced
	case e.Message != "":
		fmt.Fprintf(&b, "The database failed the statement (%s):\n", e.Class)
		b.WriteString(fence.Wrap("database error", e.Message))
	default:
		fmt.Fprintf(&b, "The database failed the statement (%s).", e.Class)
	}
	if e.Class == contracts.DBSyntax {
		// A syntax error is most often another dialect's habit (TOP on
		// SQLite, LIMIT on SQL Server): say this one's again.
		b.WriteString(dialectHint(engine))
	}
	if repairsLeft > 0 {
		fmt.Fprintf(&b, "\nRepairs left: %d. Fix the statement and try again, or report what you have.", repairsLeft)
	} else {
		fmt.Fprintf(&b, "\nNo repairs are left: %s refused from now on%s. Call compose_report with what you have.",
			refusedAfterRepairs(tools), stillAnswers(tools, "; %s"))
	}
	return b.String()
}

// refusedAfterRepairs names the run's tools that reach the database and
// are refused once its repairs are spent.
func refusedAfterRepairs(tools []string) string {
	var out []string
	for _, t := range tools {
		if toolTable[t].repairBound {
			out = append(out, t)
		}
	}
	switch len(out) {
	case 0:
		return "statements are"
	case 1:
		return out[0] + " is"
	}
	return strings.Join(out[:len(out)-1], ", ") + " and " + out[len(out)-1] + " are"
}

// stillAnswers says, in format, which of the run's tools still reach the
// database once its repairs are spent: those whose entry does not bind them
// (inspect_schema: the server writes its query, it is never a repair); ""
// when the run has none.
func stillAnswers(tools []string, format string) string {
	var free []string
	for _, t := range tools {
		if e, ok := toolTable[t]; ok && e.step != nil && !e.repairBound {
			free = append(free, t)
		}
	}
	switch len(free) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf(format, free[0]+" still answers")
	}
	return fmt.Sprintf(format, strings.Join(free, " and ")+" still answer")
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// failedFingerprints lists the canonical fingerprints of the statements that
// failed at the database in this run: the executor refuses them rather than
// run one again under another spelling.
func failedFingerprints(rec contracts.Record) []string {
	var out []string
	for _, st := range rec.Steps {
		if st.Status == contracts.StepFailed && st.Fingerprint != "" {
			out = append(out, st.Fingerprint)
		}
	}
	return out
}
