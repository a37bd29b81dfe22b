# Engines (issue 19, item 2): an engine is one Spec in pkg/engine's list;
# an engine the list does not hold is never case-folded; each listed
# engine's guard reports the rule its spec declares and the executor opens
# it; one reader of quoted identifiers.
eng=pkg/engine/engine.go
m engine-undeclared-folds ./pkg/engine/ 'TestUndeclaredEngineIsNeverFolded' - \
	"$eng" 'return ok && s.FoldsCase()' 'return !ok || s.FoldsCase()'
m engine-undeclared-index-folds ./pkg/grounding/ 'TestIndexCheckUnknownEngineNeverFolds' - \
	pkg/grounding/planindex.go 'fold := enginespec.FoldsCase(engine)' 'fold := engine != contracts.EnginePostgres'
m engine-spec-rule-drifts ./pkg/guard/ 'TestReadersFollowTheirSpec' - \
	pkg/engine/postgres.go 'Names:   guard.NamesExact,' 'Names:   guard.NamesFold,'
m engine-listed-not-opened ./services/executor/ 'TestEveryEngineIsServed' - \
	pkg/engine/engine.go 'var list = []Spec{postgres, sqlite, duckdb, mssql}' 'var list = []Spec{postgres, sqlite, duckdb, mssql, {Name: "mysql"}}'
m engine-file-rule-ignored ./services/executor/connections/ 'TestParse|TestLoad' - \
	services/executor/connections/connections.go '	case spec.FileBased:' '	case false:'
m engine-name-rule-ignored ./services/executor/connections/ 'TestParse|TestLoad' - \
	services/executor/connections/connections.go '		rule := spec.Names' '		rule := guard.NamesASCIIFold'
m quoted-doubled-closer-ends ./pkg/guard/ 'TestReadQuoted|TestPattern|TestReadable' - \
	pkg/guard/quoted.go '		if j+1 < len(s) && s[j+1] == closer {' '		if false {'
m engine-deploy-runs-unlisted ./pkg/engine/ 'TestDeployNamesListedEngines' - \
	docker-compose.yml '"--services", "executor-sqlite"]' '"--services", "executor-mysql"]'
m engine-deploy-user-hears-another ./pkg/engine/ 'TestDeployNamesListedEngines' - \
	deploy/nats/nats-server.conf '              "sonde.exec.sqlite.*"' '              "sonde.exec.postgres.*"'
m engine-docs-offer-stale ./pkg/engine/ 'TestDocumentedEnginesAreTheList' - \
	deploy/connections.example.yaml 'postgres | sqlite | duckdb | mssql' 'postgres | sqlite | duckdb'
