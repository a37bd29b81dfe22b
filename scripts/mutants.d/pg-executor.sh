# PostgreSQL executor (issue 17, items 2, 3, 4, 10, 13 and 18): the pinned
# session settings and their checks, the catalog check of what a statement
# resolves to, the deadline that terminates, lost connections that name
# nothing, and the documented role's default-privilege revoke.
pgx_=./services/executor/internal/postgres/
pgeng=services/executor/internal/postgres/engine.go
pguses=services/executor/internal/postgres/uses.go
pgrun=services/executor/internal/postgres/run.go
pgcls=services/executor/internal/postgres/classify.go

# Item 2: the startup packet pins each setting; the server must show it back.
m pgx-pins-not-sent "$pgx_" 'TestPinnedSettingsOverrideDatabaseAndRole|TestStandardConformingStringsOffCannotTurnTheGuardOff' pg \
	"$pgeng" $'\t\tcc.RuntimeParams[p.Name] = p.Value' $'\t\t_ = p.Value'
m pgx-scs-not-pinned "$pgx_" 'TestPinnedSettingsOverrideDatabaseAndRole|TestStandardConformingStringsOffCannotTurnTheGuardOff' pg \
	"$pgeng" '{"standard_conforming_strings", "on"},' ''
m pgx-role-not-pinned "$pgx_" 'TestPinnedSettingsOverrideDatabaseAndRole' pg \
	"$pgeng" '{"role", "none"},' ''
m pgx-search-path-not-pinned "$pgx_" 'TestPinnedSettingsOverrideDatabaseAndRole' pg \
	"$pgeng" '{"search_path", pgguard.DefaultSchema},' ''
m pgx-client-encoding-not-pinned "$pgx_" 'TestPinnedSettingsOverrideDatabaseAndRole' pg \
	"$pgeng" '{"client_encoding", "UTF8"},' ''
m pgx-row-security-not-pinned "$pgx_" 'TestPinnedSettingsOverrideDatabaseAndRole|TestRowSecurityOffRunsNoPolicy' pg \
	"$pgeng" '{"row_security", "off"},' ''
m pgx-backslash-quote-not-pinned "$pgx_" 'TestPinnedSettingsOverrideDatabaseAndRole' pg \
	"$pgeng" '{"backslash_quote", "safe_encoding"},' ''
m pgx-parameter-status-unchecked "$pgx_" 'TestUnpinnedSessionRunsNoRead' pg \
	"$pguses" 'if got := pc.ParameterStatus(p.Name); got != "" && got != p.Value {' 'if got := pc.ParameterStatus(p.Name); false && got != p.Value {'
m pgx-settings-row-ignored "$pgx_" 'TestUnpinnedSessionRunsNoRead' pg \
	"$pguses" $'\tcase "setting":\n\t\treturn unpinned(source, relation, object)' $'\tcase "setting":\n\t\treturn nil'
m pgx-open-settings-unchecked "$pgx_" 'TestUnpinnedSessionRunsNoRead' pg \
	"$pgeng" $'\tif name != "" {\n\t\treturn 0, unpinned(name, shown, want)' $'\tif false {\n\t\treturn 0, unpinned(name, shown, want)'
m pgx-reader-version-unknown "$pgx_" 'TestReaderKnowsTheServerVersion' pg \
	"$pgeng" 'reader: pgguard.Reader{ServerVersion: version}}' 'reader: pgguard.Reader{ServerVersion: 0 * version}}'

# Item 3 and 18: the resolved objects of a statement.
m pgx-view-body-unchecked "$pgx_" 'TestPlantedObjectsRefused' pg \
	"$pguses" "ON c.oid = r.oid AND c.relkind = 'v'" "ON c.oid = r.oid AND c.relkind = 'x'"
m pgx-views-not-followed "$pgx_" 'TestPlantedObjectsRefused' pg \
	"$pguses" "     WHERE c.oid = r.oid AND c.relkind = 'v'" "     WHERE false"
m pgx-policy-unchecked "$pgx_" 'TestPlantedObjectsRefused' pg \
	"$pguses" 'JOIN pg_catalog.pg_policy p ON p.polrelid = r.oid' 'JOIN pg_catalog.pg_policy p ON false'
m pgx-domain-unchecked "$pgx_" 'TestPlantedObjectsRefused|TestDomainCastCaughtByTheCatalog' pg \
	"$pguses" 'JOIN pg_catalog.pg_constraint k ON k.contypid = dm.oid' 'JOIN pg_catalog.pg_constraint k ON false'
m pgx-opclass-unchecked "$pgx_" 'TestPlantedObjectsRefused' pg \
	"$pguses" 'WHERE ($12::bool OR cardinality($7::text[]) > 0)' 'WHERE false'
m pgx-operators-unchecked "$pgx_" 'TestPlantedObjectsRefused|TestUserCodeRefused' pg \
	"$pguses" 'WHERE o.oprname = ANY ($2::text[])' 'WHERE false AND o.oprname = ANY ($2::text[])'
m pgx-children-not-held "$pgx_" 'TestPlantedObjectsRefused' pg \
	"$pguses" "SELECT i.inhrelid, CASE r.via WHEN 'view' THEN 'view' ELSE 'child' END" "SELECT i.inhrelid, 'view'"
m pgx-child-patterns-ignored "$pgx_" 'TestPlantedObjectsRefused' pg \
	"$pguses" $'\tcase "child":\n\t\tif e.policy.CanRead(guard.NamesExact, t) {' $'\tcase "child":\n\t\tif true {'
m pgx-foreign-under-wildcard "$pgx_" 'TestPlantedObjectsRefused' pg \
	"$pguses" $'\t\tif strings.Contains(pat, "*") {\n\t\t\tcontinue\n\t\t}' ''
m pgx-foreign-named-refused "$pgx_" 'TestForeignTableNamedByAPatternIsRead' pg \
	"$pguses" $'\t\tif e.explicitlyReadable(t) {\n\t\t\treturn nil\n\t\t}' ''
m pgx-resolved-schema-unchecked "$pgx_" 'TestResolvedNameHeldToPatterns' pg \
	"$pguses" ' WHERE s.nspname <> n.want' ' WHERE false'
m pgx-qualified-unchecked "$pgx_" 'TestQualifiedUserFunctionCaughtByTheCatalog' pg \
	"$pguses" 'JOIN pg_catalog.pg_proc p ON p.pronamespace = n.oid AND p.proname = q.name' 'JOIN pg_catalog.pg_proc p ON false'
m pgx-check-timeout-dropped "$pgx_" 'TestCheckSetsTheStatementTimeout' pg \
	"$pguses" "SELECT CASE WHEN \$15::text <> '' THEN pg_catalog.set_config('statement_timeout', \$15::text, true) END AS v" 'SELECT NULL::text AS v'
m pgx-role-setup-revokes-by-schema "$pgx_" 'TestDocumentedRoleRevokesExecuteByDefault' pg \
	services/executor/internal/postgres/pg_test.go 'ALTER DEFAULT PRIVILEGES REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;' 'ALTER DEFAULT PRIVILEGES IN SCHEMA public REVOKE EXECUTE ON FUNCTIONS FROM PUBLIC;'

# Item 10: what refuses every read is named up front.
m pgx-blockers-miss-implicit-casts "$pgx_" 'TestReadBlockersNameAnImplicitCast' pg \
	services/executor/internal/postgres/privileges.go " WHERE c.castcontext = 'i' AND " " WHERE false AND c.castcontext = 'i' AND "

# Item 4: a deadline terminates what the cancel did not stop.
m pgx-deadline-no-terminate "$pgx_" 'TestDeadlineTerminatesAStatementThatIgnoresCancel' pg \
	"$pgrun" 'req.Timeout, e.terminate(pid))' 'req.Timeout, pid == 0)'
m pgx-deadline-default-delay "$pgx_" 'TestDeadlineTerminatesAStatementThatIgnoresCancel' pg \
	"$pgrun" $'\t\tdefer setStopDelay(pc, stopGrace(req.Timeout))()' $'\t\t_ = stopGrace'

# Item 13: a lost connection is typed and names nothing.
m pgx-connect-text-leaks "$pgx_" 'TestConnectionLostNamesNothing' pg \
	"$pgcls" $'\tif unreachable(err) {\n\t\treturn connectionLost()' $'\tif unreachable(err) {\n\t\treturn &contracts.DBError{Class: contracts.DBUnavailable, Message: err.Error()}'
m pgx-unavailable-not-lost "$pgx_" 'TestConnectionLostNamesNothing' pg \
	"$pgcls" $'\tif d.Class == contracts.DBUnavailable {\n\t\treturn lost(d)' $'\tif false {\n\t\treturn lost(d)'
m pgx-ended-session-not-lost "$pgx_" 'TestConnectionLostNamesNothing' pg \
	"$pgcls" $'\t\tif lostCode(pgErr.Code) {' $'\t\tif false {'
m pgx-closed-conn-not-lost "$pgx_" 'TestClosedConnectionIsLost' pg \
	"$pgcls" 'if pc.IsClosed() && stmtCtx.Err() == nil && !errors.As(err, &pgErr) {' 'if false && !errors.As(err, &pgErr) {'
m pgx-same-schema-children-held "$pgx_" 'TestPartitionsInTheTablesSchemaAreRead' pg \
	"$pguses" "WHERE r.via = 'child' AND c.relnamespace <> rc.relnamespace OR c.relkind = 'f'" "WHERE r.via = 'child' OR c.relkind = 'f'"
m pgx-domain-base-unfollowed "$pgx_" 'TestDomainCastCaughtByTheCatalog' pg \
	"$pguses" "JOIN pg_catalog.pg_type t ON t.oid = dm.oid AND t.typtype = 'd'" 'JOIN pg_catalog.pg_type t ON false'
