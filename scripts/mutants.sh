#!/usr/bin/env bash
# The mutation gate: break one safety rule at a time on purpose, run the
# focused tests that pin it, and fail if any breakage survives.
#
#   scripts/mutants.sh            every mutant
#   scripts/mutants.sh NAME...    only the mutants named (see the list below)
#   MUTANTS_LIST=1 scripts/mutants.sh   print the list and exit
#
# The working tree is never modified: it is copied once to a scratch
# directory (MUTANTS_DIR, default $TMPDIR/sonde-mutants, reused so that the
# build cache stays warm between runs), each mutant is applied there and
# undone from the copy's pristine files. A mutant is one or more exact text
# replacements; a replacement whose old text is missing, or found twice, is a
# stale mutant and fails the gate (the code moved: update the list). Each
# focused test set is first run unmutated and must pass. A mutant that does
# not compile fails the gate too, and so does a focused test that skips (a
# skipped test catches nothing): the shared datasets some tests read beside
# the repository (../shared/datasets) are copied beside the scratch copy.
#
# The PostgreSQL mutants need a server: SONDE_TEST_PG_URL, or a throwaway one
# from scripts/postgres.sh. Without one they are reported as not run and the
# gate fails.
set -uo pipefail

root="$(cd "$(dirname "$0")/.." && pwd)"
GO="${GO:-go}"
scratch="${MUTANTS_DIR:-${TMPDIR:-/tmp}/sonde-mutants}"
per_test_timeout="${MUTANTS_TEST_TIMEOUT:-180s}"
# Mutants run in MUTANTS_JOBS scratch trees at once (default 3), taking the
# next mutant from one queue as each tree comes free. A mutant's build waits
# on the disk and the external linker as well as the CPU, so on two cores a
# third tree keeps them busy: 16 orchestrator mutants took 132 s with three
# trees against 166 s with two, side by side on warm trees.
jobs="${MUTANTS_JOBS:-3}"
# A mutant's time is its build: compiling the mutated test package and
# linking its test binary (the test itself mostly runs in well under a
# second). Every focused test, the baseline's included, is built without
# the symbol table and DWARF (-s -w: the link takes half the time) and with
# the named test package compiled without optimisation or inlining (-N -l:
# a quarter less compile time). Neither changes what the code does; set
# MUTANTS_LDFLAGS or MUTANTS_GCFLAGS to change them (empty: no such flag).
build_flags=()
ldflags="${MUTANTS_LDFLAGS--s -w}"
gcflags="${MUTANTS_GCFLAGS--N -l}"
[[ -n "$ldflags" ]] && build_flags+=("-ldflags=$ldflags")
[[ -n "$gcflags" ]] && build_flags+=("-gcflags=$gcflags")

# ---------------------------------------------------------------------------
# The mutants. m NAME PACKAGE RUN-REGEX NEEDS FILE OLD NEW [FILE OLD NEW]...
# NEEDS is "-" or "pg". OLD and NEW are exact text; $'…' carries tabs and
# newlines.
names=() pkgs=() runs=() needs=() patches=()
m() {
	names+=("$1") pkgs+=("$2") runs+=("$3") needs+=("$4")
	shift 4
	local p="" f o n
	while (($#)); do
		f="$1" o="$2" n="$3"
		shift 3
		# Patches are kept NUL-free by encoding each field in base64.
		p+="$(printf '%s' "$f" | base64 -w0):$(printf '%s' "$o" | base64 -w0):$(printf '%s' "$n" | base64 -w0) "
	done
	patches+=("$p")
}

orch=./services/orchestrator/
call=services/orchestrator/call.go
drive=services/orchestrator/drive.go

# Issue 8: the run loop's rules.
m intent-after-effect "$orch" 'TestDriveRecordsTheIntentBeforeAskingTheExecutor' - \
	"$call" 'if err := d.append(ctx, contracts.KindToolInvoked, inv); err != nil {' 'if err := error(nil); err != nil {' \
	"$call" 'reply, err := d.execute(ctx, op, *req)' 'reply, err := d.execute(ctx, op, *req); if aerr := d.append(ctx, contracts.KindToolInvoked, inv); aerr != nil { return aerr }'
m settled-step-re-executed "$orch" 'TestDriveReplaysASettledStep' - \
	"$call" 'case contracts.StepCompleted, contracts.StepFailed:' 'case "never":'
m statement-budget-removed "$orch" 'TestDriveRefusesPastTheStatementBudget' - \
	"$call" 'case rec.Spent.Statements >= b.MaxStatements:' 'case false:'
m db-time-budget-removed "$orch" 'TestDriveRefusesPastTheDatabaseTimeBudget' - \
	"$call" 'case rec.Spent.DBTimeMs >= b.DBTimeMs:' 'case false:'
m repair-budget-removed "$orch" 'TestDriveRefusesPastTheRepairBudget' - \
	"$call" 'case toolTable[tc.Tool].repairBound && rec.Spent.Repairs > b.MaxRepairs:' 'case false:'
m repair-budget-off-by-one "$orch" 'TestDriveRefusesPastTheRepairBudget' - \
	"$call" 'case toolTable[tc.Tool].repairBound && rec.Spent.Repairs > b.MaxRepairs:' 'case toolTable[tc.Tool].repairBound && rec.Spent.Repairs >= b.MaxRepairs:'
m repair-budget-refuses-schema-reads "$orch" 'TestDriveRefusesPastTheRepairBudget' - \
	"$call" 'case toolTable[tc.Tool].repairBound && rec.Spent.Repairs > b.MaxRepairs:' 'case rec.Spent.Repairs > b.MaxRepairs:'
m repairs-left-off-by-one "$orch" 'TestDriveRefusesPastTheRepairBudget' - \
	"$call" 'left := b.MaxRepairs - rec.Spent.Repairs' 'left := b.MaxRepairs - (rec.Spent.Repairs + 1)'
m no-responders-indeterminate "$orch" 'TestDriveFailsExecutorUnavailableWhenNobodyServes' - \
	"$call" 'if errors.As(err, &ee) {' 'if false && errors.As(err, &ee) {'
m no-responders-not-absent-on-nats "$orch" 'TestExecWithoutRespondersIsAbsent' - \
	"$drive" 'return reply, &executorError{err: err}' 'return reply, fmt.Errorf("%w: %w", errNoReply, err)'
m lease-never-renewed "$orch" 'TestDriveRenewsItsLeaseAndReleasesIt' - \
	services/orchestrator/leases.go 'return l.kv.Update(ctx, runID, l.value(), rev)' 'return rev, nil'
m lease-release-misses-unseen-renewal "$orch" 'TestReleaseDropsOurLeaseWhateverRevisionWeSaw' - \
	services/orchestrator/leases.go 'if err != nil || e.Revision() <= rev {' 'if true || err != nil || e.Revision() <= rev {'
m lease-release-takes-anyones "$orch" 'TestReleaseDropsOurLeaseWhateverRevisionWeSaw' - \
	services/orchestrator/leases.go 'v.Owner != l.owner {' 'false {'
m busy-not-retried "$orch" 'TestDriveRetriesABusyExecutorAtNoCost' - \
	"$call" 'busy := err == nil &&' 'busy := false && err == nil &&'
m busy-costs-statement-and-repair "$orch" 'TestDriveBusyPastTheGraceCostsNothing' - \
	pkg/ledger/fold.go 'r.Spent.Statements--' 'r.Spent.Repairs++'
m compare-and-append-removed ./pkg/ledger/ 'TestConcurrentAppendersExactlyOneWinsEachPosition' - \
	pkg/ledger/ledger.go 'jetstream.WithExpectLastSequencePerSubject(after),' ''
m verdict-empty-without-citations ./pkg/verdict/ 'TestVerify' - \
	pkg/verdict/verdict.go 'if cited > 0 && cited == empty {' 'if cited == empty {'
m verdict-unresolved-counted-empty ./pkg/verdict/ 'TestVerify' - \
	pkg/verdict/verdict.go $'if !produced.Resolves(ref) {\n\t\t\t\tcontinue' $'if !produced.Resolves(ref) {\n\t\t\t\tcited++\n\t\t\t\tempty++\n\t\t\t\tcontinue'

# Issue 7: the guard, the fence and the engines' read-only layers.
m shape-bound-removed ./pkg/guard/ 'TestCheckShapeLimits|TestShapeRefusalNamesTheLimit|TestDeepInputsNeverCrash' - \
	pkg/guard/shape.go 'case sh.Nesting > MaxNesting:' 'case false:'
m shape-check-skipped-by-postgres ./pkg/guard/postgres/ 'TestHostileCorpus' - \
	pkg/guard/postgres/reader.go 'if ref := guard.CheckShape(sql, guard.LexPostgres); ref != nil {' 'if ref := guard.CheckShape(sql, guard.LexPostgres); false && ref != nil {'
m shape-check-skipped-by-sqlite ./pkg/guard/sqlite/ 'TestHostileCorpus|TestStatementShape' - \
	pkg/guard/sqlite/reader.go 'if ref := guard.CheckShape(sql, guard.LexSQLite); ref != nil {' 'if ref := guard.CheckShape(sql, guard.LexSQLite); false && ref != nil {'
m attribute-notation-unchecked ./pkg/guard/postgres/ 'TestAttributeNotation|TestHostileCorpus' - \
	pkg/guard/postgres/walk.go 'func (w *walker) attribute(name string) {' $'func (w *walker) attribute(name string) {\n\tif true {\n\t\treturn\n\t}'
m outer-join-limits-ignored ./pkg/guard/ 'TestOuterJoinBound' - \
	pkg/guard/names.go 'if b.Limits == nil {' 'if true || b.Limits == nil {'
m system-tables-under-star ./pkg/guard/ 'TestSystemTablesOnlyWhenNamed' - \
	pkg/guard/names.go 'if p.all || p.schema.wild() {' 'if false && (p.all || p.schema.wild()) {'
m readable-prefix-match ./pkg/guard/ 'TestReadablePatternsFollowEngineNames|TestApplyReadableAndCatalog' - \
	pkg/guard/names.go 'return canon(n.text) == canon(s)' 'return strings.HasPrefix(canon(s), canon(n.text))'
m fence-nfkd-removed ./pkg/fence/ '.' - \
	pkg/fence/fence.go 'if d := norm.NFKD.Properties(k.buf).Decomposition(); d != nil {' 'if d := norm.NFKD.Properties(k.buf).Decomposition(); false && d != nil {'
m fence-wrap-removed ./services/sonde/e2e/ 'TestResumeAfterOrchestratorStopsMidStep' - \
	pkg/exectext/rows.go 'b.WriteString(fence.Wrap("rows read from connection "+connID, head+strings.Join(kept, "")))' 'b.WriteString(head+strings.Join(kept, ""))' \
	pkg/grounding/pack.go 'b.WriteString(fence.Wrap("schema inventory of connection "+o.Label, body.String()))' 'b.WriteString(body.String())' \
	pkg/grounding/pack.go 'b.WriteString(fence.Wrap("foreign keys of connection "+o.Label, edges.String()))' 'b.WriteString(edges.String() + fence.Removed[:0])'
m sqlite-symlink-allowed ./services/executor/internal/sqlite/ 'TestSymlinkRefused' - \
	services/executor/internal/sqlite/engine.go 'if fi.Mode()&os.ModeSymlink != 0 {' 'if false && fi.Mode()&os.ModeSymlink != 0 {'
m sqlite-authorizer-allows-writes ./services/executor/internal/sqlite/ 'TestAuthorizerAloneRefusesWrites|TestEngineConnectionsCarryAuthorizer' - \
	pkg/guard/sqlite/authorizer.go 'what := describeAction(action, arg1, arg2)' $'if true {\n\t\t\treturn sqlite.AuthorizerOK\n\t\t}\n\t\twhat := describeAction(action, arg1, arg2)'
m duckdb-access-mode-writable ./services/executor/internal/duckdb/ 'TestInstanceSettingsAlone' - \
	services/executor/internal/duckdb/engine.go '{"access_mode", "READ_ONLY"},' '{"access_mode", "AUTOMATIC"},'
m postgres-begin-read-write ./services/executor/internal/postgres/ 'TestReadOnlyTransactionAlone' pg \
	services/executor/internal/postgres/run.go 'control(ctx, pc, "BEGIN READ ONLY")' 'control(ctx, pc, "BEGIN")'
# Both layers of the wire bound: the connection's (the operation memory) and
# each read's (narrowed to the profile's bytes).
m postgres-max-body-len-removed ./services/executor/internal/postgres/ 'TestLargeValueBoundedWhileReading' pg \
	services/executor/internal/postgres/run.go 'pc.Frontend().SetMaxBodyLen(bodyLimit(e.opMem, req.Limits))' '_ = bodyLimit(e.opMem, req.Limits)' \
	services/executor/internal/postgres/engine.go 'cc.MaxProtocolMessageBodyLen = int(min(operationMemory(o), math.MaxInt32))' 'cc.MaxProtocolMessageBodyLen = 0 * int(min(operationMemory(o), math.MaxInt32))'
m postgres-read-body-len-widened ./services/executor/internal/postgres/ 'TestEachReadNarrowsTheWireBound' pg \
	services/executor/internal/postgres/run.go 'pc.Frontend().SetMaxBodyLen(bodyLimit(e.opMem, req.Limits))' 'pc.Frontend().SetMaxBodyLen(int(e.opMem))'

# Issue 10: what the model is told about its budget is true.
m reserve-ignores-slow-turns "$orch" 'TestReportReserveGrowsWithSlowTurns' - \
	"$drive" 'ms := max(b.ReportReserveMs, 2*slowest)' 'ms := b.ReportReserveMs + 0*slowest'
m last-turn-said-twice "$orch" 'TestTurnNoticesAreTrue' - \
	"$drive" 'case left <= 1:' 'case left <= b.ReportReserveTurns:'
m status-line-dropped "$orch" 'TestEveryToolResultEndsWithTheRunsStatus' - \
	"$call" 'content += d.status(tc.Turn, false, stepID != "" && !contracts.RefusalRan(code))' 'content += ""'
m fence-mark-unnamed "$orch" 'TestRulesSayTheTrueLimitsAndTheEngine' - \
	services/orchestrator/transcript.go 'msgs = append(msgs, contracts.Message{Role: contracts.RoleTool, ToolCallID: fence.Neutralise(c.CallID), Content: fence.ResealMarked(content, mark)})' 'msgs = append(msgs, contracts.Message{Role: contracts.RoleTool, ToolCallID: fence.Neutralise(c.CallID), Content: fence.Reseal(content)})' \
	services/orchestrator/transcript.go '+ markRule(mark)},' '+ markRule("")},'
m agent-run-without-tools-supported ./pkg/policy/ 'TestEveryWorkflowIsAWholeRow|TestAgentRunNeedsTools' - \
	pkg/policy/policy.go 'return len(r.AgentTools) > 0' 'return len(r.AgentTools) >= 0'
# Issue 11: a plan is never a run.
m postgres-plan-analyzes ./services/executor/internal/postgres/ 'TestPlanNeverRuns' pg \
	services/executor/internal/postgres/plan.go 'const explainPrefix = "EXPLAIN (FORMAT JSON) "' 'const explainPrefix = "EXPLAIN (ANALYZE, FORMAT JSON) "'
m sqlite-plan-runs ./services/executor/internal/sqlite/ 'TestPlanNeverRuns' - \
	services/executor/internal/sqlite/plan.go 'const explainPrefix = "EXPLAIN QUERY PLAN "' 'const explainPrefix = ""'
m duckdb-plan-analyzes ./services/executor/internal/duckdb/ 'TestPlanDoesNotExecute' - \
	services/executor/internal/duckdb/plan.go 'const explainPrefix = "EXPLAIN (FORMAT JSON)\n"' 'const explainPrefix = "EXPLAIN ANALYZE "'
# Issue 11: a hypothetical index (hypopg) outlives no call, and its table is
# held to the readable patterns.
m hypothetical-index-not-reset ./services/executor/internal/postgres/ 'TestPlanHypotheticalIndex' pg \
	services/executor/internal/postgres/hypothetical.go 'return control(ctx, pc, "SELECT "+ns+".hypopg_reset()")' 'return nil'
m hypothetical-index-table-unguarded ./services/executor/internal/postgres/ 'TestPlanHypotheticalHostile' pg \
	services/executor/internal/postgres/hypothetical.go 'ref = guard.Apply(ix.Probe, p)' 'ref = guard.Apply(ix.Probe, guard.Policy{})'

# Issue 11: the specialist workflows' tools. A presented answer is one data
# read, once, its chart checked against the live rows; a comparison joins
# two plans of the run.
anst=services/orchestrator/tool_present_answer.go
cmpt=services/orchestrator/tool_compare_plans.go
rect=services/orchestrator/tool_recommend_change.go
m answer-not-a-data-read-accepted "$orch" 'TestPresentAnswerRefusesEachWrongAnswer|TestPresentAnswerRefusesAProfile' - \
	"$anst" 'case st.Tool != policy.ToolRunReadQuery:' 'case false:'
m answer-profile-accepted "$orch" 'TestPresentAnswerRefusesAProfile' - \
	"$anst" 'case st.Tool != policy.ToolRunReadQuery:' 'case st.Tool == policy.ToolInspectPlan:'
m answer-recorded-twice "$orch" 'TestPresentAnswerRefusesEachWrongAnswer' - \
	"$anst" 'if rec := d.record(); rec.Answer != nil {' 'if rec := d.record(); false && rec.Answer != nil {'
# The one chart decision (pkg/chart): the server refuses what the rows
# cannot carry, names each point it does not draw, and records the decision
# with the answer; the CLI draws the recorded decision, not its own.
m chart-numeric-unchecked ./pkg/chart/ 'TestDecideRefusesWhatTheRowsCannotCarry' - \
	pkg/chart/chart.go 'if !numericColumn(art.Data, cols[n]) {' 'if false {'
m chart-numeric-threshold-lowered ./pkg/chart/ 'TestChartNumericThreshold' - \
	pkg/chart/chart.go 'return present > 0 && numeric*5 > present*4' 'return present > 0 && numeric > 0'
m chart-one-row-accepted ./pkg/chart/ 'TestDecideRefusesWhatTheRowsCannotCarry' - \
	pkg/chart/chart.go 'if len(art.Data) < 2 {' 'if len(art.Data) < 1 {'
m chart-null-point-drawn ./pkg/chart/ 'TestALineWithOneNullIsDrawnWithoutIt' - \
	pkg/chart/chart.go $'\tif v == nil {\n\t\treturn contracts.ChartDropNull, true\n\t}\n' ''
m chart-decision-not-recorded "$orch" 'TestPresentAnswerRefusesEachWrongAnswer' - \
	"$anst" 'decided = &dec' '_ = dec'
m cli-chart-decides-again ./services/sonde/internal/render/ 'TestPrintWorkflowAnswer' - \
	services/sonde/internal/render/chart.go 'if decided == nil {' 'if true {'
m compare-plans-accepts-a-read "$orch" 'TestComparePlansJoinsTheLedger' - \
	"$cmpt" 'if st.Tool != policy.ToolInspectPlan || st.Status != contracts.StepCompleted || st.Artifact == nil {' 'if st.Status != contracts.StepCompleted || st.Artifact == nil {' \
	"$cmpt" 'if !ok || ps.step.Plan == nil {' 'if !ok {'
m compare-plans-released-rows "$orch" 'TestComparePlansJoinsTheLedger' - \
	"$cmpt" 'if !d.held(ctx, id) {' 'if false {'
m recommendation-unresolved-evidence "$orch" 'TestRecommendChangeIsRecordedNeverRun' - \
	"$rect" 'if len(unresolved) > 0 {' 'if false {'
m handover-without-autoexecute "$orch" 'TestPresentAnswerRefusesEachWrongAnswer' - \
	"$anst" 'if d.header.AutoExecute {' 'if true {'
m gate-evidence-ignores-fingerprint "$orch" 'TestAutoExecuteGateReadsTheLedger' - \
	"$anst" 'if st.Status != contracts.StepCompleted || st.Fingerprint == "" || st.Fingerprint != answer.Fingerprint {' 'if st.Status != contracts.StepCompleted {'
m operations-row-packs-columns "$orch" 'TestOperationsRunIsPackedAsNamesAndIndexes' - \
	pkg/policy/policy.go 'NamesAndIndexes: true,' 'NamesAndIndexes: false,'
m operations-packing-names-columns ./pkg/grounding/ 'TestOperationsPackingIsNamesAndIndexes' - \
	pkg/grounding/pack.go 'order, line = inventoryOrder(len(inv.Relations)), IndexLine' 'order, line = inventoryOrder(len(inv.Relations)), Line'

# Issue 11: the four specialist verdict rules.
vw=pkg/verdict/workflows.go
m verdict-qo-plans-not-exempt ./pkg/verdict/ 'TestSpecialistVerdicts' - \
	"$vw" 'v := baseline(RuleQueryOptimization, entries, cancelled, produced.isPlan)' 'v := baseline(RuleQueryOptimization, entries, cancelled, nil)'
m verdict-qo-no-comparison-answers ./pkg/verdict/ 'TestSpecialistVerdicts' - \
	"$vw" 'v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, UnmetNoPlanComparison)' '_ = UnmetNoPlanComparison'
m verdict-qo-index-without-plan ./pkg/verdict/ 'TestSpecialistVerdicts' - \
	"$vw" 'cites = cites || ref.Source == contracts.EvidenceArtifact && produced.isPlan(ref.CorrelationID)' 'cites = cites || ref.Source == contracts.EvidenceArtifact && produced.Resolves(ref)'
m verdict-da-no-profile-answers ./pkg/verdict/ 'TestSpecialistVerdicts' - \
	"$vw" 'if v.Outcome == contracts.VerdictAnswered && !hasKind(entries, contracts.KindTableProfiled) {' 'if false {'
m verdict-ops-snapshot-is-a-reading ./pkg/verdict/ 'TestSpecialistVerdicts' - \
	"$vw" 'ref.CorrelationID != produced.Snapshot && produced.Resolves(ref)' 'produced.Resolves(ref)'
m verdict-ops-unproduced-is-a-reading ./pkg/verdict/ 'TestSpecialistVerdicts' - \
	"$vw" 'ref.CorrelationID != produced.Snapshot && produced.Resolves(ref)' 'ref.CorrelationID != produced.Snapshot'
m verdict-an-no-answer ./pkg/verdict/ 'TestSpecialistVerdicts' - \
	"$vw" 'if answer == "" {' 'if false {'
m verdict-an-answer-uncited ./pkg/verdict/ 'TestSpecialistVerdicts' - \
	"$vw" 'if ref.Source == contracts.EvidenceArtifact && ref.CorrelationID == answer {' 'if ref.Source == contracts.EvidenceArtifact {'

# Issue 11: the auto-execute gate fails closed on each of its three
# conditions; the handover route replays only what the gate passed, with
# the run's statement, under agent-handover.
hg=pkg/handover/handover.go
m gate-executed-unchecked ./pkg/handover/ 'TestGateEightCombinations' - \
	"$hg" 'if !e.Executed {' 'if false {'
m gate-plan-unchecked ./pkg/handover/ 'TestGateEightCombinations' - \
	"$hg" 'if reason, fix := planRisk(e.Engine, e.Plan); reason != "" {' 'if reason, fix := planRisk(e.Engine, e.Plan); false && reason != "" {'
m gate-elapsed-unchecked ./pkg/handover/ 'TestGateEightCombinations|TestGateBoundaries' - \
	"$hg" 'case e.ElapsedMs > MaxElapsedMs:' 'case false:'
m gate-no-plan-passes ./pkg/handover/ 'TestGateRiskyPlans' - \
	"$hg" 'return "this run read no plan of this statement", inspectFix' 'return "", ""'
m gate-unweighed-engine-passes ./pkg/handover/ 'TestGateRiskyPlans' - \
	"$hg" 'case !weighed(engine):' 'case false:'
m gate-plan-cost-unchecked ./pkg/handover/ 'TestGateRiskyPlans|TestGateBoundaries' - \
	"$hg" 'case *p.Cost > MaxPlanCost:' 'case false:'
gh=services/gateway/handover.go
m handover-replays-unpassed-answer ./services/gateway/ 'TestHandoverRefusals' - \
	"$gh" 'case ans.Handover != contracts.HandoverAutoExecuted:' 'case false:'
m handover-takes-a-body ./services/gateway/ 'TestHandoverRefusals' - \
	"$gh" 'if err := refuseBody(c.Request()); err != nil {' 'if err := refuseBody(c.Request()); false && err != nil {'
m handover-sql-from-request ./services/gateway/ 'TestHandoverRequest' - \
	"$gh" 'SQL: ans.SQL, TimeoutMs: handoverTimeoutMs}' 'SQL: c.QueryParam("sql"), TimeoutMs: handoverTimeoutMs}'
m handover-route-profile ./services/gateway/ 'TestHandoverRequest' - \
	"$gh" 'Profile: contracts.ProfileAgentHandover,' 'Profile: contracts.ProfileInspect,'
m handover-profile-rows-widened ./services/executor/ 'TestHandoverProfile$' - \
	services/executor/profile.go 'rows: 500, maxRows: 500,' 'rows: 5000, maxRows: 5000,'
m handover-profile-truncates ./services/executor/ 'TestHandoverProfile$' - \
	services/executor/profile.go 'bytes: 64 << 20, maxBytes: 64 << 20,' 'bytes: 64 << 20, maxBytes: 64 << 20, truncate: true,'

# Issue 11: a profile counts, never reads a value, and never resolves or
# names a table the readable patterns hide.
ep=services/executor/internal/engine/profile.go
m profile-reads-a-value ./services/executor/internal/engine/ 'TestComposedProfileSelectsCountsOnly' - \
	"$ep" 's.present = add(d.Count+"("+col+")", "p", i)' $'s.present = add(d.Count+"("+col+")", "p", i)\n\t\tadd("max("+col+")", "v", i)'
m profile-name-unquoted ./services/executor/internal/postgres/ 'TestProfileComposedIsOneSelect' - \
	"$ep" 'return `"` + strings.ReplaceAll(ident, `"`, `""`) + `"`' 'return `"` + ident + `"`'
m profile-large-table-unsampled ./services/executor/ 'TestProfileFindingsAndHostileSQLite' - \
	services/executor/internal/sqlite/profile.go 'sample = engine.ProfileSampleRows' 'sample = 0'
m profile-unreadable-resolves-sqlite ./services/executor/ 'TestProfileFindingsAndHostileSQLite' - \
	services/executor/internal/sqlite/inventory.go 'if !e.policy.CanRead(guard.NamesASCIIFold, guard.Table{Schema: DefaultSchema, Name: name}) {' 'if false {'
m profile-unprofilable-names-hidden-sqlite ./services/executor/internal/sqlite/ 'TestProfileSQLite' - \
	services/executor/internal/sqlite/profile.go 'if !e.policy.CanRead(guard.NamesASCIIFold, guard.Table{Schema: DefaultSchema, Name: table}) {' 'if false {'
m profile-unprofilable-names-hidden-postgres ./services/executor/internal/postgres/ 'TestUnprofilableNamesOnlyReadableSequences' pg \
	services/executor/internal/postgres/profile.go $'if !e.readable(schema, name) {\n\t\t\tcat.Unreadable++' $'if false {\n\t\t\tcat.Unreadable++'

# Issue 11: an operational reading never names a relation the readable
# patterns hide, is refused past its bytes rather than cut short, and its
# profile serves readings only.
so=services/executor/internal/sqlite/operations.go
po=services/executor/internal/postgres/operations.go
m operations-table-stats-names-hidden-sqlite ./services/executor/internal/sqlite/ 'TestOperationsHiddenAndHostileNames' - \
	"$so" $'if !e.tableReadable(o.table) {\n\t\t\tif o.typ == "table" {' $'if false {\n\t\t\tif o.typ == "table" {'
m operations-index-stats-names-hidden-sqlite ./services/executor/internal/sqlite/ 'TestOperationsHiddenAndHostileNames' - \
	"$so" $'if !e.tableReadable(o.table) {\n\t\t\tr.Hidden++\n\t\t\tcontinue\n\t\t}\n\t\tidx = append(idx, o)' $'if false {\n\t\t\tr.Hidden++\n\t\t\tcontinue\n\t\t}\n\t\tidx = append(idx, o)'
m operations-table-stats-names-hidden-postgres ./services/executor/internal/postgres/ 'TestOperationsBlockedSessionAndHidden' pg \
	"$po" 'engine.RelationRows(statement(TableStatsSQL, true), readableBy, nil,' 'engine.RelationRows(statement(TableStatsSQL, true), func(pgReading) func(string, string) bool { return func(string, string) bool { return true } }, nil,'
m operations-index-stats-names-hidden-postgres ./services/executor/internal/postgres/ 'TestOperationsBlockedSessionAndHidden' pg \
	"$po" 'engine.RelationRows(statement(IndexStatsSQL, true), readableBy, nil,' 'engine.RelationRows(statement(IndexStatsSQL, true), func(pgReading) func(string, string) bool { return func(string, string) bool { return true } }, nil,'
m operations-table-stats-names-hidden-duckdb ./services/executor/internal/duckdb/ 'TestOperationsHiddenAndHostileNames' - \
	services/executor/internal/duckdb/operations.go 'engine.RelationRows(bySchema(OpsTablesSQL), readableBy,' 'engine.RelationRows(bySchema(OpsTablesSQL), func(duckReading) func(string, string) bool { return func(string, string) bool { return true } },'
m operations-readings-walk-shows-hidden ./services/executor/internal/mssql/ 'TestOperationsProjection' - \
	services/executor/internal/engine/operations.go $'if !readable(s, n) {\n\t\t\tr.Hidden++' $'if _ = n; false {\n\t\t\tr.Hidden++'
m operations-readings-walk-shows-statements ./services/executor/internal/mssql/ 'TestOperationsProjection' - \
	services/executor/internal/engine/operations.go 'if q, ok := row[col].(string); ok && NamesAny(q, hidden) {' 'if q, ok := row[col].(string); ok && len(q) < 0 {'
m operations-kind-refused-unnamed ./services/executor/internal/sqlite/ 'TestOperationsChinook' - \
	services/executor/internal/engine/operations.go $'\treason, ok := t.Refused[kind]\n\tif !ok {' $'\treason, ok := "", true\n\tif !ok {'
m operations-over-budget-truncates ./services/executor/ 'TestOperationsRefusedPastItsBytes' - \
	services/executor/operations.go 'rowset.Limits{MaxRows: limit, MaxBytes: ereq.Limits.MaxBytes})' 'rowset.Limits{MaxRows: limit, MaxBytes: ereq.Limits.MaxBytes, Truncate: true})'
m exec-unserved-op-dispatched ./services/executor/ 'TestExecRequestProblems' - \
	services/executor/executor.go $'served, ok := servedOps[op]\n\tif !ok {' $'served, ok := servedOps[op]\n\tif _ = ok; false {'
m operations-profile-serves-reads ./services/executor/ 'TestOperationsProfileAndCapability' - \
	services/executor/executor.go 'case req.Profile == contracts.ProfileAgentOperations && op != contracts.OpOperations:' 'case false:'

# Issue 9: what the inventory names, what a planning run is given, which
# capture a run may reuse.
m inventory-readable-sqlite ./services/executor/ 'TestReadablePatternsHoldInTheInventory' - \
	services/executor/internal/sqlite/inventory.go 'if !e.policy.CanRead(guard.NamesASCIIFold, guard.Table{Schema: DefaultSchema, Name: name}) {' 'if false {'
m inventory-readable-postgres ./services/executor/internal/postgres/ 'TestInventoryReadableExactNames' pg \
	services/executor/internal/postgres/inventory.go 'return p.CanRead(guard.NamesExact, guard.Table{Schema: schema, Name: name, System: pgguard.SystemSchema(schema)})' 'return true || p.CanRead(guard.NamesExact, guard.Table{Schema: schema, Name: name, System: pgguard.SystemSchema(schema)})'
m inventory-readable-duckdb ./services/executor/internal/duckdb/ 'TestRelations' - \
	services/executor/internal/duckdb/catalog.go 'return e.policy.CanRead(guard.NamesFold, guard.Table{Schema: schema, Name: name})' 'return true'
m inventory-foreign-key-to-hidden ./services/executor/ 'TestReadablePatternsHoldInTheInventory' - \
	services/executor/catalog.go 'if l.readable[l.key(fk.RefSchema, fk.RefName)] {' 'if true {'
m planning-given-tools ./services/orchestrator/ 'TestPlanningRunIsToolless' - \
	services/orchestrator/planning.go 'd.nextTurn(ctx, []contracts.ToolSpec{}, noNotice) // toolless by construction' 'd.nextTurn(ctx, specsFor([]string{"run_read_query"}), noNotice)'
m capture-reused-across-databases ./services/orchestrator/ 'TestCaptureIsReusedForTheSameDatabaseOnly' - \
	services/orchestrator/capture.go 'if h.key == k && now.Sub(h.at) < c.maxAge {' 'if h.key.connection == k.connection && now.Sub(h.at) < c.maxAge {'

# More mutants, one file per area: scripts/mutants.d/*.sh, each a list of m
# lines like the ones above (sourced in name order).
for f in "$root"/scripts/mutants.d/*.sh; do
	[[ -e "$f" ]] && source "$f"
done

# ---------------------------------------------------------------------------

if [[ -n "${MUTANTS_LIST:-}" ]]; then
	for i in "${!names[@]}"; do printf '%-36s %s -run %s\n' "${names[$i]}" "${pkgs[$i]}" "${runs[$i]}"; done
	exit 0
fi

selected=()
if (($#)); then
	for want in "$@"; do
		found=0
		for i in "${!names[@]}"; do [[ "${names[$i]}" == "$want" ]] && selected+=("$i") && found=1; done
		((found)) || { echo "mutants: no mutant named $want" >&2; exit 2; }
	done
else
	selected=("${!names[@]}")
fi

need_pg=0
for i in "${selected[@]}"; do [[ "${needs[$i]}" == pg ]] && need_pg=1; done
if ((need_pg)) && [[ -z "${SONDE_TEST_PG_URL:-}" ]]; then
	if pg="$("$root/scripts/postgres.sh" start)"; then
		eval "$pg"
		export SONDE_TEST_PG_URL
		trap '"$root/scripts/postgres.sh" stop "$SONDE_TEST_PG_DIR"' EXIT
	else
		echo "mutants: no PostgreSQL; the PostgreSQL mutants will not run" >&2
	fi
fi

# The scratch copy: the working tree as it is, without .git and build output.
echo "mutants: copying the working tree to $scratch" >&2
rm -rf "$scratch"
mkdir -p "$scratch/logs"
for ((w = 0; w < jobs; w++)); do
	mkdir -p "$scratch/tree$w" "$scratch/pristine$w"
	tar -C "$root" --exclude=./.git --exclude=./bin --exclude=./.sonde-demo -cf - . | tar -C "$scratch/tree$w" -xf -
done
if [[ -d "$root/../shared/datasets" ]]; then
	mkdir -p "$scratch/shared"
	cp -R "$root/../shared/datasets" "$scratch/shared/"
fi

decode() { printf '%s' "$1" | base64 -d; }

# The worker's own tree and pristine copies (set per worker below).
tree="$scratch/tree0" pristine="$scratch/pristine0"

# apply I: applies mutant I's replacements; returns 1 (and says why) when one is stale.
apply() {
	local p f o n content rest
	for p in ${patches[$1]}; do
		f="$(decode "${p%%:*}")"
		p="${p#*:}"
		o="$(decode "${p%%:*}")"
		n="$(decode "${p#*:}")"
		if [[ ! -f "$pristine/$f" ]]; then
			mkdir -p "$(dirname "$pristine/$f")"
			cp "$tree/$f" "$pristine/$f" 2>/dev/null || { echo "file $f is missing"; return 1; }
		fi
		content="$(cat "$tree/$f"; printf x)"
		content="${content%x}"
		rest="${content#*"$o"}"
		if [[ "$rest" == "$content" ]]; then
			echo "stale: $f no longer holds: $o"
			return 1
		fi
		if [[ "$rest" == *"$o"* ]]; then
			echo "stale: $f holds more than once: $o"
			return 1
		fi
		printf '%s' "${content/"$o"/"$n"}" >"$tree/$f"
	done
}

# restore I: puts every file mutant I touched back as it was copied.
restore() {
	local p f
	for p in ${patches[$1]}; do
		f="$(decode "${p%%:*}")"
		[[ -f "$pristine/$f" ]] && cp "$pristine/$f" "$tree/$f"
	done
	return 0
}

# focus PKG RUN LOG: runs the focused tests; prints pass, fail, build, none
# (no test matched) or skip (a matched test skipped: it caught nothing).
focus() {
	(cd "$tree" && "$GO" test -count=1 -v -vet=off "${build_flags[@]}" -timeout "$per_test_timeout" -run "$2" "$1") >"$3" 2>&1
	local rc=$?
	if grep -qE '\[(build|setup) failed\]|^# ' "$3"; then
		echo build
	elif ((rc == 0)); then
		if grep -q 'no tests to run' "$3"; then
			echo none
		elif grep -qE '^[[:space:]]*--- SKIP' "$3"; then
			echo skip
		else
			echo pass
		fi
	else
		echo fail
	fi
}

start=$SECONDS
failed=0 caught=0 total=0
# One baseline per package, over every focused test of the selected mutants.
declare -A baseline=() together=()
for i in "${selected[@]}"; do
	[[ "${needs[$i]}" == pg && -z "${SONDE_TEST_PG_URL:-}" ]] && continue
	together[${pkgs[$i]}]+="${together[${pkgs[$i]}]:+|}${runs[$i]}"
done
# check_baseline PKG: sets baseline[PKG] to the result of PKG's focused
# tests run unmutated. The first worker to need it runs it, in its own tree
# (which warms that tree's build cache for the mutants that follow), under
# the package's lock; a worker that needs it meanwhile waits for that result
# rather than run the same tests again.
check_baseline() {
	local pkg=$1 key log
	key="$(printf '%s' "$pkg" | tr -c 'a-zA-Z0-9' _)"
	log="$scratch/logs/baseline-$key.log"
	baseline[$pkg]="$(
		exec 9>"$scratch/queue/baseline-$key.lock"
		flock 9
		if [[ ! -s "$scratch/queue/baseline-$key" ]]; then
			focus "$pkg" "${together[$pkg]}" "$log" >"$scratch/queue/baseline-$key"
		fi
		cat "$scratch/queue/baseline-$key"
	)"
	if [[ "${baseline[$pkg]}" != pass && ! -e "$scratch/queue/baseline-$key.said" ]]; then
		: >"$scratch/queue/baseline-$key.said"
		echo "mutants: the unmutated tests of $pkg do not pass (${baseline[$pkg]}): see $log" >&2
	fi
}
# baseline_elsewhere PKG: true while another worker is running PKG's
# baseline (its lock is held and no result is written yet).
baseline_elsewhere() {
	local key
	key="$(printf '%s' "$1" | tr -c 'a-zA-Z0-9' _)"
	[[ -s "$scratch/queue/baseline-$key" ]] && return 1
	(
		exec 9>"$scratch/queue/baseline-$key.lock"
		flock -n 9
	) && return 1
	return 0
}
# run_one I: prints the mutant's result line and its outcome word. A
# baseline another worker is still running is waited for only after the
# mutant ran, so no tree sits idle while it runs; the mutant's result
# counts only if the baseline then passes.
run_one() {
	local i=$1 name="${names[$1]}" pkg="${pkgs[$1]}" run="${runs[$1]}" why result
	if [[ "${needs[$i]}" == pg && -z "${SONDE_TEST_PG_URL:-}" ]]; then
		printf '%-36s %s\n' "$name" "NOT RUN (no PostgreSQL)"
		return
	fi
	if [[ -n "${baseline[$pkg]:-}" && "${baseline[$pkg]}" != pass ]]; then
		printf '%-36s %s\n' "$name" "NOT RUN: the unmutated $pkg tests ${baseline[$pkg]}"
		return
	fi
	if ! why="$(apply "$i")"; then
		restore "$i"
		printf '%-36s %s\n' "$name" "STALE: $why"
		return
	fi
	result="$(focus "$pkg" "$run" "$scratch/logs/$name.log")"
	restore "$i"
	[[ -n "${baseline[$pkg]:-}" ]] || check_baseline "$pkg"
	if [[ "${baseline[$pkg]}" != pass ]]; then
		printf '%-36s %s\n' "$name" "NOT RUN: the unmutated $pkg tests ${baseline[$pkg]}"
		return
	fi
	case "$result" in
	fail) printf '%-36s %s\n' "$name" "caught" ;;
	pass) printf '%-36s %s\n' "$name" "SURVIVED: $pkg -run $run" ;;
	*) printf '%-36s %s\n' "$name" "INVALID ($result): see $scratch/logs/$name.log" ;;
	esac
}

# The mutants form one queue, the packages that cost the most first and
# each package's mutants together; every worker takes the next mutant as
# soon as it is free, so a package whose tests wait (leases, timeouts) does
# not leave one worker running it alone while the other sits idle, and the
# last mutants to run are short ones. A package's cost is its mutants
# times what one costs: an end-to-end mutant links the whole stack, about
# six times what a mutant of one service's package costs.
declare -A count=()
for i in "${selected[@]}"; do count[${pkgs[$i]}]=$((${count[${pkgs[$i]}]:-0} + 1)); done
cost() { if [[ "$1" == */e2e/ ]]; then echo $((6 * ${count[$1]})); else echo "${count[$1]}"; fi; }
queue=()
while read -r _ pkg; do
	for i in "${selected[@]}"; do [[ "${pkgs[$i]}" == "$pkg" ]] && queue+=("$i"); done
done < <(for pkg in "${!count[@]}"; do echo "$(cost "$pkg") $pkg"; done | sort -k1,1rn -k2,2)
mkdir -p "$scratch/queue"
echo 0 >"$scratch/queue/next"
# take: prints the queue position of the next mutant to run, or nothing
# when the queue is done.
take() {
	(
		exec 9>"$scratch/queue/lock"
		flock 9
		local n
		n="$(cat "$scratch/queue/next")"
		((n < ${#queue[@]})) || exit 0
		echo $((n + 1)) >"$scratch/queue/next"
		echo "$n"
	)
}
pids=()
for ((w = 0; w < jobs; w++)); do
	(
		tree="$scratch/tree$w" pristine="$scratch/pristine$w"
		while n="$(take)" && [[ -n "$n" ]]; do
			i="${queue[$n]}"
			pkg="${pkgs[$i]}"
			if [[ -z "${baseline[$pkg]:-}" ]]; then
				if [[ -z "${together[$pkg]:-}" ]]; then
					baseline[$pkg]=pass
				elif ! baseline_elsewhere "$pkg"; then
					check_baseline "$pkg"
				fi
			fi
			run_one "$i"
		done
	) >"$scratch/logs/worker$w.out" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
printf '%-36s %s\n' MUTANT RESULT
results="$(cat "$scratch"/logs/worker*.out)"
printf '%s\n' "$results" | sort
total=${#selected[@]}
caught=$(printf '%s\n' "$results" | grep -c ' caught$' || true)
((caught == total)) || failed=1
echo "mutants: $caught of $total caught in $((SECONDS - start)) s"
exit "$failed"
