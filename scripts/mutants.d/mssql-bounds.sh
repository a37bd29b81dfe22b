# Issue 17, item 17: the T-SQL reader's casts, sizes and generated rows, and
# the bounds that bound nothing on every engine. Sourced by scripts/mutants.sh.

tsql=pkg/guard/mssql
m tsql-cast-to-user-type ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/expr.go 'if len(parts) > 2 || len(parts) == 2 && !strings.EqualFold(parts[0], "sys") || !builtinTypes[name] {' 'if false {'
m tsql-built-value-unbounded ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'if s.bytes > MaxBuiltValue {' 'if false {'
m tsql-replicate-unsized ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'out = size{bytes: math.Max(s.sz.bytes, 1) * math.Max(n.bv.Number, 0), lob: true, data: s.sz.data}' 'out = size{lob: true, data: s.sz.data}'
m tsql-replicate-count-of-data ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'if n.bv.Kind != guard.BoundNumber {' 'if n.bv.Kind != guard.BoundNumber && false {'
m tsql-decompress-of-built ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'if a := arg(0); a.op != "col" {' 'if a := arg(0); false && a.op != "col" {'
m tsql-generated-rows-unbounded ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'case g.n > MaxGeneratedRows:' 'case false:'
m tsql-generated-beside-tables ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'case g.tables && g.n > maxGeneratedBesideTables:' 'case false:'
m tsql-recursive-fan-out ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'case g.recursive && g.n > 1:' 'case false:'
m tsql-series-of-data ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'if a.bv.Kind != guard.BoundNumber {' 'if false {'
m tsql-cross-join-not-multiplied ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'return rows{n: r.n * o.n, tables: r.tables || o.tables, recursive: r.recursive || o.recursive}' 'return rows{n: math.Max(r.n, o.n), tables: r.tables || o.tables, recursive: r.recursive || o.recursive}'
m tsql-string-agg-over-rows ./pkg/guard/mssql/ 'TestHostileCorpus' - \
	$tsql/size.go 'p.checkSize("STRING_AGG over the SELECT'"'"'s rows", size{bytes: per * n})' '_ = per * n'
m tsql-vacuous-bound-counts ./pkg/guard/mssql/ 'TestBoundsThatBoundNothing' - \
	$tsql/bounds.go 'if why := v.bv.Vacuous(now); why != "" {' 'if why := v.bv.Vacuous(now); false && why != "" {'
m tsql-dateadd-reach-ignored ./pkg/guard/mssql/ 'TestBoundsThatBoundNothing' - \
	$tsql/size.go 'back := float64(v.Back) - n.Number*float64(unit)' 'back := float64(v.Back) - 0*n.Number*float64(unit)'

# The shared rule: what bounds nothing, and that it does not count.
m bound-vacuous-counts ./pkg/guard/ 'TestVacuousBoundRefused' - \
	pkg/guard/names.go 'if b.Vacuous != "" || !eq(b.Column, col.text) {' 'if !eq(b.Column, col.text) {'
m bound-floor-dropped ./pkg/guard/ 'TestBoundValueVacuous' - \
	pkg/guard/large.go 'if !time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).After(BoundFloor) {' 'if !time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).After(time.Time{}) {'
m bound-reach-unbounded ./pkg/guard/ 'TestBoundValueVacuous' - \
	pkg/guard/large.go 'if t := now.Add(-v.Back); !t.After(BoundFloor) {' 'if t := now.Add(-v.Back); false && !t.After(BoundFloor) {'
m bound-number-not-positive ./pkg/guard/ 'TestBoundValueVacuous' - \
	pkg/guard/large.go 'if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {' 'if math.IsNaN(f) {'
m bound-null-counts ./pkg/guard/ 'TestBoundValueVacuous' - \
	pkg/guard/large.go 'return "NULL is no lower limit: a comparison with it holds for no row"' 'return ""'
m bound-unknown-counts ./pkg/guard/ 'TestBoundValueVacuous' - \
	pkg/guard/large.go 'return "the guard cannot work out the value it is compared with"' 'return ""'
m bound-sentinel-words ./pkg/guard/ 'TestBoundValueVacuous' - \
	pkg/guard/large.go 'case "-infinity", "infinity", "+infinity", "epoch":' 'case "never":'
m bound-empty-string ./pkg/guard/ 'TestBoundValueVacuous' - \
	pkg/guard/large.go 's == "" || r < '"'"'0'"'"'' 's == "" && r < '"'"'0'"'"''
m pg-vacuous-bound-counts ./pkg/guard/postgres/ 'TestBoundsThatBoundNothing' - \
	pkg/guard/postgres/bounds.go 'if why := boundValue(v).Vacuous(now); why != "" {' 'if why := boundValue(v).Vacuous(now); false && why != "" {'
m pg-interval-reach-ignored ./pkg/guard/postgres/ 'TestBoundsThatBoundNothing' - \
	pkg/guard/postgres/bounds.go $'\t\treturn pvalue{bv: l.bv.Behind(d)}\n\tcase r.bv.Kind == guard.BoundNow && l.isIntvl' $'\t\treturn pvalue{bv: l.bv}\n\tcase r.bv.Kind == guard.BoundNow && l.isIntvl'
m duckdb-vacuous-bound-counts ./pkg/guard/duckdb/ 'TestBoundsThatBoundNothing' - \
	pkg/guard/duckdb/bounds.go 'b := guard.Bound{Vacuous: boundValue(val).Vacuous(time.Now())}' 'b := guard.Bound{}'
m sqlite-vacuous-bound-counts ./pkg/guard/sqlite/ 'TestBoundsThatBoundNothing' - \
	pkg/guard/sqlite/bounds.go 'if why := boundValue(v).Vacuous(now); why != "" {' 'if why := boundValue(v).Vacuous(now); false && why != "" {'
m sqlite-modifier-reach-ignored ./pkg/guard/sqlite/ 'TestBoundsThatBoundNothing' - \
	pkg/guard/sqlite/bounds.go 'v = v.Behind(-d)' 'v = v.Behind(0 * d)'
