# Issue 19: facts with one owner. The run's budget bounds each model call
# (services/orchestrator/drive.go turnTimeout).
m model-turn-budget-ignored ./services/orchestrator/ 'TestModelTurnBoundedByTheBudget' - \
	services/orchestrator/drive.go $'\tif b := d.header.Budget.ModelTurnTimeoutMs; b > 0 {' $'\tif b := d.header.Budget.ModelTurnTimeoutMs; false && b > 0 {'
m model-turn-budget-replaces-deadline ./services/orchestrator/ 'TestModelTurnWithoutABudgetFigure' - \
	services/orchestrator/drive.go $'\tif b := d.header.Budget.ModelTurnTimeoutMs; b > 0 {\n\t\tt = min(t, b)' $'\tif b := d.header.Budget.ModelTurnTimeoutMs; true {\n\t\tt = min(t, max(b, 90_000))'
# One start rule (pkg/policy/start.go), applied by the orchestrator to every
# start command as the gateway applies it to every start request.
m start-rule-skipped-by-orchestrator ./services/orchestrator/ 'TestStartRefusesWhatTheGatewayRefuses' - \
	services/orchestrator/commands.go 'if p := policy.CheckStart(&cmd); p != nil {' 'if p := policy.CheckStart(&cmd); false && p != nil {'
m start-objective-unbounded ./pkg/policy/ 'TestCheckStartRefusals' - \
	pkg/policy/start.go 'case len(cmd.Objective) > MaxObjectiveBytes:' 'case false:'
m start-rule-skipped-by-gateway ./services/gateway/ 'TestStartRunRefusals' - \
	services/gateway/runs.go 'if p := policy.CheckStart(&cmd); p != nil {' 'if p := policy.CheckStart(&cmd); false && p != nil {'
# The adapters' one constructor (services/modelturn/internal/wire/adapter.go)
# sends the configured credential and only it.
wad=services/modelturn/internal/wire/adapter.go
m adapter-credential-not-set ./services/modelturn/ 'TestEveryProviderThroughItsSDK' - \
	"$wad" 'set.Set(cred.Header, cred.Value)' '_ = cred.Value'
m adapter-credential-not-stripped ./services/modelturn/internal/wire/ 'TestAdapterSendsOnlyTheConfiguredCredential' - \
	"$wad" 'hc = Client(cred.Strip, set)' 'hc = Client(nil, set)'
