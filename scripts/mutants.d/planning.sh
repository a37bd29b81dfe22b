# Planning mode (issue 18, item 11): a draft the guard refuses or that names
# what the snapshot lacks is not answered; the one repair turn shows the
# model why and is rebuilt from the ledger; one SQL block under any SQL tag
# is the deliverable, several are none; a query optimisation may hand over
# one CREATE INDEX, judged by its names; the rules agree with the
# deliverable.
vpl=pkg/verdict/planning.go
opl=services/orchestrator/planning.go
gpl=pkg/grounding/plan.go
gix=pkg/grounding/planindex.go
plorch='TestPlanningRefusedDraftsAreNotAnswered|TestPlanningIndexRecommendation|TestPlanningForeignTag|TestPlanningSeveralStatements|TestPlanningResumes|TestPlanRepair|TestEveryPlanningPrompt'

m plan-refused-draft-answered ./pkg/verdict/ 'TestVerifyPlanJudgesTheGuardsReading' - \
	"$vpl" 'out = append(out, UnmetPlanRefused)' '_ = UnmetPlanRefused'
m plan-unchecked-draft-answered ./pkg/verdict/ 'TestVerifyPlanJudgesTheGuardsReading' - \
	"$vpl" 'out = append(out, UnmetPlanUnchecked)' '_ = UnmetPlanUnchecked'
m plan-unknown-names-answered ./pkg/verdict/ 'TestVerifyPlanJudgesTheGuardsReading' - \
	"$vpl" 'out = append(out, UnmetUnknownNames)' '_ = UnmetUnknownNames'
m plan-first-draft-judged ./pkg/verdict/ 'TestVerifyPlanJudgesTheGuardsReading' - \
	"$vpl" $'\t\t\t\tdraft = p.(*contracts.PlanStatementDrafted)' $'\t\t\t\tif draft == nil {\n\t\t\t\t\tdraft = p.(*contracts.PlanStatementDrafted)\n\t\t\t\t}'
m plan-decline-after-repair-unanswered ./pkg/verdict/ 'TestVerifyPlanJudgesTheGuardsReading' - \
	"$vpl" 'case declinedLast && (draft == nil || draft.Turn < lastTurn):' 'case declinedLast && (draft == nil || lastTurn < 0):'
m plan-index-judged-as-read ./pkg/verdict/ 'TestVerifyPlanJudgesTheGuardsReading' - \
	"$vpl" $'\tcase IndexRecommendation(h, p):\n' $'\tcase false:\n'
m plan-index-any-refusal ./pkg/verdict/ 'TestVerifyPlanJudgesTheGuardsReading' - \
	"$vpl" ' || p.Refusal.Code != contracts.RefuseNotASelect {' ' {'
m plan-index-for-every-workflow ./pkg/verdict/ 'TestVerifyPlanJudgesTheGuardsReading' - \
	"$vpl" '!policy.Workflows[h.WorkflowType].PlanMayIndex || ' ''
m plan-no-repair-turn ./services/orchestrator/ "$plorch" - \
	"$opl" 'if !last && len(repairable(&d.header, &p)) > 0 {' 'if false && !last && len(repairable(&d.header, &p)) > 0 {'
m plan-repair-not-rebuilt ./services/orchestrator/ "$plorch" - \
	"$opl" 'if faults := repairable(h, &p); len(faults) > 0 {' 'if faults := repairable(h, &p); false && len(faults) > 0 {'
m plan-repair-hides-refusal ./services/orchestrator/ "$plorch" - \
	"$opl" $'fmt.Fprintf(&b, "\\n- Refused (%s): %s.", p.Refusal.Code, fence.Neutralise(strings.TrimSuffix(p.Refusal.Message, ".")))' '_ = fence.Neutralise'
m plan-repair-hides-names ./services/orchestrator/ "$plorch" - \
	"$opl" $'fmt.Fprintf(&b, "\\n- It names what the schema snapshot does not hold: %s.", fence.Neutralise(strings.Join(names, ", ")))' '_ = names'
m plan-repair-quotes-raw ./services/orchestrator/ "$plorch" - \
	"$opl" 'fence.Neutralise(strings.TrimSuffix(p.Refusal.Message, "."))' 'strings.TrimSuffix(p.Refusal.Message, ".")'
m plan-repair-without-nearest ./services/orchestrator/ "$plorch" - \
	"$opl" $'\tif p.Note != "" {\n\t\tb.WriteString("\\n- " + fence.Neutralise(p.Note))' $'\tif false {\n\t\tb.WriteString("\\n- " + fence.Neutralise(p.Note))'
m plan-index-names-unchecked ./services/orchestrator/ "$plorch" - \
	"$opl" 'chk = grounding.IndexCheck(inv, ix, d.header.Engine)' '_ = grounding.IndexCheck(inv, ix, d.header.Engine)'
m plan-index-told-select-only ./services/orchestrator/ "$plorch" - \
	"$opl" $'\tif row.PlanMayIndex {\n\t\treturn "The statement is either' $'\tif false {\n\t\treturn "The statement is either'
m plan-first-of-several-read ./pkg/grounding/ 'TestReadDeliverable' - \
	"$gpl" '	switch len(winners) {' '	switch min(len(winners), 1) {'
m plan-generic-tag-ignored ./pkg/grounding/ 'TestReadDeliverable' - \
	"$gpl" $'\tif t == "" || slices.Contains(genericSQLTags, t) {\n\t\treturn 1' $'\tif t == "" || slices.Contains(genericSQLTags, t) {\n\t\treturn 0'
m plan-engine-alias-ignored ./pkg/grounding/ 'TestReadDeliverable' - \
	"$gpl" $'\t\t\tif s.Name == engine {\n\t\t\t\treturn 2' $'\t\t\tif s.Name == engine && false {\n\t\t\t\treturn 2'
m plan-index-second-statement ./pkg/grounding/ 'TestReadIndex' - \
	"$gix" $'if t.kind == \'p\' && t.text == ";" && slices.ContainsFunc' $'if false && t.kind == \'p\' && t.text == ";" && slices.ContainsFunc'
m plan-index-predicate-calls ./pkg/grounding/ 'TestReadIndex' - \
	"$gix" 'if len(rest) == 0 || !plainPredicate(rest) {' 'if len(rest) == 0 {'
m plan-index-trailing-options ./pkg/grounding/ 'TestReadIndex' - \
	"$gix" '	return ix, p.i == len(p.toks)' '	return ix, true'
