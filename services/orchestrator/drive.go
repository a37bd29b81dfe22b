package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/pkg/verdict"
)

// take reserves runID for one start or drive in this process: false when a
// start or a drive of it is already under way here, or the service stops.
// Every lease claim of this process happens under a reservation, so two
// goroutines of one process never both believe they hold a run's lease.
// The reservation's context ends with the service or stopLocal; untake (or
// the drive it is handed to) gives it back.
func (s *Service) take(runID string) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.drives[runID]; busy || s.stopped {
		return nil, false
	}
	ctx, cancel := context.WithCancel(s.ctx)
	s.drives[runID] = cancel
	s.wg.Add(1)
	return ctx, true
}

// untake gives back a reservation no drive was started for.
func (s *Service) untake(runID string) {
	s.mu.Lock()
	cancel := s.drives[runID]
	delete(s.drives, runID)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	s.wg.Done()
}

// local reports whether a start or a drive of runID is under way here.
func (s *Service) local(runID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.drives[runID]
	return ok
}

// launch drives runID in the background unless this process already does.
func (s *Service) launch(runID string) {
	if ctx, ok := s.take(runID); ok {
		s.goDrive(ctx, runID, nil)
	}
}

// goDrive drives runID under the reservation ctx; lease is the claim a
// start already took for it, or nil for the drive to claim.
func (s *Service) goDrive(ctx context.Context, runID string, lease *held) {
	go func() {
		defer s.untake(runID)
		if err := s.drive(ctx, runID, lease); err != nil && !errors.Is(err, context.Canceled) {
			s.log.Warn("drive ended", "run", runID, "err", err)
		}
	}()
}

// sweepLoop resumes runs whose drive died: their lease lapsed, or they hold
// none at all.
func (s *Service) sweepLoop() {
	defer s.wg.Done()
	t := time.NewTicker(s.cfg.SweepInterval)
	defer t.Stop()
	for {
		s.sweep()
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep launches every run that no drive holds: a lease lapsed or handed
// off, a lease of this process with no drive here, and a run that has not
// ended and holds no lease key at all (whatever removed it).
func (s *Service) sweep() {
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	keys := map[string]bool{}
	ids, err := s.leases.expired(ctx, s.local, keys)
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("lease sweep", "err", err)
		}
		return
	}
	for _, id := range ids {
		s.log.Info("resuming run whose drive lapsed", "run", id)
		s.launch(id)
	}
	orphans, err := s.unleased(ctx, keys)
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("ledger sweep", "err", err)
		}
		return
	}
	for _, id := range orphans {
		s.log.Warn("resuming run that had not ended and held no lease", "run", id)
		s.launch(id)
	}
}

// unleased lists the runs whose ledger has not ended and that hold no lease
// key (keys, as the lease sweep just listed them) and no drive here, seen
// so on two sweeps in a row with nothing appended between: a run is
// written after its lease is claimed and its lease dropped after it ended,
// so one sweep may see a start or an end half done, never two. A run seen
// ended is remembered and never read again.
func (s *Service) unleased(ctx context.Context, keys map[string]bool) ([]string, error) {
	runs, err := s.ledger.Runs(ctx)
	if err != nil {
		return nil, err
	}
	s.seenMu.Lock()
	defer s.seenMu.Unlock()
	var out []string
	for id, n := range runs {
		if keys[id] || s.seen[id] < 0 || s.local(id) {
			continue
		}
		if s.seen[id] != int64(n) {
			ended, err := s.ledger.Ended(ctx, id)
			switch {
			case err != nil:
			case ended:
				s.seen[id] = -1
			default:
				s.seen[id] = int64(n) // look again next sweep
			}
			continue
		}
		// Unleased at this length a sweep ago too: nobody drives it.
		if _, err := s.leases.kv.Get(ctx, id); errors.Is(err, jetstream.ErrKeyNotFound) {
			out = append(out, id)
		}
	}
	return out, nil
}

// drive is the run loop. It is both start and resume: it reads and folds the
// ledger first and continues from there. lease is the claim a start took
// (nil: the drive claims the run itself).
func (s *Service) drive(ctx context.Context, runID string, lease *held) error {
	if lease == nil {
		rev, err := s.leases.claim(ctx, runID)
		if errors.Is(err, errLeaseHeld) {
			return nil
		}
		if err != nil {
			if ledger.IsStorageFull(err) {
				s.storeFailed(runID, err)
			}
			return fmt.Errorf("claim lease: %w", err)
		}
		lease = &held{runID: runID, rev: rev}
	}
	leaseCtx, loseLease := context.WithCancel(ctx)
	renewing := make(chan struct{})
	lost := make(chan struct{})
	go func() {
		defer close(renewing)
		s.keepLease(leaseCtx, func() { close(lost); loseLease() }, lease)
	}()
	var actor contracts.Actor
	// At the end the renewals stop first; then a run that ended drops its
	// lease at the revision the last renewal left, and one that has not
	// ended hands it off, so the next sweep anywhere resumes it at once.
	defer func() {
		loseLease()
		<-renewing
		select {
		case <-lost:
			return // someone else's now
		default:
		}
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		ended, err := s.ledger.Ended(bg, runID)
		switch {
		case err == nil && ended, errIsNotFound(err):
			s.leases.release(bg, runID, lease.revision())
		default:
			if herr := s.leases.handOff(bg, runID, lease.revision()); herr != nil {
				s.log.Warn("lease hand-off", "run", runID, "err", herr)
				return // it lapses at its TTL instead
			}
			if s.ctx.Err() != nil && actor.ID != "" {
				s.handedOff(runID, actor)
			}
		}
	}()

	entries, err := s.ledger.Read(leaseCtx, runID)
	if errIsNotFound(err) {
		return nil // a start whose header never landed: nothing to drive
	}
	if err != nil {
		return err
	}
	d := &drive{s: s, runID: runID, entries: entries}
	rec := ledger.Fold(runID, entries)
	actor = rec.Actor
	if rec.Status.Terminal() {
		return nil
	}
	d.w = s.ledger.Writer(runID, rec.LastSeq, s.cfg.Now)
	err = d.run(leaseCtx)
	if err == nil || ledger.IsConflict(err) {
		// Finished, or another writer (a cancellation, another driver) moved
		// the ledger on: either way this drive is over.
		return nil
	}
	return err
}

// keepLease renews the lease every third of its TTL until ctx ends. Only a
// renewal refused because the lease changed hands loses it; one that fails
// otherwise (a timeout, a JetStream leader election, a store refusing
// writes for lack of storage) is tried again at the next tick, until the
// lease's own expiry passes with no renewal landed.
func (s *Service) keepLease(ctx context.Context, lose func(), lease *held) {
	t := time.NewTicker(s.cfg.LeaseTTL / 3)
	defer t.Stop()
	renewed := s.cfg.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			next, err := s.leases.renew(ctx, lease.runID, lease.revision())
			if err == nil {
				lease.set(next)
				renewed = s.cfg.Now()
				continue
			}
			if ctx.Err() != nil {
				return
			}
			if ledger.IsStorageFull(err) {
				s.storeFailed(lease.runID, err)
			}
			if errors.Is(err, errLeaseLost) || s.cfg.Now().Sub(renewed) >= s.cfg.LeaseTTL {
				s.log.Warn("lease lost", "run", lease.runID, "err", err)
				lose()
				return
			}
			s.log.Info("lease renewal failed; trying again", "run", lease.runID, "err", err)
		}
	}
}

// drive holds one drive's state: the ledger as read so far and its writer.
type drive struct {
	s       *Service
	runID   string
	entries []contracts.Entry
	w       *ledger.Writer
	header  contracts.RunStarted
	// settings are the model's tuned settings for this drive.
	settings contracts.ModelSettings
	// inv is the inventory the run captured, once this drive holds it.
	inv *contracts.Inventory
	// turnMs is how long the model took to answer the turn just taken.
	turnMs int64
	// lastReply is the executor's reply to the step just asked.
	lastReply *contracts.ExecReply
	// callNotes are the notes of how this turn's calls were read (from the
	// model's text, a tool name in another case), by call id, for the entry
	// that records each (fixes.go).
	callNotes map[string][]string
}

// maxTurns is the run's turn budget, lowered by the model's tuned turn limit.
func (d *drive) maxTurns() int { return turnLimit(&d.header, &d.settings) }

// turnLimit is a run's turn budget lowered by its model's tuned turn limit:
// what the drive enforces and what the rules say.
func turnLimit(h *contracts.RunStarted, s *contracts.ModelSettings) int {
	if s != nil && s.TurnLimit > 0 && s.TurnLimit < h.Budget.MaxTurns {
		return s.TurnLimit
	}
	return h.Budget.MaxTurns
}

// readings counts the database readings that produced a result.
func readings(rec contracts.Record) int {
	n := 0
	for _, st := range rec.Steps {
		if st.Status == contracts.StepCompleted && st.CorrelationID != "" {
			n++
		}
	}
	return n
}

// reserve is how much of the run's time is kept for the report: the
// budget's ReportReserveMs, or twice the slowest model turn this run has
// taken when that is longer — a local model that needs 40 s a turn is asked
// for its report while it still has time to write one — but never more than
// a third of the run's deadline.
func (d *drive) reserve() time.Duration {
	b := d.header.Budget
	slowest := int64(0)
	for _, e := range d.entries {
		switch e.Kind {
		case contracts.KindToolInvoked, contracts.KindToolRefused, contracts.KindToolCompleted, contracts.KindClosingStatement:
			var p struct {
				ModelMs int64 `json:"modelMs"`
			}
			if json.Unmarshal(e.Data, &p) == nil {
				slowest = max(slowest, p.ModelMs)
			}
		}
	}
	ms := max(b.ReportReserveMs, 2*slowest)
	if b.DeadlineMs > 0 {
		ms = min(ms, b.DeadlineMs/3)
	}
	return time.Duration(ms) * time.Millisecond
}

// reportNotice is the message that asks for the report before the next turn,
// or "" when none is due: inside the report reserve (turns or time), or once
// the model has taken its tuned number of readings. Each says what is true:
// how many turns are left, this one included, and "last turn" only on the
// last.
func (d *drive) reportNotice(rec contracts.Record) string {
	b := d.header.Budget
	left := d.maxTurns() - rec.Spent.Turns
	switch {
	case left <= 1:
		return lastTurnNotice
	case left <= b.ReportReserveTurns:
		return turnsLeftNotice(left)
	case d.remaining() <= d.reserve():
		return timeLeftNotice(d.remaining())
	case d.settings.ReadingsBeforeReport > 0 && readings(rec) >= d.settings.ReadingsBeforeReport:
		return readingsNotice(readings(rec))
	}
	return ""
}

// append writes one entry and keeps the local copy of the ledger current.
// A write the store refuses for lack of storage is retried until it lands.
func (d *drive) append(ctx context.Context, kind contracts.EventKind, payload any) error {
	payload = d.noteCall(payload)
	e, err := d.appendRetrying(ctx, kind, payload)
	if err != nil {
		return err
	}
	e.Seq = uint64(len(d.entries) + 1)
	d.entries = append(d.entries, e)
	return nil
}

func (d *drive) record() contracts.Record { return ledger.Fold(d.runID, d.entries) }

// finish appends run-finished with the verdict folded from the ledger.
func (d *drive) finish(ctx context.Context, status contracts.RunStatus, stop contracts.StopReason, reason contracts.FailureReason, detail string, judged bool) error {
	fin := contracts.RunFinished{Status: status, StopReason: stop, Reason: reason, Detail: detail}
	if judged {
		v := verdict.Verify(d.entries, status == contracts.StatusCancelled)
		fin.GoalVerdict = &v
	}
	return d.end(ctx, fin)
}

// end records fin, the run's last entry, and the run in its actor's
// history.
func (d *drive) end(ctx context.Context, fin contracts.RunFinished) error {
	// The ending is recorded even when the drive's own context is done.
	ctx = context.WithoutCancel(ctx)
	if err := d.append(ctx, contracts.KindRunFinished, fin); err != nil {
		return err
	}
	d.s.recordHistory(ctx, d.header.Actor, d.runID, fin.Status)
	d.s.log.Info("run finished", "run", d.runID, "status", fin.Status, "stop", fin.StopReason, "reason", fin.Reason)
	return nil
}

func (d *drive) run(ctx context.Context) error {
	if len(d.entries) == 0 || d.entries[0].Kind != contracts.KindRunStarted {
		return errors.New("orchestrator: ledger has no run-started header")
	}
	if err := json.Unmarshal(d.entries[0].Data, &d.header); err != nil {
		return fmt.Errorf("orchestrator: decode header: %w", err)
	}
	rec := d.record()

	// A previous drive composed the report and stopped before recording the
	// end: the run answered, and finishing it needs no model.
	if hasEntry(d.entries, contracts.KindReportComposed) {
		d.s.log.Info("resumed run had its report composed; finishing it", "run", d.runID)
		return d.finish(ctx, contracts.StatusSucceeded, contracts.StopReportComposed, "", "", true)
	}

	// Which model drives this drive.
	probe, err := d.probeModel(ctx)
	if err != nil {
		return d.finish(ctx, contracts.StatusFailed, contracts.StopFailed, reasonOf(err), detailOf(err), rec.Status == contracts.StatusRunning)
	}
	resolved := contracts.DriverResolved{
		Provider: probe.Provider, Model: probe.Model, Demo: probe.Demo, SettingsSource: contracts.SettingsBundled,
		Drive: rec.Drives + 1, Orchestrator: d.s.cfg.Name,
	}
	if t := probe.Tuning; t != nil && t.Settings != nil {
		d.settings = *t.Settings
		resolved.Settings = t.Settings
	}
	if t := probe.Tuning; t != nil && t.SettingsSource != "" {
		// Where this model's settings came from: the shipped document, the
		// operator's (path and digest), or the operator's, ignored.
		resolved.SettingsSource = t.SettingsSource
		if t.SettingsSource != contracts.SettingsBundled || t.State == contracts.TuningApplied {
			resolved.SettingsPath, resolved.SettingsDigest = t.Path, t.Digest
		}
	}
	if err := d.append(ctx, contracts.KindDriverResolved, resolved); err != nil {
		return err
	}

	// Steps the previous drive invoked and never settled: indeterminate, never re-run.
	for _, inv := range ledger.OpenSteps(d.entries) {
		if err := d.append(ctx, contracts.KindToolCompleted, contracts.ToolCompleted{
			ToolCall: inv.ToolCall, StepID: inv.StepID, Outcome: contracts.OutcomeIndeterminate, Content: indeterminateContent,
		}); err != nil {
			return err
		}
	}

	if err := d.captureContext(ctx); err != nil {
		return err
	}
	if d.header.Mode == contracts.ModePlanning {
		return d.plan(ctx)
	}
	return d.loop(ctx)
}

// deadline is the run's wall-clock end, fixed by its header's time so a
// resumed run keeps the deadline it started with.
func (d *drive) deadline() time.Time {
	return d.entries[0].At.Add(time.Duration(d.header.Budget.DeadlineMs) * time.Millisecond)
}

func (d *drive) remaining() time.Duration { return d.deadline().Sub(d.s.cfg.Now()) }

// statementTimeout is the per-statement timeout clamped to what is left of
// the run's deadline and database time.
func (d *drive) statementTimeout(rec contracts.Record) int64 {
	t := d.header.Budget.StatementTimeoutMs
	t = min(t, d.remaining().Milliseconds())
	t = min(t, d.header.Budget.DBTimeMs-rec.Spent.DBTimeMs)
	return max(t, 1)
}

// turnTimeout bounds one model call: the budget's ModelTurnTimeoutMs, cut to
// what is left of the run's deadline. modelturn applies the smaller of it and
// its own AGENT_MODEL_TURN_TIMEOUT_MS ceiling. A header recorded before the
// budget carried the figure (zero) is bounded by the deadline alone.
func (d *drive) turnTimeout() int64 {
	t := d.remaining().Milliseconds()
	if b := d.header.Budget.ModelTurnTimeoutMs; b > 0 {
		t = min(t, b)
	}
	return t
}

// nextTurn takes the run's next model turn with tools and the notice the
// record calls for. When the run cannot take one — the drive was stopped,
// the run is out of time or turns, the model failed — over is set and err is
// what the drive returns, the ending recorded where there is one.
func (d *drive) nextTurn(ctx context.Context, tools []contracts.ToolSpec, notice func(contracts.Record) string) (turn int, reply contracts.ModelTurnReply, over bool, err error) {
	if ctx.Err() != nil {
		return 0, reply, true, ctx.Err() // stopped: the lease lapses and another drive resumes
	}
	rec := d.record()
	if d.remaining() <= 0 {
		return 0, reply, true, d.finish(ctx, contracts.StatusFailed, contracts.StopDeadlineExceeded, "", "The run used its time.", true)
	}
	if rec.Spent.Turns >= d.maxTurns() {
		return 0, reply, true, d.finish(ctx, contracts.StatusFailed, contracts.StopTurnLimit, "", "The run used its model turns.", true)
	}
	turn = rec.Spent.Turns + 1
	start := d.s.cfg.Now()
	reply, err = d.askModel(ctx, contracts.ModelTurnRequest{
		RunID: d.runID, Turn: turn, Messages: transcript(d.entries, notice(rec)), Tools: tools,
	})
	d.turnMs = max(d.s.cfg.Now().Sub(start).Milliseconds(), 0)
	switch {
	case err == nil:
		return turn, reply, false, nil
	case ctx.Err() != nil:
		return turn, reply, true, ctx.Err()
	case d.remaining() <= 0:
		return turn, reply, true, d.finish(ctx, contracts.StatusFailed, contracts.StopDeadlineExceeded, "", "The run used its time.", true)
	}
	return turn, reply, true, d.finish(ctx, contracts.StatusFailed, contracts.StopFailed, reasonOf(err), detailOf(err), true)
}

func (d *drive) loop(ctx context.Context) error {
	for {
		// Calls refused the same way too often end the run before it asks again.
		if done, err := d.loopEnded(ctx); err != nil || done {
			return err
		}
		turn, reply, over, err := d.nextTurn(ctx, specsFor(d.header.Tools), d.turnNotice)
		if over {
			return err
		}
		reply = d.readTextCalls(turn, reply)
		if len(reply.ToolCalls) == 0 {
			if done, err := d.proseTurn(ctx, turn, reply); err != nil || done {
				return err
			}
			continue
		}
		usage := reply.Usage // carried by the turn's first entry; the fold counts a turn once
		for i, tc := range reply.ToolCalls {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if done, err := d.repeated(ctx, tc, turn); err != nil || done {
				return err
			}
			// The turn's usage and prose ride on its first entry only.
			var head turnHead
			if i == 0 {
				head = turnHead{usage: &usage, text: reply.Text, modelMs: d.turnMs}
			}
			done, err := d.call(ctx, turn, tc, head)
			if err != nil || done {
				return err
			}
		}
	}
}

// turnNotice is the notice the next turn is sent: a loop the model is in,
// then a report that is due.
func (d *drive) turnNotice(rec contracts.Record) string {
	if n := d.loopNotice(rec); n != "" {
		return n
	}
	return d.reportNotice(rec)
}

func specsFor(names []string) []contracts.ToolSpec {
	out := make([]contracts.ToolSpec, 0, len(names))
	for _, n := range names {
		if t, ok := toolTable[n]; ok {
			out = append(out, t.spec)
		}
	}
	return out
}

// modelError carries a classified model failure.
type modelError struct {
	reason contracts.FailureReason
	// detail, when set, replaces the reason's stock sentence in run-finished.
	detail string
	// absent: nobody served the request (no responders), or the replica that
	// got it was stopping; asking again shortly may reach another.
	absent bool
	// lost: the replica went silent mid-turn.
	lost bool
	// noResponders: nobody served the request at all (absent is then set too).
	noResponders bool
}

// absentFailure is a request nobody served.
func absentFailure() *modelError {
	return &modelError{reason: contracts.ReasonModelUnavailable, absent: true, noResponders: true}
}

// replyFailure is a failure modelturn answered with; its sentence is kept
// for run-finished when it is one a person can act on.
func replyFailure(f *contracts.ModelFailure) *modelError {
	me := &modelError{reason: f.Reason, absent: stopping(f)}
	if me.absent && f.Message != "" {
		me.detail = "The model-turn service kept answering: " + f.Message + "."
	}
	return me
}

// graceSpent fills in the sentence of an absence that outlasted the grace.
func graceSpent(me *modelError, grace time.Duration) *modelError {
	if me.noResponders || me.detail == "" {
		me.detail = absentDetail(grace)
	}
	return me
}

func (e *modelError) Error() string { return "model call failed: " + string(e.reason) }

func reasonOf(err error) contracts.FailureReason {
	var me *modelError
	if errors.As(err, &me) {
		return me.reason
	}
	var ee *executorError
	if errors.As(err, &ee) {
		return contracts.ReasonExecutorUnavailable
	}
	return contracts.ReasonInternal
}

// detailOf is the run-finished sentence for a failed drive.
func detailOf(err error) string {
	var me *modelError
	if errors.As(err, &me) && me.detail != "" {
		return me.detail
	}
	return failureDetail(reasonOf(err))
}

func failureDetail(r contracts.FailureReason) string {
	switch r {
	case contracts.ReasonModelUnavailable:
		return "No usable model: check the LLM_* settings."
	case contracts.ReasonModelRateLimited:
		return "The model provider refused on volume; this clears itself."
	case contracts.ReasonModelUnauthorized:
		return "The model provider rejected the credentials; fix the key."
	case contracts.ReasonModelContextExceeded:
		return "The conversation outgrew the model's context window; use a model with a larger window, or a narrower objective."
	case contracts.ReasonModelTimeout:
		return "One model call did not return in time."
	case contracts.ReasonExecutorUnavailable:
		return "No executor serves this connection's engine."
	default:
		return "The run failed; the server log has the details."
	}
}

// hasEntry reports whether entries hold one of kind.
func hasEntry(entries []contracts.Entry, kind contracts.EventKind) bool {
	for _, e := range entries {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

// absentDetail names a modelturn nobody served for the whole grace.
func absentDetail(grace time.Duration) string {
	return fmt.Sprintf("No model-turn service answered for %s: start one (sonde serve, or --services modelturn) and check its NATS connection.", grace)
}

// probeModel asks modelturn which model is configured, waiting out a short
// absence of the service.
func (d *drive) probeModel(ctx context.Context) (contracts.ModelProbeReply, error) {
	var gone absence
	for {
		reply, err := d.s.models.Probe(ctx)
		var me *modelError
		if err == nil || !errors.As(err, &me) || !me.absent {
			return reply, err
		}
		if !gone.wait(ctx, d.s.cfg.Now, d.s.cfg.AbsenceGrace) {
			return reply, graceSpent(me, d.s.cfg.AbsenceGrace)
		}
	}
}

// probeModel asks modelturn which model is configured.
func (s *Service) probeModel(ctx context.Context) (contracts.ModelProbeReply, error) {
	var reply contracts.ModelProbeReply
	if err := natsx.Request(ctx, s.nc, contracts.SubjectModelProbe, contracts.ModelProbeRequest{}, &reply, natsx.WithTimeout(5*time.Second)); err != nil {
		if errors.Is(err, natsx.ErrNotDelivered) {
			return reply, absentFailure()
		}
		return reply, &modelError{reason: contracts.ReasonModelUnavailable, detail: "The model-turn service could not be asked: " + err.Error() + "."}
	}
	if reply.Failure != nil {
		return reply, replyFailure(reply.Failure)
	}
	return reply, nil
}

// stopping reports a failure that says the replica is going away, not that
// the model failed: a retryable model-unavailable.
func stopping(f *contracts.ModelFailure) bool {
	return f.Reason == contracts.ReasonModelUnavailable && f.Retryable
}

// askModel takes one model turn. A turn lost mid-call (its replica went
// silent) is asked again, up to TurnAttempts times; a modelturn nobody
// serves is waited out for AbsenceGrace. Nothing is recorded until a turn
// answers, so asking again never doubles anything.
func (d *drive) askModel(ctx context.Context, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, error) {
	var gone absence
	lost := 0
	for {
		req.TimeoutMs = d.turnTimeout()
		reply, err := d.s.models.Turn(ctx, req)
		var me *modelError
		if err == nil || !errors.As(err, &me) || ctx.Err() != nil || d.remaining() <= 0 {
			return reply, err
		}
		switch {
		case me.lost:
			lost++
			if lost >= d.s.cfg.TurnAttempts {
				me.detail = fmt.Sprintf("The model-turn service went silent mid-turn %d times.", lost)
				return reply, me
			}
			d.s.log.Warn("model turn lost: modelturn went silent; asking again", "run", d.runID, "turn", req.Turn, "silence", d.s.cfg.TurnSilence)
			gone = absence{}
		case me.absent:
			if !gone.wait(ctx, d.s.cfg.Now, d.s.cfg.AbsenceGrace) {
				return reply, graceSpent(me, d.s.cfg.AbsenceGrace)
			}
		default:
			return reply, err
		}
	}
}

// modelTurn asks modelturn for one turn and watches its heartbeats: a turn
// silent for TurnSilence is given up as lost.
func (s *Service) modelTurn(ctx context.Context, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, error) {
	var reply contracts.ModelTurnReply
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := s.watchTurn(ctx, cancel, req.RunID, s.cfg.TurnSilence)
	defer stop()
	// The service bounds the call itself; wait a little longer for its answer.
	wait := time.Duration(req.TimeoutMs)*time.Millisecond + 5*time.Second
	if err := natsx.Request(ctx, s.nc, contracts.SubjectModelTurn, req, &reply, natsx.WithTimeout(wait)); err != nil {
		switch {
		case errors.Is(context.Cause(ctx), errTurnLost):
			return reply, &modelError{reason: contracts.ReasonModelUnavailable, lost: true}
		case errors.Is(err, natsx.ErrNotDelivered):
			return reply, absentFailure()
		case errors.Is(err, natsx.ErrUnanswered) && errors.Is(err, context.DeadlineExceeded):
			return reply, &modelError{reason: contracts.ReasonModelTimeout}
		}
		return reply, &modelError{reason: contracts.ReasonModelUnavailable, detail: "The model-turn service could not be asked: " + err.Error() + "."}
	}
	if reply.Failure != nil {
		s.log.Warn("model turn failed", "run", req.RunID, "reason", reply.Failure.Reason)
		return reply, replyFailure(reply.Failure)
	}
	return reply, nil
}

// executorError is an executor that could not be reached at all.
type executorError struct{ err error }

func (e *executorError) Error() string { return "executor: " + e.err.Error() }
func (e *executorError) Unwrap() error { return e.err }

// errNoReply is an executor request that may have been delivered and was
// never answered: the statement may or may not have run.
var errNoReply = errors.New("orchestrator: executor did not answer")

// exec asks the executor of engine for one operation. Only a request that
// reached no executor (natsx.ErrNotDelivered) certainly did not run: it is
// an *executorError, which the run may ask again; any other failure is
// errNoReply, and the step is recorded indeterminate, never run again.

func (s *Service) exec(ctx context.Context, engine contracts.Engine, op contracts.ExecOp, req contracts.ExecRequest) (contracts.ExecReply, error) {
	var reply contracts.ExecReply
	wait := time.Duration(req.TimeoutMs)*time.Millisecond + s.cfg.ExecReplyGrace
	err := natsx.Request(ctx, s.nc, contracts.ExecSubject(engine, op), req, &reply, natsx.WithTimeout(wait))
	switch {
	case err == nil:
		return reply, nil
	case errors.Is(err, natsx.ErrNotDelivered):
		return reply, &executorError{err: err}
	default:
		return reply, fmt.Errorf("%w: %w", errNoReply, err)
	}
}
