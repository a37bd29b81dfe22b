package orchestrator

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
)

// StartRun starts a new run or resumes an existing one. For a new run it
// writes the run-started header with the budget row of the run's workflow;
// either way it then drives the run in the background and answers at once
// with the persisted mode and workflow.
func (s *Service) StartRun(ctx context.Context, cmd contracts.StartRun) contracts.StartRunReply {
	if !contracts.ValidRunID(cmd.RunID) {
		return contracts.StartRunReply{Error: runError(contracts.CodeBadRequest,
			"run id must be 1-64 letters, digits, '-' or '_'", "let the gateway choose the run id")}
	}
	entries, err := s.ledger.Read(ctx, cmd.RunID)
	switch {
	case err == nil:
		return s.resume(ctx, cmd, entries)
	case !errIsNotFound(err):
		s.log.Error("read ledger", "run", cmd.RunID, "err", err)
		return contracts.StartRunReply{Error: runError(contracts.CodeUnavailable, "the ledger cannot be read", "check the NATS server")}
	}

	// The gateway refused a bad start already; the rule is one, and holds
	// for any sender.
	if p := policy.CheckStart(&cmd); p != nil {
		return contracts.StartRunReply{Error: p}
	}
	switch {
	case !policy.Supported(cmd.Mode, cmd.WorkflowType):
		return contracts.StartRunReply{Error: runError(contracts.CodeUnsupportedFeature,
			string(cmd.Mode)+" runs of the "+string(cmd.WorkflowType)+" workflow are not available in this release",
			`start an agent run of the "investigation" workflow, or a planning run (mode "planning") of any workflow`)}
	case cmd.Actor.ID == "":
		return contracts.StartRunReply{Error: runError(contracts.CodeBadRequest, "the start command names no actor", "")}
	}
	desc, err := s.connection(ctx, cmd.ConnectionID)
	if err != nil {
		return contracts.StartRunReply{Error: runError(contracts.CodeUnknownConnection, "no connection "+fence.Quote(cmd.ConnectionID)+" is registered", "list connections with GET /api/connections")}
	}
	budget, _ := policy.Budget(cmd.WorkflowType)
	header := contracts.RunStarted{
		Mode: cmd.Mode, WorkflowType: cmd.WorkflowType, Objective: cmd.Objective,
		ConnectionID: cmd.ConnectionID, Engine: desc.Engine, Actor: cmd.Actor,
		PreviousRunID: cmd.PreviousRunID, AutoExecute: cmd.AutoExecute,
		Budget: budget, Tools: policy.Tools(cmd.Mode, cmd.WorkflowType),
		ConnectionIdentity: desc.Identity,
		FenceMark:          newFenceMark(),
	}
	// Every run belongs to a conversation; one that cannot be continued is
	// declined on the header and the run starts anyway.
	header.Thread = s.thread(ctx, cmd, desc.Identity)
	if late(cmd, s.cfg.Now()) {
		return expired(cmd)
	}
	// One start or drive of a run at a time in this process: a concurrent
	// start of the same id (a retried start with the same idempotency key)
	// never touches the lease this one claims, and answers as a resume once
	// the run exists.
	runCtx, ok := s.take(cmd.RunID)
	if !ok {
		if entries, rerr := s.awaitLedger(ctx, cmd.RunID); rerr == nil {
			return s.resume(ctx, cmd, entries)
		}
		return contracts.StartRunReply{Error: runError(contracts.CodeRunExists, "run "+fence.Quote(cmd.RunID)+" is being started", "")}
	}
	// Claim the run before it exists, so a process that dies between writing
	// the header and driving leaves a lease the sweep will find.
	rev, err := s.leases.claim(ctx, cmd.RunID)
	if err != nil {
		s.untake(cmd.RunID)
		if errors.Is(err, errLeaseHeld) {
			// The same id is being started elsewhere: answer as a resume
			// once it exists.
			if entries, rerr := s.awaitLedger(ctx, cmd.RunID); rerr == nil {
				return s.resume(ctx, cmd, entries)
			}
			return contracts.StartRunReply{Error: runError(contracts.CodeRunExists, "run "+fence.Quote(cmd.RunID)+" is being started elsewhere", "")}
		}
		return s.unrecorded(cmd.RunID, "claim lease", err)
	}
	lease := &held{runID: cmd.RunID, rev: rev}
	// A start that waited past its caller's deadline writes nothing: the
	// caller has already been told the run was not created.
	hctx, cancel := ctx, context.CancelFunc(func() {})
	if !cmd.NotAfter.IsZero() {
		hctx, cancel = context.WithDeadline(ctx, cmd.NotAfter)
	}
	w := s.ledger.Writer(cmd.RunID, 0, s.cfg.Now)
	_, err = w.Append(hctx, contracts.KindRunStarted, header)
	cancel()
	if ledger.IsConflict(err) {
		// The run exists (written by another start of the same id): this
		// start holds its lease, so it drives it, and answers as a resume.
		s.goDrive(runCtx, cmd.RunID, lease)
		if entries, rerr := s.ledger.Read(ctx, cmd.RunID); rerr == nil {
			reply, _ := s.answerResume(cmd, entries)
			return reply
		}
		return contracts.StartRunReply{Error: runError(contracts.CodeUnavailable, "the ledger cannot be read", "check the NATS server")}
	}
	if err != nil {
		// The drive is handed the lease whatever happened: it reads the
		// ledger first, releases the lease of a run that was never
		// written, and drives one whose header landed after all.
		s.goDrive(runCtx, cmd.RunID, lease)
		if late(cmd, s.cfg.Now()) {
			return expired(cmd)
		}
		return s.unrecorded(cmd.RunID, "append run-started", err)
	}
	s.storeOK()
	// The actor's history lists the run from now on, while it is still going.
	s.recordHistory(ctx, cmd.Actor, cmd.RunID, contracts.StatusQueued)
	s.goDrive(runCtx, cmd.RunID, lease)
	return contracts.StartRunReply{RunID: cmd.RunID, Mode: header.Mode, WorkflowType: header.WorkflowType}
}

// late reports a start that reached the point of writing its header after
// the instant its caller stopped waiting.
func late(cmd contracts.StartRun, now time.Time) bool {
	return !cmd.NotAfter.IsZero() && !now.Before(cmd.NotAfter)
}

// expired answers a start that came too late to be created.
func expired(cmd contracts.StartRun) contracts.StartRunReply {
	return contracts.StartRunReply{Error: runError(contracts.CodeUnavailable,
		"run "+fence.Quote(cmd.RunID)+" was not created: the start reached the orchestrator after its caller stopped waiting",
		"start the run again")}
}

// newFenceMark draws a run's fence mark.
func newFenceMark() string {
	var b [5]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return hex.EncodeToString(b[:])
}

// unrecorded answers a start that could not be written, saying why when the
// store is full.
func (s *Service) unrecorded(runID, what string, err error) contracts.StartRunReply {
	if ledger.IsStorageFull(err) {
		s.storeFailed(runID, err)
		return contracts.StartRunReply{Error: runError(contracts.CodeUnavailable,
			"the run could not be recorded: JetStream refuses writes for lack of storage",
			"free space on the NATS server or raise its JetStream limits; GET /readyz says when it is ready again")}
	}
	s.log.Error(what, "run", runID, "err", err)
	return contracts.StartRunReply{Error: runError(contracts.CodeUnavailable, "the run could not be recorded", "check the NATS server")}
}

// awaitLedger waits briefly for a run another process is starting to have
// its header.
func (s *Service) awaitLedger(ctx context.Context, runID string) ([]contracts.Entry, error) {
	for n := 0; ; n++ {
		entries, err := s.ledger.Read(ctx, runID)
		if err == nil || !errIsNotFound(err) || n >= 10 {
			return entries, err
		}
		if err := sleep(ctx, backoff(n, 20*time.Millisecond, 500*time.Millisecond)); err != nil {
			return nil, err
		}
	}
}

// resume answers a start of a run that exists and drives it unless it
// ended, provided the caller is the run's own actor.
func (s *Service) resume(_ context.Context, cmd contracts.StartRun, entries []contracts.Entry) contracts.StartRunReply {
	reply, running := s.answerResume(cmd, entries)
	if running {
		s.launch(cmd.RunID)
	}
	return reply
}

// answerResume is the answer to a start of a run that exists, and whether
// it is the caller's own run and still running.
func (s *Service) answerResume(cmd contracts.StartRun, entries []contracts.Entry) (contracts.StartRunReply, bool) {
	rec := ledger.Fold(cmd.RunID, entries)
	if rec.Actor.ID != cmd.Actor.ID {
		// Another actor's run does not exist for this caller.
		return contracts.StartRunReply{Error: runError(contracts.CodeRunNotFound, "no run "+fence.Quote(cmd.RunID), "")}, false
	}
	return contracts.StartRunReply{RunID: cmd.RunID, Mode: rec.Mode, WorkflowType: rec.WorkflowType, Resumed: true}, !rec.Status.Terminal()
}

// CancelRun records the run's end as cancelled. A drive of it anywhere sees
// the entry at its next append (a compare-and-append conflict) and stops; a
// local drive is also told at once.
func (s *Service) CancelRun(ctx context.Context, cmd contracts.CancelRun) contracts.CancelRunReply {
	for attempt := 0; attempt < 10; attempt++ {
		entries, err := s.ledger.Read(ctx, cmd.RunID)
		if errIsNotFound(err) {
			return contracts.CancelRunReply{Error: runError(contracts.CodeRunNotFound, "no run "+fence.Quote(cmd.RunID), "")}
		}
		if err != nil {
			return contracts.CancelRunReply{Error: runError(contracts.CodeUnavailable, "the ledger cannot be read", "check the NATS server")}
		}
		rec := ledger.Fold(cmd.RunID, entries)
		if rec.Actor.ID != cmd.Actor.ID {
			return contracts.CancelRunReply{Error: runError(contracts.CodeRunNotFound, "no run "+fence.Quote(cmd.RunID), "")}
		}
		if rec.Status.Terminal() {
			return contracts.CancelRunReply{Status: rec.Status, Error: runError(contracts.CodeRunFinished, "the run already ended "+string(rec.Status), "")}
		}
		// A drive in this process stops at its next checkpoint, so it cannot
		// keep winning the race for the next position.
		s.stopLocal(cmd.RunID)
		v := verdict.Verify(entries, true)
		w := s.ledger.Writer(cmd.RunID, rec.LastSeq, s.cfg.Now)
		_, err = w.Append(ctx, contracts.KindRunFinished, contracts.RunFinished{
			Status: contracts.StatusCancelled, StopReason: contracts.StopCancelled, GoalVerdict: &v,
			Detail: "Stopped at the user's request.",
		})
		if ledger.IsConflict(err) {
			continue // the drive appended meanwhile: read again
		}
		if err != nil {
			return contracts.CancelRunReply{Error: runError(contracts.CodeUnavailable, "the cancellation could not be recorded", "try again")}
		}
		s.recordHistory(ctx, rec.Actor, cmd.RunID, contracts.StatusCancelled)
		s.cancelStatements(cmd.RunID, entries)
		return contracts.CancelRunReply{Status: contracts.StatusCancelled}
	}
	return contracts.CancelRunReply{Error: runError(contracts.CodeUnavailable, "the run kept moving; cancellation not recorded", "try again")}
}

// cancelStatements tells the executors to stop the statements the run has
// in flight (its steps invoked and not settled), wherever its drive runs:
// cancelling the drive alone would leave them running at the database until
// their own timeout.
func (s *Service) cancelStatements(runID string, entries []contracts.Entry) {
	var header contracts.RunStarted
	if len(entries) == 0 || json.Unmarshal(entries[0].Data, &header) != nil || header.Engine == "" {
		return
	}
	for _, inv := range ledger.OpenSteps(entries) {
		b, _ := json.Marshal(contracts.ExecCancel{RunID: runID, StepID: inv.StepID})
		if err := s.nc.Publish(contracts.ExecCancelSubject(header.Engine), b); err != nil {
			s.log.Warn("cancel statement", "run", runID, "step", inv.StepID, "err", err)
		}
	}
}

func (s *Service) stopLocal(runID string) {
	s.mu.Lock()
	cancel := s.drives[runID]
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// connection reads the published descriptor of connection id through the
// registry's one validity rule.
func (s *Service) connection(ctx context.Context, id string) (contracts.ConnectionDescriptor, error) {
	return s.conns.Get(ctx, id)
}

// recordHistory publishes a pointer to the run on its actor's history
// subject: queued when the run starts, its end status when it finishes. It is
// best-effort: the ledger is the record, and a run whose pointers were all
// lost is only missing from its actor's listing.
func (s *Service) recordHistory(ctx context.Context, actor contracts.Actor, runID string, status contracts.RunStatus) {
	if !contracts.ValidRunID(actor.ID) {
		return // an actor id that is no subject token keeps no history
	}
	b, _ := json.Marshal(contracts.HistoryPointer{RunID: runID, Status: status})
	if err := s.nc.Publish(contracts.HistorySubject(actor.ID), b); err != nil {
		s.log.Warn("record history", "run", runID, "err", err)
	}
}
