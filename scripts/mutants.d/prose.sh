# Issue 18 items 8 and 10: tool calls written as text, unreadable calls,
# prose answers and questions (services/orchestrator/textcalls.go, prose.go).
tcs=services/orchestrator/textcalls.go
prs=services/orchestrator/prose.go

# Item 8: a call written as text naming one of the run's tools is read as
# that call, and its entry says so; one naming no tool of the run is prose.
m text-call-not-read "$orch" 'TestTextCallsDriveTheRun' - \
	"$tcs" $'\tif len(calls) == 0 {\n\t\treturn reply\n\t}\n\td.callNotes' $'\tif true {\n\t\treturn reply\n\t}\n\td.callNotes'
m text-call-unnoted "$orch" 'TestTextCallsDriveTheRun|TestRefusedTextCallRecordsItsNote' - \
	"$tcs" 'd.callNotes[id] = c.notes' '_ = c.notes'
m text-call-of-no-run-tool-read "$orch" 'TestTextCallsAreReadInEveryForm' - \
	"$tcs" $'\t\tif tool == "" {\n\t\t\tcontinue\n\t\t}' $'\t\tif tool == "" {\n\t\t\ttool = c.name\n\t\t}'
# A cut, malformed or unparsable call is refused with a fix, never prose;
# it breaks a prose streak, and three in a row end the run.
m cut-call-called-prose "$orch" 'TestCutCallIsRefusedThenAnswered' - \
	"$prs" 'cs.Refused = unreadCall(reply, d.header.Tools)' 'cs.Refused = nil'
m unparsable-text-call-called-prose "$orch" 'TestUnreadableCallsAreRefusedNotProse' - \
	"$tcs" $'\tcase broken != nil:\n\t\treturn &contracts.Refusal{Code: refuseMalformedCall,' $'\tcase false:\n\t\treturn &contracts.Refusal{Code: refuseMalformedCall,'
m unread-call-counted-as-prose "$orch" 'TestCutCallIsRefusedThenAnswered' - \
	"$prs" $'\t\t\tif refusedCall(entries[i]) != nil {\n\t\t\t\treturn n\n\t\t\t}\n\t\t\tn++' $'\t\t\tn++'
m unread-calls-never-stop "$orch" 'TestCutCallIsRefusedThenAnswered' - \
	"$prs" 'if unreadInARow(d.entries) >= maxUnreadCalls {' 'if unreadInARow(d.entries) >= 1000 {'
m refused-call-is-the-closing ./pkg/ledger/ 'TestFoldKeepsTheQuestion' - \
	pkg/ledger/fold.go 'if strings.TrimSpace(p.Text) != "" && p.Refused == nil {' 'if strings.TrimSpace(p.Text) != "" {'

# Item 10: prose is offered a ready compose_report with the run's ids; a
# question ends the run at once, question-asked, and a question mark
# mid-text is no question; the run that continues it is shown it.
m prose-offered-no-skeleton "$orch" 'TestProseAnswerIsOfferedAReadyReport' - \
	"$prs" 'if !slices.Contains(h.Tools, policy.ToolComposeReport) {' 'if policy.ToolComposeReport != "" {'
m question-does-not-end-the-run "$orch" 'TestQuestionEndsTheRunAtOnce' - \
	"$prs" 'if q := question(reply.Text); q != "" {' 'if q := question(reply.Text); q == "never" {'
m question-without-its-shortfall "$orch" 'TestQuestionEndsTheRunAtOnce' - \
	"$prs" 'v.Unmet = append(v.Unmet, verdict.UnmetQuestion)' 'v.Unmet = append(v.Unmet, verdict.UnmetNoReport)'
m question-mark-mid-text-a-question "$orch" 'TestProseWithAQuestionMarkIsNoQuestion' - \
	"$prs" 'if strings.HasSuffix(t, "?") ||' 'if strings.Contains(t, "?") ||'
m question-not-shown-to-the-continuing-run "$orch" 'TestContinuedRunShowsTheQuestion' - \
	services/orchestrator/thread.go 'if newest.StopReason == contracts.StopQuestion && strings.TrimSpace(newest.Question) != "" {' 'if false {'
