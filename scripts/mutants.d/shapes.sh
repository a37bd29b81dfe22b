# Issue 18, items 9 and 12: the argument shapes read leniently and the
# ambiguous ones still refused; the refusal texts say the engine's dialect
# and what the rules enforce.
dec=services/orchestrator/decode.go
fixes=services/orchestrator/fixes.go
rules=services/orchestrator/transcript.go

# An id names one of this run's results only by that result's id, in
# another case or spaced; and an unresolved id is refused by its id.
m id-never-resolved "$orch" 'TestIDsAndSourcesResolveToTheRunsResults|TestShapesAreReadThroughARun' - \
	"$dec" 'if strings.EqualFold(squeezed, known) {' 'if squeezed == known {'
m id-resolved-to-any-result "$orch" 'TestIDsAndSourcesResolveToTheRunsResults' - \
	"$dec" 'if strings.EqualFold(squeezed, known) {' 'if squeezed != "" {'
m unresolved-id-blames-the-source "$orch" 'TestAnUnresolvedIDIsRefusedByItsID|TestIDsAndSourcesResolveToTheRunsResults' - \
	"$dec" 'if ref.CorrelationID != "" && ref.Fingerprint == "" && ref.Source != contracts.EvidenceArtifact {' 'if ref.CorrelationID != "" && ref.Fingerprint == "" && ref.Source == "" && slices.Contains(ids, ref.CorrelationID) {'
# A wrapper naming another tool is refused, never read as this tool's.
m wrapper-of-another-tool-read "$orch" 'TestEveryDecoderRefusesAnAmbiguousEnvelope|TestAmbiguousShapesAreRefusedThroughARun' - \
	"$dec" 'case called != tool:' 'case false:'
# A ```sql fence holding two statements is refused, never unwrapped.
m fenced-two-statements-read "$orch" 'TestStatementsLoseTheirSQLFence|TestAmbiguousShapesAreRefusedThroughARun' - \
	"$dec" 'if n := statements(inner); n > 1 {' 'if n := statements(inner); n > 99 {'
m statement-count-ignores-quotes "$orch" 'TestStatementsLoseTheirSQLFence' - \
	"$dec" $'\tcase \'\\\'\', \'"\', \'`\':\n\t\t\tskip(string(c), i+1)' $'\tcase \'`\':\n\t\t\tskip(string(c), i+1)'
# Prose after the object is left out only when it holds no other object.
m object-in-trailing-prose-read "$orch" 'TestEveryDecoderRefusesAnAmbiguousEnvelope|TestAmbiguousShapesAreRefusedThroughARun' - \
	"$dec" $'// in it would make the call ambiguous.\n\t\tif strings.ContainsAny(rest, "{[`") {' $'// in it would make the call ambiguous.\n\t\tif false {'
# A tool named in another case or with a prefix is the run's tool, and
# only a tool of the run.
m tool-name-read-exactly "$orch" 'TestToolNamesAreReadInAnyCaseOrPrefix|TestShapesAreReadThroughARun' - \
	"$dec" 'if strings.EqualFold(n, t) {' 'if n == t {'
# The guard's unparsable and engine_parse refusals carry the dialect.
m unreadable-without-dialect "$orch" 'TestUnreadableStatementsCarryTheDialect' - \
	"$fixes" 'return code == contracts.RefuseUnparsable || code == contracts.RefuseEngineParse' 'return code == contracts.RefuseUnparsable'
# The repair rule names the failures after which statements are refused.
m repair-rule-off-by-one "$orch" 'TestTheRepairRuleSaysWhatIsEnforced' - \
	"$rules" 'what, repairs, repairs+1, what,' 'what, repairs, repairs, what,'
# Example ids in fixes are the run's own; the hypothetical-index rule is
# stated per engine.
m fix-gives-made-up-ids "$orch" 'TestFixesNameTheRunsOwnIDs' - \
	"$fixes" 'ids := d.exampleIDs(2, policy.ToolInspectPlan)' 'ids := append(d.exampleIDs(2, policy.ToolInspectPlan)[:0:0], "r2", "r4")'
m hypothetical-rule-same-everywhere "$orch" 'TestHypotheticalIndexesAreStatedUpFront' - \
	"$rules" 'if e != contracts.EnginePostgres {' 'if false {'
