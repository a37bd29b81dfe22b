# Issue 17: faults and load — one drive per run, leases, appends across a
# stream that stops answering, starts answered late, lost databases, and the
# orchestrator's own checks (items 10, 12-16, 18).
lz=services/orchestrator/leases.go
cm=services/orchestrator/commands.go
sv=services/orchestrator/service.go
lg=pkg/ledger/ledger.go
gr=services/gateway/runs.go
e2e=./services/sonde/e2e/

# Item 12: one start or drive of a run per process; a lease is dropped only
# when its run ended; the sweep finds runs that hold no lease at all.
m two-drives-of-one-run "$orch" 'TestConcurrentKeyedStartsDriveEachRunOnce' - \
	"$drive" 'if _, busy := s.drives[runID]; busy || s.stopped {' 'if s.stopped {'
m lease-dropped-before-the-run-ended "$orch" 'TestStopHandsRunsToAnotherOrchestratorAtOnce' - \
	"$drive" 'case err == nil && ended, errIsNotFound(err):' 'case err == nil || ended || true:'
m sweep-misses-unleased-runs "$orch" 'TestSweepFindsARunningRunWithoutALease' - \
	"$drive" 'orphans, err := s.unleased(ctx, keys)' 'orphans, err := []string(nil), error(nil)'
# Item 16: a drain hands its runs off, lapsed, and asks for them to be resumed.
m drain-asks-nobody-to-resume "$orch" 'TestStopHandsRunsToAnotherOrchestratorAtOnce' - \
	"$sv" $'\ts.wg.Wait()\n\ts.askResume()' $'\ts.wg.Wait()'
m handed-off-lease-still-live "$orch" 'TestStopHandsRunsToAnotherOrchestratorAtOnce' - \
	"$lz" 'lapsed, _ := json.Marshal(leaseValue{Owner: l.owner})' 'lapsed, _ := json.Marshal(leaseValue{Owner: l.owner, Expires: l.now().Add(l.ttl)})'
# Item 14: appends and renewals ride out a stream that stops answering.
m renewal-failure-loses-the-lease "$orch" 'TestDriveRidesOutAStreamThatStopsAnswering' - \
	"$drive" 'if errors.Is(err, errLeaseLost) || s.cfg.Now().Sub(renewed) >= s.cfg.LeaseTTL {' 'if errors.Is(err, errLeaseLost) || s.cfg.Now().Sub(renewed) >= 0 {'
m append-not-retried ./pkg/ledger/ 'TestAppendRetriesAcrossAServerThatStopsAnswering|TestAppendRidesOutTheLossOfTheStreamLeader' - \
	"$lg" 'if !unanswered(err) || ctx.Err() != nil' 'if true || ctx.Err() != nil'
m append-retry-unbounded ./pkg/ledger/ 'TestAppendRetryIsBounded' - \
	"$lg" 'l.retryFor < 0 || time.Since(began) >= l.retryFor {' 'l.retryFor < 0 || time.Since(began) < 0 {'
# Item 15: a 503 for a start means the run was not created.
# Both lines that keep a late start from creating its run: the check before
# the lease is claimed and the header append bounded by the deadline (each
# alone still creates nothing, so one alone is no breakage).
m start-past-its-deadline-created "$orch" 'TestStartPastItsCallersDeadlineCreatesNothing' - \
	"$cm" $'\tif late(cmd, s.cfg.Now()) {\n\t\treturn expired(cmd)\n\t}\n\t// One start' $'\t// One start' \
	"$cm" 'hctx, cancel = context.WithDeadline(ctx, cmd.NotAfter)' 'hctx, cancel = context.WithCancel(ctx)'
m gateway-sets-no-start-deadline "$e2e" 'TestFaults/StartAnsweredLateIsSettled$' - \
	"$gr" 'cmd.NotAfter = time.Now().Add(runCommandTimeout)' ''
# Item 10: an Idempotency-Key is the actor's own.
m idempotency-key-shared-by-actors "$e2e" 'TestFaults/IdempotencyKeyIsPerActor$' - \
	"$gr" 'sum := sha256.Sum256([]byte(actorID + "\x00" + key))' 'sum := sha256.Sum256([]byte(key))'
# Item 13: a lost database is a state of the connection, not a statement's
# failure, and the engine's words stay out of what the model reads.
m lost-database-charged-to-the-statement "$orch" 'TestDriveLostDatabaseCostsNothing' - \
	"$call" 'return r.Error != nil && r.Error.Class == contracts.DBUnavailable' 'return false'
m lost-database-in-the-engines-words "$orch" 'TestDriveLostDatabaseCostsNothing' - \
	"$call" $'\t\tif connectionLost(reply) {\n\t\t\treturn d.unreachable(ctx, tc, stepID)\n\t\t}\n\t\treturn d.refuse(ctx, tc, stepID, r.Code, r.Message, r.Fix)' $'\t\treturn d.refuse(ctx, tc, stepID, r.Code, r.Message, r.Fix)'
# Item 18: the orchestrator's own checks.
m resume-ignores-the-actor "$orch" 'TestStartAndCancelAnswerOnlyTheRunsActor' - \
	"$cm" $'\tif rec.Actor.ID != cmd.Actor.ID {\n\t\t// Another actor' $'\tif false {\n\t\t// Another actor'
m cancel-ignores-the-actor "$orch" 'TestStartAndCancelAnswerOnlyTheRunsActor' - \
	"$cm" $'\t\tif rec.Actor.ID != cmd.Actor.ID {\n\t\t\treturn contracts.CancelRunReply{' $'\t\tif false {\n\t\t\treturn contracts.CancelRunReply{'
m cancel-leaves-the-statement-running "$orch" 'TestCancelStopsTheStatementInFlight' - \
	"$cm" $'\t\ts.cancelStatements(cmd.RunID, entries)\n' ''
m lapsed-lease-retaken-without-cas "$orch" 'TestRetakingALapsedLeaseIsACompareAndSet' - \
	"$lz" 'rev, err = l.kv.Update(ctx, runID, l.value(), cur.Revision())' 'rev, err = l.kv.Put(ctx, runID, l.value())'
m probe-accepts-any-tools-call ./services/modelturn/ 'TestProbeCountsOnlyACallOfItsOwnTool' - \
	services/modelturn/probe.go 'if out.ToolCalls[i].Name == ProbeTool {' 'if true {'
m probe-failure-taken-as-disproof ./services/modelturn/ 'TestProbeEstablishesCapabilitiesOnTheWire' - \
	services/modelturn/probe.go 'if !f.Refused {' 'if false {'
m gate-refuses-a-probe-without-verdict ./services/gateway/ 'TestProbeFailureWithoutVerdictStartsAsBefore' - \
	services/gateway/agentconfig.go 'if err != nil || len(reply.Disproved) == 0 {' 'if err == nil && len(reply.Disproved) == 0 {'
m gate-refuses-without-disproof ./services/gateway/ 'TestCapabilityGateRefusesOnlyOnDisproof' - \
	services/gateway/agentconfig.go 'if err != nil || len(reply.Disproved) == 0 {' 'if err != nil || len(reply.Missing) == 0 {'
# Item 16: a stream or bucket not yet visible at start is waited for.
m start-gives-up-on-a-missing-bucket "$orch" 'TestStartWaitsForABucketNotYetVisible' - \
	"$sv" 'if err == nil || !transientOpen(err) {' 'if true {'
m late-start-answered-as-unknown ./services/gateway/ 'TestStartCreatedButAnsweredLateIs202' - \
	"$gr" 'return g.settleStart(ctx, a, req, cmd.RunID, cmd.NotAfter)' 'return api.StartRunResponse{}, false, err'
# A retry that meets its own first try still being proposed (10158) tries
# again instead of failing the append.
m duplicate-in-process-not-retried ./pkg/ledger/ 'TestUnansweredByCode' - \
	pkg/ledger/errors.go 'errCodeStreamOffline, errCodeDuplicateInProcess:' 'errCodeStreamOffline:'
