# Issue 18 items 1, 4 and 5: the report's gates — a citation names only a
# result the model was shown, compose_report's own checks, and a report
# that would end the run unanswered refused once per shortfall.
rp=services/orchestrator/report.go
anst=services/orchestrator/tool_present_answer.go
sf=services/orchestrator/shortfalls.go
rect=services/orchestrator/tool_recommend_change.go

# Item 5: compose_report's own checks.
m report-without-claims-accepted "$orch" 'TestComposeReportChecksItsClaims' - \
	"$rp" 'if len(a.Claims) == 0 {' 'if len(a.Claims) < 0 {'
m claim-without-text-accepted "$orch" 'TestComposeReportChecksItsClaims' - \
	"$rp" 'if strings.TrimSpace(c.Text) == "" {' 'if strings.TrimSpace(c.Text) == "never" {'
m claim-citing-nothing-accepted "$orch" 'TestComposeReportChecksItsClaims' - \
	"$rp" 'if len(c.Evidence) == 0 {' 'if len(c.Evidence) < 0 {'
m unresolved-citation-accepted "$orch" 'TestComposeReportChecksItsClaims' - \
	"$rp" 'if !produced.Resolves(ref) {' 'if false && !produced.Resolves(ref) {'
# Item 1: a citation of a result produced in the citing call's own turn is
# refused, by every tool that cites; the list of citable ids holds only
# results already shown.
m same-turn-report-accepted "$orch" 'TestSameTurnCitationIsRefused' - \
	"$rp" 'if unseen := d.unseen(tc.Turn, refs); len(unseen) > 0 && mendable {' 'if unseen := d.unseen(tc.Turn, refs); len(unseen) < 0 && mendable {'
m same-turn-counted-as-shown "$orch" 'TestSameTurnCitationIsRefused|TestSameTurnRuleHoldsForEveryCitingTool' - \
	"$rp" '|| produced.Seen(ref, turn) ||' '|| produced.Seen(ref, turn+1) ||'
m same-turn-recommendation-accepted "$orch" 'TestSameTurnRuleHoldsForEveryCitingTool' - \
	"$rect" 'if unseen := d.unseen(tc.Turn, a.Evidence); len(unseen) > 0 {' 'if unseen := d.unseen(tc.Turn, a.Evidence); len(unseen) < 0 {'
m same-turn-answer-accepted "$orch" 'TestSameTurnRuleHoldsForEveryCitingTool' - \
	"$anst" 'CorrelationID: a.Artifact}}); len(unseen) > 0 {' 'CorrelationID: a.Artifact}}); len(unseen) < 0 {'
m unseen-result-listed-citable "$orch" 'TestSameTurnCitationIsRefused' - \
	"$rp" 'CorrelationID: id}, turn) {' 'CorrelationID: id}, turn+1) {'
# Item 4: the verdict a report would earn is computed before it is
# recorded; the first report with a shortfall is refused, once per
# shortfall, naming the missing step with the run's ids.
m unanswered-report-recorded-at-once "$orch" 'TestReportThatWouldBeUnansweredIsRefusedOnce' - \
	"$rp" 'v.Outcome == contracts.VerdictUnanswered && mendable {' 'v.Outcome == "never" && mendable {'
m shortfall-refused-forever "$orch" 'TestReportThatWouldBeUnansweredIsRefusedOnce' - \
	"$rp" 'if !all && slices.ContainsFunc(v.Unmet, func(code string) bool { return !told[code] }) {' 'if len(v.Unmet) > 0 || all || told == nil {'
m shortfall-names-no-result "$orch" 'TestReportThatWouldBeUnansweredIsRefusedOnce' - \
	"$sf" 'if id := answerCandidate(reads, claims); id != "" {' 'if id := answerCandidate(reads, claims); id == "" {'
# The refusal of an unresolved citation lists what is citable (the lead's
# citable-ids-not-listed, whose test the prose nudge's own list now rescues,
# pinned here by a test that reads the refusal itself).
m unresolved-refusal-lists-nothing "$orch" 'TestComposeReportChecksItsClaims' - \
	"$rp" 'citationRule+" "+list)' 'citationRule+" "+list[:0])'
# A report on the run's last turn is recorded as it stands, never refused
# into nothing.
m last-turn-report-refused "$orch" 'TestALastTurnReportIsRecordedAsItStands' - \
	"$rp" 'mendable := tc.Turn < d.maxTurns() && d.remaining() > 0' 'mendable := d.remaining() > 0'
