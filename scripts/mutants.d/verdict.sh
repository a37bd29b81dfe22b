# Issue 18, the verifier's side (items 1-5): a claim rests only on what the
# model had been shown, its figures are found in or derived from that, a
# claim about data rests on a reading of the data, an honest "could not be
# read" ends data-unread, and query-optimization's honest "no change
# needed" answers. Sourced by scripts/mutants.sh; see its header for the
# m NAME PACKAGE RUN-REGEX NEEDS FILE OLD NEW form.

vp=./pkg/verdict/
fp=./pkg/figures/
vd=pkg/verdict/verdict.go
vw=pkg/verdict/workflows.go
fg=pkg/figures/figures.go
fc=pkg/figures/check.go

# Every agent rule is checked for integrity.
m integrity-not-applied "$vp" 'TestEveryAgentRuleChecksIntegrity|TestFiguresAreCheckedAgainstTheCitedResults' - \
	"$vd" 'return integrity(h, entries, judge(entries, cancelled))' 'return judge(entries, cancelled)'

# Item 1: a citation of a result not yet shown is unseen evidence ...
m unseen-evidence-accepted "$vp" 'TestACitationOfAResultNotYetShownIsUnseen' - \
	"$vd" 'if !p.Seen(ref, rep.Turn) {' 'if false {'
m same-turn-counted-seen "$vp" 'TestACitationOfAResultNotYetShownIsUnseen' - \
	"$vd" 'return ok && (turn == 0 || t < turn)' 'return ok && (turn == 0 || t <= turn)'
# ... and what it holds is no evidence for the claim ...
m unseen-result-checked-against "$vp" 'TestACitationOfAResultNotYetShownIsUnseen' - \
	"$vd" $'unseen = true // and what it holds is no evidence for this claim\n\t\t\t\tcontinue' 'unseen = true'
# ... while a replay does not move when a result was first shown.
m replay-moves-the-turn-shown "$vp" 'TestACitationOfAResultNotYetShownIsUnseen' - \
	"$vd" 'if _, again := p.Rows[cid]; again {' 'if false {'

# Item 2: a figure found in none of the evidence is unverified ...
m figure-unverified-not-unmet "$vp" 'TestFiguresAreCheckedAgainstTheCitedResults|TestEveryAgentRuleChecksIntegrity' - \
	"$vd" $'if unverified {\n\t\tadd(UnmetFigureUnverified)' $'if false {\n\t\tadd(UnmetFigureUnverified)'
# ... at the precision the claim wrote it ...
m figure-precision-ignored "$fp" 'TestFiguresAreFoundAtTheirWrittenPrecision' - \
	"$fg" 'half := 0.5 * math.Pow10(-decimals+exp)' 'half := 0.5 * math.Pow10(exp+0*decimals)'
m approximate-not-rounded "$fp" 'TestFiguresAreFoundAtTheirWrittenPrecision|TestClaimedReadsEveryWrittenForm' - \
	"$fg" 'f.Half = 0.5 * math.Pow10(z) * mult' 'f.Half = f.Half + 0*float64(z)'
m every-whole-number-rounded "$fp" 'TestFiguresAreFoundAtTheirWrittenPrecision|TestClaimedReadsEveryWrittenForm' - \
	"$fg" 'if hasWordSuffix(before, w) || hasWordSuffix(glued, w) {' 'if true || hasWordSuffix(before, w) || hasWordSuffix(glued, w) {'
m percentage-not-its-fraction "$fp" 'TestAPercentageMatchesItsFraction' - \
	"$fc" 't = append(t, [2]float64{f.Value / 100, f.Half / 100})' 't = append(t, [2]float64{f.Value, f.Half})'
m date-precision-ignored "$fp" 'TestDatesMatchAtTheirPrecision' - \
	"$fg" 'return d.Year == shown.Year && (d.Month == 0 || d.Month == shown.Month) && (d.Day == 0 || d.Day == shown.Day)' 'return d.Year == shown.Year'
# ... where what was shown is the data, not the run's status line ...
m status-line-read-as-data "$fp" 'TestFiguresAreFoundAtTheirWrittenPrecision' - \
	"$fc" 'if i := strings.LastIndex(text, "\n[turn "); i >= 0 {' 'if i := -1; i >= 0 {'
# ... digits in identifiers, ranks and the run's ids are no figures ...
m identifier-digits-read "$fp" 'TestClaimedReadsEveryWrittenForm' - \
	"$fg" 'case isWord(r) && !isDigit(r):' 'case isWord(r) && !isDigit(r) && false:'
m ranks-read-as-figures "$fp" 'TestClaimedReadsEveryWrittenForm' - \
	"$fg" 'var ranks = []string{"top", "bottom", "first", "last", "#", "no."}' 'var ranks = []string{}'
m run-ids-read-as-figures "$fp" 'TestClaimedSkipsTheRunsIDs' - \
	"$fg" 'return scan(blank(text, skip), true).figures' 'return scan(text, true).figures'
# ... derived figures are recognised, so an honest report answers ...
m derived-not-recognised "$vp" 'TestFiguresAreCheckedAgainstTheCitedResults' - \
	"$fc" 'if d, ok := lookup(f, pairs); ok {' 'if d, ok := lookup(f, pairs); ok && false {'
m derived-sum-lost "$fp" 'TestDerivedFiguresAreRecognised' - \
	"$fc" 'derived{value: a.value + b.value,' 'derived{value: a.value * b.value,'
m derived-share-lost "$fp" 'TestDerivedFiguresAreRecognised' - \
	"$fc" 'for _, t := range totals {' 'for _, t := range totals[:0] {'
m column-totals-lost "$fp" 'TestDerivedFiguresAreRecognised' - \
	"$fc" 'for _, col := range columns(data) {' 'for _, col := range columns("") {'
m column-median-lost "$fp" 'TestAColumnsMedianIsDerived' - \
	"$fc" 'derived{value: median(col.values),' 'derived{value: 1e300 + 0*median(col.values),'
m row-count-lost "$fp" 'TestDerivedFiguresAreRecognised' - \
	"$fc" 'if ev.Rows >= 0 {' 'if ev.Rows < -1 {'
# ... literals (the statement, the objective) found as written, never
# combined, and counted ...
m literals-combined "$fp" 'TestLiteralsAreFoundNeverDerived' - \
	"$fc" $'if ev.Literal {\n\t\treturn set\n\t}' ''
m statement-not-counted "$vp" 'TestFiguresAreCheckedAgainstTheCitedResults' - \
	"$vd" 'if st := statementText(p.Statements[cid]); st != "" {' 'if st := statementText(p.Statements[cid]); false && st != "" {'
m objective-not-counted "$vp" 'TestFiguresAreCheckedAgainstTheCitedResults' - \
	"$vd" $'\t\tev = append(ev, objective)\n' $'\t\t_ = objective\n'
# ... and the work is bounded.
m derivation-unbounded "$fp" 'TestDerivationIsBounded' - \
	"$fc" 'if len(pool) < MaxDerivable && !seen[n.value] {' 'if !seen[n.value] {'

# Item 3: a claim about data resting on structure alone is schema-only ...
m schema-only-accepted "$vp" 'TestDataClaimsNeedAReadingOfTheData|TestEveryAgentRuleChecksIntegrity' - \
	"$vd" 'case dataOnStructure && !slices.Contains(v.Unmet, UnmetNoReading):' 'case false:'
m data-vocabulary-ignored "$vp" 'TestDataClaimsNeedAReadingOfTheData' - \
	"$vd" 'if slices.Contains(dataWords, bare) {' 'if false && slices.Contains(dataWords, bare) {'
m quoted-values-ignored "$vp" 'TestDataClaimsNeedAReadingOfTheData' - \
	"$vd" 'if !names(q) {' 'if false && !names(q) {'
m capitalised-values-ignored "$vp" 'TestDataClaimsNeedAReadingOfTheData' - \
	"$vd" "if !start && len(r) > 0 && r[0] >= 'A' && r[0] <= 'Z' && !names(w) {" "if false && !start && len(r) > 0 && r[0] >= 'A' && r[0] <= 'Z' && !names(w) {"
m structure-names-unrecognised "$vp" 'TestDataClaimsNeedAReadingOfTheData' - \
	"$vd" 'if w == "" || slices.Contains(technical, w) || strings.Contains(known, w) {' 'if w == "" || slices.Contains(technical, w) {'
m inspect-schema-read-as-data "$vp" 'TestDataClaimsNeedAReadingOfTheData' - \
	"$vd" 'return p.isSnapshot(ref) || p.Tools[ref.CorrelationID] == policy.ToolInspectSchema' 'return p.isSnapshot(ref)'
# ... and one after every data read failed or was refused is data-unread.
m data-unread-not-said "$vp" 'TestAReportAfterEveryReadFailedIsDataUnread' - \
	"$vd" 'case attempted && !read && (dataOnStructure || anyCited && allStructure):' 'case false && attempted && !read && (dataOnStructure || anyCited && allStructure):'
m data-unread-needs-data-words "$vp" 'TestAReportAfterEveryReadFailedIsDataUnread' - \
	"$vd" 'case attempted && !read && (dataOnStructure || anyCited && allStructure):' 'case attempted && !read && (dataOnStructure || false && anyCited && allStructure):'
m schema-read-counted-as-data-read "$vp" 'TestAReportAfterEveryReadFailedIsDataUnread' - \
	"$vd" 'tc.Outcome == contracts.OutcomeOK && tc.Artifact != nil && tc.Tool != policy.ToolInspectSchema {' 'tc.Outcome == contracts.OutcomeOK && tc.Artifact != nil {'

# Item 4: query-optimization's "no change needed" answers on a plan read,
# and only with no recommendation.
m qo-no-change-refused "$vp" 'TestSpecialistVerdicts' - \
	"$vw" 'case !recommended && citesPlan(reportOf(entries), produced):' 'case false && !recommended && citesPlan(reportOf(entries), produced):'
m qo-no-change-despite-rewrite "$vp" 'TestSpecialistVerdicts' - \
	"$vw" 'case !recommended && citesPlan(reportOf(entries), produced):' 'case (recommended || true) && citesPlan(reportOf(entries), produced):'

# Every shortfall code has its sentence.
m explain-code-missing "$vp" 'TestExplainSaysWhatEveryCodeLacks' - \
	"$vd" $'\tUnmetSchemaOnly: "A claim about the data cites only the schema' $'\t"x-schema-only": "A claim about the data cites only the schema'
