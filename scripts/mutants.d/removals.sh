# Issue 19: facts with one owner. The run's budget bounds each model call
# (services/orchestrator/drive.go turnTimeout).
m model-turn-budget-ignored ./services/orchestrator/ 'TestModelTurnBoundedByTheBudget' - \
	services/orchestrator/drive.go $'\tif b := d.header.Budget.ModelTurnTimeoutMs; b > 0 {' $'\tif b := d.header.Budget.ModelTurnTimeoutMs; false && b > 0 {'
m model-turn-budget-replaces-deadline ./services/orchestrator/ 'TestModelTurnWithoutABudgetFigure' - \
	services/orchestrator/drive.go $'\tif b := d.header.Budget.ModelTurnTimeoutMs; b > 0 {\n\t\tt = min(t, b)' $'\tif b := d.header.Budget.ModelTurnTimeoutMs; true {\n\t\tt = min(t, max(b, 90_000))'
