# Mutants of the resource rules of issue 17 (items 4, 5, 6, 16) on SQLite
# and DuckDB: work a call cannot be interrupted in is refused before it runs,
# aggregates are held by SQLite's heap limit, DuckDB spills nowhere, and an
# over-wide DuckDB value truncates under inspect. Sourced by
# scripts/mutants.sh; see its header for the m NAME PACKAGE RUN-REGEX NEEDS
# FILE OLD NEW form.

gd=./pkg/guard/duckdb/
gs=./pkg/guard/sqlite/
xd=./services/executor/internal/duckdb/
xs=./services/executor/internal/sqlite/
dwork=pkg/guard/duckdb/work.go
dsize=pkg/guard/duckdb/size.go
swork=pkg/guard/sqlite/work.go
deng=services/executor/internal/duckdb/engine.go
seng=services/executor/internal/sqlite/engine.go

# DuckDB: the work check runs on every statement.
m duckdb-work-check-removed "$gd" 'TestHostileCorpus' - \
	pkg/guard/duckdb/reader.go 'if ref := checkWork(stmt.Node, w.derives, 0); ref != nil {' 'if ref := checkWork(stmt.Node, w.derives, 0); false && ref != nil {'
# An operand built from any number of rows (string_agg, list, a subquery).
m duckdb-work-grown-ignored "$gd" 'TestHostileCorpus' - \
	"$dwork" 'if e.grown {' 'if false {'
m duckdb-aggregate-not-grown "$gd" 'TestHostileCorpus' - \
	"$dsize" $'if growingAggregates[name] {\n\t\t\tsum.grown = true' $'if false {\n\t\t\tsum.grown = true'
m duckdb-subquery-not-grown "$gd" 'TestHostileCorpus' - \
	"$dsize" 'return estimate{data: true, units: 1, grown: true}, nil' 'return estimate{data: true, units: 1}, nil'
# A column of a derived table may be a value the statement built.
m duckdb-work-derives-ignored "$gd" 'TestHostileCorpus' - \
	"$dwork" 'if e.data && (e.units > 1 || derives) {' 'if e.data && e.units > 1 {'
m duckdb-derived-not-marked "$gd" 'TestHostileCorpus' - \
	pkg/guard/duckdb/walk.go $'func (w *walker) derived(idx int, name string) {\n\tw.derives = true' $'func (w *walker) derived(idx int, name string) {\n\tw.derives = w.derives'
# Several values read from the database joined (col || col, repeat(col, n)).
m duckdb-work-units-ignored "$gd" 'TestHostileCorpus' - \
	"$dwork" 'if e.data && (e.units > 1 || derives) {' 'if e.data && derives {'
# A regular expression's compiled size, and the product of built lengths.
m duckdb-regex-size-unchecked "$gd" 'TestHostileCorpus' - \
	"$dwork" 'case data && insts > maxBesideData:' 'case false:'
m duckdb-regex-work-unchecked "$gd" 'TestHostileCorpus' - \
	"$dwork" 'case float64(insts)*max(ops[0].bytes, 1) > maxPairWork:' 'case false:'
m duckdb-regex-pattern-any "$gd" 'TestHostileCorpus' - \
	"$dwork" $'if !ok {\n\t\t\treturn tooMuchWork(name, "takes a regular expression that is not a constant string' $'if false && !ok {\n\t\t\treturn tooMuchWork(name, "takes a regular expression that is not a constant string'
m duckdb-pair-work-unchecked "$gd" 'TestHostileCorpus' - \
	"$dwork" 'case max(ops[0].bytes, 1)*max(ops[1].bytes, 1) > maxPairWork:' 'case false:'
m duckdb-beside-data-unchecked "$gd" 'TestHostileCorpus' - \
	"$dwork" 'case data && ops[0].bytes+ops[1].bytes > maxBesideData:' 'case false:'
# DuckDB spills nowhere (item 6), and its external access stays off.
m duckdb-temp-directory-kept "$xd" 'TestNoSpillBesideTheFile' - \
	"$deng" $'\t{"temp_directory", ""},\n' ''
m duckdb-external-access-left-on "$xd" 'TestInstanceSettingsAlone|TestHostileCorpusLeavesFileUnchanged' - \
	"$deng" $'\t{"enable_external_access", "false"},\n' ''
# An over-wide value truncates under inspect (item 16).
m duckdb-inspect-refuses-wide "$xd" 'TestInspectTruncatesWideValues' - \
	"$deng" 'if ref.Code == contracts.RefuseResultTooLarge && req.Limits.Truncate {' 'if false {'

# SQLite: the work check runs on every statement, on both operands.
m sqlite-work-check-removed "$gs" 'TestHostileCorpus' - \
	pkg/guard/sqlite/reader.go 'if ref := checkWork(stmt); ref != nil { // work.go' 'if ref := checkWork(stmt); false && ref != nil { // work.go'
m sqlite-work-left-operand-unchecked "$gs" 'TestHostileCorpus' - \
	"$swork" 'return refuseWork(op, "the value it matches", what)' '_ = what'
m sqlite-work-call-args-unchecked "$gs" 'TestHostileCorpus' - \
	"$swork" 'return refuseWork(name+"()", "an argument", what)' '_ = what'
m sqlite-work-subquery-operand "$gs" 'TestHostileCorpus' - \
	"$swork" $'case t.is("SELECT"), t.is("VALUES"):\n\t\t\treturn "a subquery"' $'case false:\n\t\t\treturn "a subquery"'
m sqlite-work-case-skipped "$gs" 'TestHostileCorpus' - \
	"$swork" $'\t\tcase t.is("END"):\n\t\t\tdepth := 0' $'\t\tcase t.is("END") && false:\n\t\t\tdepth := 0'
m sqlite-work-needle-derived-unchecked "$gs" 'TestHostileCorpus' - \
	"$swork" 'if needles[name] && derived && len(args) > 1 && !plainValue(args[1]) {' 'if false && derived {'
# The LIKE and GLOB pattern limit, and SQLite's heap limit (items 4 and 5).
m sqlite-like-pattern-unlimited "$xs" 'TestDeadlineEndsTheWork' - \
	"$seng" '{sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, MaxPatternBytes},' '{sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH, 50000},'
m sqlite-heap-unlimited "$xs" 'TestAggregateGrowthHeld' - \
	services/executor/internal/sqlite/heap.go 'sqlite3.Xsqlite3_hard_heap_limit64(tls, n)' '_ = tls'
m sqlite-nomem-not-refused "$xs" 'TestAggregateGrowthHeld|TestHostileCorpusLeavesFileUnchanged' - \
	"$seng" $'\t\tif outOfMemory(err) {\n\t\t\treturn res, heapRefusal()' $'\t\tif false {\n\t\t\treturn res, heapRefusal()' \
	"$seng" 'if err != nil && outOfMemory(err) {' 'if false {'
m sqlite-work-case-forward-skipped "$gs" 'TestHostileCorpus' - \
	"$swork" $'\t\tcase t.is("CASE"):\n\t\t\tdepth := 0' $'\t\tcase t.is("CASE") && false:\n\t\t\tdepth := 0'
