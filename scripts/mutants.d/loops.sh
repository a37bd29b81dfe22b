# Issue 18 items 6 and 7: what the model is shown of one result is bounded
# by a share of its context window (services/orchestrator/showbudget.go, the
# executor's renderers), and loops are named, then stopped
# (services/orchestrator/loops.go).
lps=services/orchestrator/loops.go
sbg=services/orchestrator/showbudget.go
xpkg=./services/executor/
xrender=pkg/exectext/rows.go

# Item 7: a replay of a replay says once that it is one (it replays the
# step's first completion, without an earlier replay's note).
m replay-note-stacks "$orch" 'TestAReplayOfAReplayCarriesOneNote' - \
	"$lps" $'\tfor _, e := range d.entries {\n\t\tif e.Kind != contracts.KindToolCompleted {' $'\tfor i := range d.entries {\n\t\te := d.entries[len(d.entries)-1-i]\n\t\tif e.Kind != contracts.KindToolCompleted {' \
	"$lps" 'content = strings.TrimPrefix(strings.TrimPrefix(content, replayedNote), replayedTooLarge)' '_ = replayedTooLarge'
# After two identical calls or refusals the next turn's notice names the loop.
m loop-unnamed "$orch" 'TestOneFailingStatementResentIsStoppedAtTheThird|TestALoopNoticeThenAReportAnswers|TestTheSameRefusalThreeTimesEndsTheRun' - \
	"$lps" $'\tl, ok := loops(calls, calls[len(calls)-1].turn)\n\tif !ok {' $'\tl, ok := loops(calls, calls[len(calls)-1].turn)\n\tif true || !ok {'
# The third identical call ends the run (repeated-call), recorded verbatim.
m third-identical-call-answered "$orch" 'TestOneFailingStatementResentIsStoppedAtTheThird' - \
	"$lps" 'if n < loopLimit-1 {' 'if true {'
# The identity of a call is its step, not its spelling.
m loop-key-is-spelling "$orch" 'TestOneFailingStatementResentIsStoppedAtTheThird|TestCallKeyReadsTheCallNotItsSpelling' - \
	"$lps" 'return "s_" + stepKey(tool, a)' 'return "s_" + stepKey(tool, a) + args'
# The third identical refusal ends the run, before the model is asked again.
m third-identical-refusal-goes-on "$orch" 'TestTheSameRefusalThreeTimesEndsTheRun' - \
	"$lps" 'if !l.refused || l.n < loopLimit {' 'if true {'
m refusal-loop-checked-only-at-a-call "$orch" 'TestTheSameRefusalThreeTimesEndsTheRun' - \
	"$drive" $'\t\tif done, err := d.loopEnded(ctx); err != nil || done {\n\t\t\treturn err\n\t\t}\n' ''
# A refusal that says where the service stands is no loop.
m unreachable-database-is-a-loop "$orch" 'TestTheSameRefusalThreeTimesEndsTheRun' - \
	"$lps" $'\tcontracts.RefuseConnectionUnavailable: true,\n' ''
# A statement refused as too large (it ran, and was charged) is replayed.
m too-large-run-again "$orch" 'TestATooLargeResultIsReplayedNotRunAgain' - \
	"$call" 'if st.Refusal != nil && contracts.RefusalRan(st.Refusal.Code) {' 'if false {'

# Item 6: the drive sends every request its share of the model's window.
m show-unbounded "$orch" 'TestShowBytesIsAShareOfTheWindow|TestAWideResultReachesA32kModelBounded|TestAThirtyReadRunStaysWithinTheWindow' - \
	"$sbg" $'\treturn showShare(d.contextTokens(), d.header.Budget.MaxBytes)' $'\treturn 0'
m show-without-floor "$orch" 'TestShowBytesIsAShareOfTheWindow' - \
	"$sbg" 'n := max(tokens*showBytesPerToken/2/showReads, showFloor)' 'n := tokens*showBytesPerToken/2/showReads'
m show-ignores-known-window "$orch" 'TestShowBytesIsAShareOfTheWindow' - \
	"$sbg" $'\tcase d.settings.ContextTokens > 0:\n\t\treturn d.settings.ContextTokens\n' ''
# The orchestrator renders each reply within it (pkg/exectext, exercised by
# the executor's tests on real files): whole rows, the cut said, each renderer.
m render-unbounded "$xpkg" 'TestAWideResultIsShownWithinTheShowBudget|TestCutRenderingsHoldTheFence|TestPlansReadingsAndProfilesAreShownWithinTheShowBudget' - \
	"$xrender" 'if show <= 0 || len(full) <= show {' 'if true {'
m render-cut-unsaid "$xpkg" 'TestAWideResultIsShownWithinTheShowBudget|TestPlansReadingsAndProfilesAreShownWithinTheShowBudget' - \
	"$xrender" $'\tif c == nil {\n\t\treturn ""\n\t}\n\ts := fmt.Sprintf' $'\tif c == nil || true {\n\t\treturn ""\n\t}\n\ts := fmt.Sprintf'
m read-ignores-show "$xpkg" 'TestAWideResultIsShownWithinTheShowBudget' - \
	pkg/exectext/exectext.go 'return rows(req.ConnectionID, *sum, reply.Cells, show)' 'return rows(req.ConnectionID, *sum, reply.Cells, 0)'
m plan-ignores-show "$xpkg" 'TestPlansReadingsAndProfilesAreShownWithinTheShowBudget' - \
	"$xrender" $'\tsummary := body.String()\n\treturn fit(show,' $'\tsummary := body.String()\n\treturn fit(0,'
m reading-ignores-show "$xpkg" 'TestPlansReadingsAndProfilesAreShownWithinTheShowBudget' - \
	pkg/exectext/reading.go 'return fit(req.ShowBytes, rowLines(cells),' 'return fit(0, rowLines(cells),'
m profile-ignores-show "$xpkg" 'TestPlansReadingsAndProfilesAreShownWithinTheShowBudget' - \
	pkg/exectext/profile.go 'return fit(req.ShowBytes, lines,' 'return fit(0, lines,'
# Only a failure the executor raised itself is shown in its own words; an
# engine's text is fenced wherever the orchestrator renders it.
m executor-failure-unfenced "$orch" 'TestExecutorRepliesAsTheModelReadsThem' - \
	pkg/exectext/exectext.go $'\tif e.ByExecutor {\n' $'\tif true {\n'
# A schema read pages its listing, and describes several tables, within it.
m schema-page-ignores-show "$xpkg" 'TestSchemaReadsAreShownWithinTheShowBudget' - \
	services/executor/catalog.go 'pageBytes = min(pageBytes, max(req.ShowBytes/2, 256))' 'pageBytes = min(pageBytes, pageBytes)'
m schema-describes-past-show "$xpkg" 'TestSchemaReadsAreShownWithinTheShowBudget' - \
	services/executor/catalog.go 'shown := req.ShowBytes <= 0 || len(rels) == 1 || size <= req.ShowBytes/2' 'shown := true'
