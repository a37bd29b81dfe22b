# Issue 19 item 1: a tool is one file (services/orchestrator/tool_*.go). Its
# schema is generated from its arguments' struct, its lenient reading of
# text parameters from the same tags, and its repair rule is its entry's.
tsch=services/orchestrator/toolschema.go

m tool-schema-left-open "$orch" 'TestToolSpecsMatchTheGolden' - \
	"$tsch" 'b.WriteString(`],"additionalProperties":false`)' 'b.WriteString(`]`)'
m tool-schema-null-dropped "$orch" 'TestToolSpecsMatchTheGolden' - \
	"$tsch" $'\t\tb.WriteString(`["` + typ + `","null"]`)' $'\t\tb.WriteString(`"` + typ + `"`)'
m tool-param-optional "$orch" 'TestDecodeRefusesWhatItCannotRead' - \
	"$tsch" 'fl.required = !fl.nullable' 'fl.required = false'
m tool-alias-dropped "$orch" 'TestDecodeReadsTheShapesSmallModelsSend' - \
	"$tsch" 'fl.aliases = strings.Split(a, ",")' 'fl.aliases = nil'
m profile-free-after-repairs "$orch" 'TestModelVisibleWorkflowRules' - \
	services/orchestrator/tool_profile_table.go 'repairBound: true,' 'repairBound: false,'
m schema-read-bound-by-repairs "$orch" 'TestDriveRefusesPastTheRepairBudget' - \
	services/orchestrator/tool_inspect_schema.go 'repairBound: false,' 'repairBound: true,'
m still-answers-names-bound-tools "$orch" 'TestModelVisibleText' - \
	services/orchestrator/call.go 'ok && e.step != nil && !e.repairBound {' 'ok && e.step != nil && e.repairBound {'
