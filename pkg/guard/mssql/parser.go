package mssql

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// parser is a recursive-descent reader of one T-SQL query. It fails by
// panicking with a bail, which run recovers; nothing else is recovered.
type parser struct {
	toks   []token
	i      int
	depth  int
	ctes   []string // CTE names visible from here, in order of definition
	scopes []guard.Scope
	// cteRows are the rows each CTE generates, by name (lower case);
	// defining names the CTEs whose bodies are being read.
	cteRows  map[string]rows
	defining []string
	// aggs are, per SELECT being read (innermost last), the sizes each of
	// its STRING_AGGs of a max value adds per row.
	aggs [][]size
}

type bail struct{ ref *contracts.Refusal }

func (p *parser) run() (ref *contracts.Refusal) {
	defer func() {
		if r := recover(); r != nil {
			b, ok := r.(bail)
			if !ok {
				panic(r)
			}
			ref = b.ref
		}
	}()
	p.statement()
	return nil
}

func (p *parser) fail(code contracts.Code, reason, fix string) {
	panic(bail{guard.Refuse(code, reason, fix)})
}

func (p *parser) peek() token        { return p.toks[p.i] }
func (p *parser) peekAt(n int) token { return p.toks[min(p.i+n, len(p.toks)-1)] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// accept consumes the keyword kw if it is next.
func (p *parser) accept(kw string) bool {
	if p.peek().is(kw) {
		p.i++
		return true
	}
	return false
}

// acceptPunct consumes the punctuation s if it is next.
func (p *parser) acceptPunct(s string) bool {
	if p.peek().isPunct(s) {
		p.i++
		return true
	}
	return false
}

func (p *parser) expect(kw string) {
	if !p.accept(kw) {
		p.unexpected(kw)
	}
}

func (p *parser) expectPunct(s string) {
	if !p.acceptPunct(s) {
		p.unexpected("'" + s + "'")
	}
}

// unexpected refuses at the next token. A word that writes or runs a
// command is refused as such, wherever the reader meets it.
func (p *parser) unexpected(want string) {
	t := p.peek()
	if t.kind == tWord && writes[t.upper()] {
		p.fail(contracts.RefuseNotReadOnly,
			fmt.Sprintf("%s inside the query writes, locks or runs a command", t.upper()),
			"send one plain SELECT that only reads")
	}
	got := "the end of the statement"
	if t.kind != tEOF {
		got = fmt.Sprintf("%q", t.text)
	}
	p.fail(contracts.RefuseUnparsable,
		fmt.Sprintf("the T-SQL reader stopped at %s (byte %d): expected %s", got, t.pos, want),
		"write the query in plain T-SQL; the guard reads SELECT with WITH, joins, APPLY, subqueries, set operations, window functions, CASE and CAST/CONVERT")
}

func (p *parser) enter() {
	p.depth++
	if p.depth > maxDepth {
		p.fail(contracts.RefuseUnsupported,
			fmt.Sprintf("the query nests more than %d levels deep", maxDepth), "write the query more plainly")
	}
}

func (p *parser) leave() { p.depth-- }

// statement: [WITH cte, …] query [ORDER BY …] [OFFSET …] then the end.
func (p *parser) statement() {
	if p.accept("WITH") {
		p.withClause()
		if t := p.peek(); t.kind == tWord && (t.is("DELETE") || t.is("UPDATE") || t.is("INSERT") || t.is("MERGE")) {
			p.fail(contracts.RefuseNotASelect,
				fmt.Sprintf("the statement after WITH is %s, not a SELECT", t.upper()),
				"write WITH … SELECT")
		}
	}
	p.query()
	t := p.peek()
	if t.kind == tEOF {
		return
	}
	if t.kind == tWord && statementStart[t.upper()] || t.isPunct("(") {
		p.fail(contracts.RefuseNotOneStatement,
			fmt.Sprintf("more than one statement: %s begins another one after the SELECT (T-SQL needs no ';' between statements)", t.upper()),
			"send one SELECT at a time")
	}
	p.unexpected("the end of the statement")
}

func (p *parser) withClause() {
	if p.peek().is("XMLNAMESPACES") {
		p.fail(contracts.RefuseUnsupported, "WITH XMLNAMESPACES is not read by the guard", "leave it out; read XML with plain expressions")
	}
	for {
		name := p.ident("a CTE name")
		for _, c := range p.ctes {
			if same, _ := sameName(c, name); same {
				p.fail(contracts.RefuseUnsupported, fmt.Sprintf("the CTE %s is defined twice", name), "give each CTE its own name")
			}
		}
		if p.acceptPunct("(") {
			p.identList()
			p.expectPunct(")")
		}
		p.expect("AS")
		p.expectPunct("(")
		// Visible in its own body (recursion) and in every later one.
		p.ctes = append(p.ctes, name)
		p.defining = append(p.defining, strings.ToLower(name))
		r := p.query()
		p.defining = p.defining[:len(p.defining)-1]
		if r.recursive {
			r = rows{n: 1, tables: true}
		}
		if p.cteRows == nil {
			p.cteRows = map[string]rows{}
		}
		p.cteRows[strings.ToLower(name)] = r
		p.expectPunct(")")
		if !p.acceptPunct(",") {
			return
		}
	}
}

// query: a query expression with its ORDER BY, OFFSET … FETCH and the
// clauses the guard refuses (FOR XML/JSON/UPDATE/BROWSE, OPTION).
func (p *parser) query() rows {
	p.enter()
	defer p.leave()
	r := p.queryExpr()
	if p.accept("ORDER") {
		p.expect("BY")
		p.orderItems()
	}
	if p.accept("OFFSET") {
		p.expr()
		p.rowOrRows()
		if p.accept("FETCH") {
			if !p.accept("FIRST") {
				p.expect("NEXT")
			}
			p.expr()
			p.rowOrRows()
			p.expect("ONLY")
		}
	}
	if t := p.peek(); t.is("FOR") {
		switch k := p.peekAt(1); {
		case k.is("UPDATE"):
			p.fail(contracts.RefuseNotReadOnly, "FOR UPDATE locks what it reads", "drop FOR UPDATE")
		case k.is("XML") || k.is("JSON") || k.is("BROWSE"):
			p.fail(contracts.RefuseQuerySettings,
				fmt.Sprintf("FOR %s sets an output format of the query's own", k.upper()),
				"drop the FOR clause; the answer's format is the server's")
		}
		p.unexpected("XML, JSON or the end of the query")
	}
	if p.peek().is("OPTION") {
		p.fail(contracts.RefuseQuerySettings, "OPTION (…) sets query hints of the statement's own",
			"drop the OPTION clause; the connection's limits are the server's")
	}
	if p.peek().is("COMPUTE") {
		p.unexpected("the end of the query")
	}
	return r
}

func (p *parser) rowOrRows() {
	if !p.accept("ROWS") {
		p.expect("ROW")
	}
}

// queryExpr: terms joined by UNION [ALL] and EXCEPT; INTERSECT binds tighter.
func (p *parser) queryExpr() rows {
	r := p.queryTerm()
	for p.accept("UNION") || p.accept("EXCEPT") {
		p.accept("ALL")
		r = r.plus(p.queryTerm())
	}
	return r
}

func (p *parser) queryTerm() rows {
	r := p.queryPrimary()
	for p.accept("INTERSECT") {
		r = r.plus(p.queryPrimary())
	}
	return r
}

func (p *parser) queryPrimary() rows {
	if p.acceptPunct("(") {
		r := p.query()
		p.expectPunct(")")
		return r
	}
	if !p.peek().is("SELECT") {
		p.unexpected("SELECT")
	}
	return p.querySpec()
}

// scope collects one SELECT's sources and conditions.
type scope struct {
	tables  []guard.Table
	names   map[string]bool // exposed names, lower case
	sources int             // tables, CTE references, derived tables, table functions
	refs    []string        // exposed names as written, in the order read
	conds   []cond          // WHERE and every ON
	gen     rows            // the rows its sources generate, multiplied
}

// cond is a WHERE or an ON, with the refs of the tables whose rows a bound
// in it limits (nil: all of the scope's; see guard.Bound.Limits).
type cond struct {
	n      *node
	limits []string
}

func (p *parser) addSource(sc *scope, exposed string) {
	sc.sources++
	if exposed == "" {
		return
	}
	sc.refs = append(sc.refs, exposed)
	k := strings.ToLower(exposed)
	if sc.names[k] {
		p.fail(contracts.RefuseUnsupported,
			fmt.Sprintf("two sources in one FROM are both called %s", exposed),
			"give each table its own alias")
	}
	sc.names[k] = true
}

// querySpec: SELECT [ALL|DISTINCT] [TOP …] list [FROM …] [WHERE …]
// [GROUP BY …] [HAVING …] [WINDOW …].
func (p *parser) querySpec() rows {
	p.expect("SELECT")
	sc := &scope{names: map[string]bool{}, gen: rows{n: 1}}
	p.aggs = append(p.aggs, nil)
	if !p.accept("ALL") {
		p.accept("DISTINCT")
	}
	top := math.Inf(1)
	if p.accept("TOP") {
		if p.acceptPunct("(") {
			if x := p.expr(); x.bv.Kind == guard.BoundNumber {
				top = x.bv.Number
			}
			p.expectPunct(")")
		} else if t := p.next(); t.kind != tNumber {
			p.i--
			p.unexpected("a number or ( after TOP")
		} else {
			top, _ = strconv.ParseFloat(t.text, 64)
		}
		if p.accept("PERCENT") {
			top = math.Inf(1)
		}
		if p.peek().is("WITH") && p.peekAt(1).is("TIES") {
			p.i += 2
		}
	}
	p.selectList()
	if p.peek().is("INTO") {
		p.fail(contracts.RefuseNotReadOnly, "SELECT … INTO creates a table and writes the result into it",
			"drop INTO …; the answer comes back to you")
	}
	if p.accept("FROM") {
		p.tableSources(sc)
	}
	p.checkRows(sc.gen)
	if p.accept("WHERE") {
		sc.conds = append(sc.conds, cond{n: p.expr()})
	}
	if p.accept("GROUP") {
		p.expect("BY")
		p.groupBy()
	}
	if p.accept("HAVING") {
		p.expr()
	}
	if p.accept("WINDOW") {
		for {
			p.ident("a window name")
			p.expect("AS")
			p.expectPunct("(")
			p.windowSpec()
			p.expectPunct(")")
			if !p.acceptPunct(",") {
				break
			}
		}
	}
	p.scopes = append(p.scopes, guard.Scope{Tables: sc.tables, Bounds: bounds(sc)})
	p.checkAggs(p.aggs[len(p.aggs)-1], sc.gen)
	p.aggs = p.aggs[:len(p.aggs)-1]
	out := sc.gen
	if !out.tables {
		out.n = math.Min(out.n, math.Max(top, 0))
	}
	return out
}

func (p *parser) selectList() {
	for {
		p.selectItem()
		if !p.acceptPunct(",") {
			return
		}
	}
}

func (p *parser) selectItem() {
	t := p.peek()
	if p.acceptPunct("*") {
		return
	}
	// alias = expression
	if (t.kind == tWord && !reserved[t.upper()] || t.kind == tQuoted || t.kind == tString) && p.peekAt(1).isPunct("=") {
		p.i += 2
		p.expr()
		return
	}
	p.expr()
	p.alias(true)
}

// alias reads an optional [AS] alias; strings count where T-SQL allows them.
func (p *parser) alias(strings bool) string {
	if p.accept("AS") {
		t := p.next()
		if t.kind == tWord || t.kind == tQuoted || strings && t.kind == tString {
			return t.text
		}
		p.i--
		p.unexpected("an alias after AS")
	}
	t := p.peek()
	switch {
	case t.kind == tWord && !reserved[t.upper()] && !notAlias[t.upper()]:
	case t.kind == tQuoted:
	case strings && t.kind == tString:
	default:
		return ""
	}
	p.i++
	return t.text
}

// ident reads one identifier, bare or delimited.
func (p *parser) ident(what string) string {
	t := p.peek()
	if t.kind == tWord && !reserved[t.upper()] || t.kind == tQuoted {
		p.i++
		return t.text
	}
	p.unexpected(what)
	return ""
}

func (p *parser) identList() {
	for {
		p.ident("a column name")
		if !p.acceptPunct(",") {
			return
		}
	}
}

func (p *parser) groupBy() {
	p.accept("ALL")
	for {
		p.groupItem()
		if !p.acceptPunct(",") {
			break
		}
	}
	if p.peek().is("WITH") && (p.peekAt(1).is("ROLLUP") || p.peekAt(1).is("CUBE")) {
		p.i += 2
	}
}

func (p *parser) groupItem() {
	switch t := p.peek(); {
	case (t.is("ROLLUP") || t.is("CUBE")) && p.peekAt(1).isPunct("("):
		p.i++
		p.parenList()
	case t.is("GROUPING") && p.peekAt(1).is("SETS"):
		p.i += 2
		p.expectPunct("(")
		for {
			if p.peek().isPunct("(") && !p.startsQuery() {
				p.i++
				if !p.acceptPunct(")") {
					for {
						p.expr()
						if !p.acceptPunct(",") {
							break
						}
					}
					p.expectPunct(")")
				}
			} else {
				p.groupItem()
			}
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
	case t.isPunct("(") && p.peekAt(1).isPunct(")"):
		p.i += 2
	default:
		p.expr()
	}
}

// parenList: ( expr, … ), where an expr may itself be a parenthesised list.
func (p *parser) parenList() {
	p.expectPunct("(")
	for {
		p.expr()
		if !p.acceptPunct(",") {
			break
		}
	}
	p.expectPunct(")")
}

func (p *parser) orderItems() {
	for {
		p.expr()
		if !p.accept("ASC") {
			p.accept("DESC")
		}
		if !p.acceptPunct(",") {
			return
		}
	}
}

// tableSources: source, source, … each with its joins.
func (p *parser) tableSources(sc *scope) {
	for {
		p.tableSource(sc)
		if !p.acceptPunct(",") {
			return
		}
	}
}

// tableSource reads one source and its joins.
//
// A bound in a join's ON limits only the side the join does not preserve:
// the right side of a LEFT join, the left of a RIGHT join, neither of a
// FULL join; an inner join's ON limits both. APPLY has no ON: whatever its
// right side bounds is that side's own scope.
func (p *parser) tableSource(sc *scope) {
	p.enter()
	defer p.leave()
	start := len(sc.refs)
	p.tablePrimary(sc)
	for {
		t := p.peek()
		switch {
		case t.is("CROSS") && p.peekAt(1).is("JOIN"):
			p.i += 2
			p.tableSource(sc)
		case (t.is("CROSS") || t.is("OUTER")) && p.peekAt(1).is("APPLY"):
			p.i += 2
			p.tablePrimary(sc)
		case t.is("JOIN") || t.is("INNER") || t.is("LEFT") || t.is("RIGHT") || t.is("FULL"):
			p.i++
			if !t.is("JOIN") {
				if !t.is("INNER") {
					p.accept("OUTER")
				}
				if h := p.peek(); h.is("LOOP") || h.is("HASH") || h.is("MERGE") || h.is("REMOTE") {
					p.fail(contracts.RefuseQuerySettings,
						fmt.Sprintf("%s is a join hint: it sets how the server runs the query", h.upper()),
						"drop the join hint")
				}
				p.expect("JOIN")
			}
			mid := len(sc.refs)
			p.tableSource(sc)
			p.expect("ON")
			c := cond{n: p.expr()}
			switch {
			case t.is("LEFT"):
				c.limits = append([]string{}, sc.refs[mid:]...)
			case t.is("RIGHT"):
				c.limits = append([]string{}, sc.refs[start:mid]...)
			case t.is("FULL"):
				c.limits = []string{}
			}
			sc.conds = append(sc.conds, c)
		default:
			return
		}
	}
}

// startsQuery reports whether the ( at the cursor opens a query: the first
// token after its run of ( is SELECT or WITH.
func (p *parser) startsQuery() bool {
	j := p.i
	for j < len(p.toks) && p.toks[j].isPunct("(") {
		j++
	}
	return j < len(p.toks) && (p.toks[j].is("SELECT") || p.toks[j].is("WITH"))
}

func (p *parser) tablePrimary(sc *scope) {
	t := p.peek()
	switch {
	case t.isPunct("(") && p.peekAt(1).is("VALUES"):
		p.i += 2
		n := 0
		for {
			p.parenList()
			n++
			if !p.acceptPunct(",") {
				break
			}
		}
		p.expectPunct(")")
		p.derivedAlias(sc)
		sc.gen = sc.gen.times(rows{n: float64(n)})
	case t.isPunct("(") && p.startsQuery():
		p.i++
		r := p.query()
		p.expectPunct(")")
		p.derivedAlias(sc)
		sc.gen = sc.gen.times(r)
	case t.isPunct("("):
		p.i++
		p.tableSource(sc)
		p.expectPunct(")")
	case t.kind == tTemp:
		p.fail(contracts.RefuseTableNotReadable,
			fmt.Sprintf("%s is a temporary table, kept in tempdb outside this connection's database", t.text),
			"read the connection's own tables")
	case t.kind == tVariable:
		p.fail(contracts.RefuseUnsupported,
			fmt.Sprintf("%s is a table variable; declaring it takes a statement of its own", t.text),
			"read the connection's tables directly")
	case t.kind == tWord && !reserved[t.upper()] || t.kind == tQuoted || t.kind == tWord && externalTableFunctions[t.upper()]:
		p.namedSource(sc)
	default:
		p.unexpected("a table")
	}
	p.pivot(sc)
}

// derivedAlias: the alias a derived table or VALUES needs, and its columns.
func (p *parser) derivedAlias(sc *scope) {
	a := p.alias(false)
	if a == "" {
		p.unexpected("an alias for the derived table")
	}
	if p.acceptPunct("(") {
		p.identList()
		p.expectPunct(")")
	}
	p.addSource(sc, a)
}

// namedSource: a table, view or CTE by name, or a table function call.
func (p *parser) namedSource(sc *scope) {
	start := p.peek()
	parts := p.tableName()
	if isHintList(p.toks, p.i) {
		p.hints()
	}
	if p.peek().isPunct("(") {
		p.tableFunction(sc, start, parts)
		return
	}
	name := parts[len(parts)-1]
	var tbl guard.Table
	switch len(parts) {
	case 1:
		for _, c := range p.ctes {
			same, caseOnly := sameName(c, name)
			if caseOnly {
				p.fail(contracts.RefuseUnsupported,
					fmt.Sprintf("%s differs from the CTE %s only in case: in a database with a case-sensitive collation SQL Server reads a table of that name instead", name, c),
					fmt.Sprintf("refer to the CTE exactly as it is defined: %s", c))
			}
			if same {
				p.sourceTail(sc, name, nil)
				sc.gen = sc.gen.times(p.cteSource(c))
				return
			}
		}
		tbl = guard.Table{Name: name}
	case 2:
		tbl = guard.Table{Schema: parts[0], Name: name}
	case 3:
		if parts[0] == "" {
			p.unexpected("a database name")
		}
		tbl = guard.Table{Catalog: parts[0], Schema: parts[1], Name: name}
	default:
		p.fail(contracts.RefuseTableNotReadable,
			fmt.Sprintf("%s is a four-part name: it reads through the linked server %s", strings.Join(parts, "."), parts[0]),
			"read only this connection's own database, as schema.table")
	}
	resolveSystem(&tbl)
	p.sourceTail(sc, name, &tbl)
	sc.gen.tables = true
}

// cteSource is the rows a reference to the CTE name generates; a
// reference inside its own definition is the recursion.
func (p *parser) cteSource(name string) rows {
	k := strings.ToLower(name)
	for _, d := range p.defining {
		if d == k {
			return rows{n: 1, recursive: true}
		}
	}
	if r, ok := p.cteRows[k]; ok {
		return r
	}
	return rows{n: 1, tables: true}
}

// resolveSystem marks a table in SQL Server's own catalogs System and fills
// in the schema SQL Server resolves it to: sys.* and INFORMATION_SCHEMA.*,
// and the compatibility views (sysobjects, syscomments, …), which SQL Server
// finds in sys when they are written bare or under dbo.
func resolveSystem(t *guard.Table) {
	t.Schema, t.System = SystemSchema(t.Schema, t.Name)
}

// SystemSchema resolves schema.name (schema empty when unqualified) as SQL
// Server does for its own catalogs: it returns the schema the name resolves
// to and whether that is one of SQL Server's catalogs (sys,
// INFORMATION_SCHEMA, or a compatibility view such as sysobjects written
// bare or under dbo). The executor holds the objects of the server's plan to
// the same rule.
func SystemSchema(schema, name string) (string, bool) {
	s := strings.ToLower(schema)
	switch {
	case s == "sys" || s == "information_schema":
		return schema, true
	case (s == "" || s == "dbo") && compatViews[strings.ToLower(name)]:
		return "sys", true
	}
	return schema, false
}

// compatViews are SQL Server's system compatibility views: the system tables
// of SQL Server 2000 kept as views in sys, which resolve without a schema.
var compatViews = set(`sysaltfiles syscacheobjects syscharsets syscolumns syscomments sysconfigures
sysconstraints syscurconfigs syscursorcolumns syscursorrefs syscursors syscursortables sysdatabases
sysdepends sysdevices sysfilegroups sysfiles sysforeignkeys sysfulltextcatalogs sysindexes sysindexkeys
syslanguages syslockinfo syslogins sysmembers sysmessages sysobjects sysoledbusers sysopentapes
sysperfinfo syspermissions sysprocesses sysprotects sysreferences sysremotelogins sysservers systypes
sysusers`)

// tableName reads a dotted name of up to four parts; a middle part may be
// empty (db..table names the database's default schema).
func (p *parser) tableName() []string {
	first := p.next()
	if first.kind != tWord && first.kind != tQuoted {
		p.i--
		p.unexpected("a table name")
	}
	parts := []string{first.text}
	for p.acceptPunct(".") {
		if len(parts) == 4 {
			p.i--
			p.unexpected("a name of at most four parts")
		}
		if p.peek().isPunct(".") {
			parts = append(parts, "")
			continue
		}
		t := p.next()
		if t.kind != tQuoted && (t.kind != tWord || reserved[t.upper()]) {
			p.i--
			p.unexpected("a name after '.'")
		}
		parts = append(parts, t.text)
	}
	return parts
}

func (p *parser) tableFunction(sc *scope, start token, parts []string) {
	name := strings.ToUpper(parts[len(parts)-1])
	switch {
	case len(parts) == 1 && start.kind == tWord && tableFunctions[name]:
		_, args, _ := p.args(name)
		p.sourceTail(sc, "", nil)
		switch {
		case name == "GENERATE_SERIES":
			sc.gen = sc.gen.times(p.seriesRows(args))
		case len(args) > 0 && args[0].sz.data:
			sc.gen.tables = true // STRING_SPLIT of a value read from the database
		case len(args) > 0:
			sc.gen = sc.gen.times(rows{n: args[0].sz.bytes + 1})
		}
		return
	case len(parts) == 1 && start.kind == tWord && externalTableFunctions[name]:
		p.fail(contracts.RefuseTableFunction,
			fmt.Sprintf("%s reads from outside the query's tables (files, other servers, text, documents or change tracking)", name),
			"read the connection's tables; allowed table functions: "+allowedList(tableFunctions))
	}
	p.fail(contracts.RefuseTableFunction,
		fmt.Sprintf("%s is a table-valued function the guard does not allow here", strings.Join(parts, ".")),
		"read the connection's tables; allowed table functions: "+allowedList(tableFunctions))
}

// isHintList reports whether the ( at i holds table hints: an old-style
// hint list written without WITH, FROM t (NOLOCK).
func isHintList(toks []token, i int) bool {
	if !toks[i].isPunct("(") || i+2 >= len(toks) {
		return false
	}
	h := toks[i+1]
	return h.kind == tWord && (lockHints[h.upper()] || otherHints[h.upper()]) && (toks[i+2].isPunct(")") || toks[i+2].isPunct(","))
}

// otherHints are table hints that do not lock but set how a table is read.
var otherHints = set(`NOLOCK READUNCOMMITTED READCOMMITTED READPAST NOWAIT SNAPSHOT INDEX FORCESEEK FORCESCAN
NOEXPAND KEEPIDENTITY KEEPDEFAULTS IGNORE_CONSTRAINTS IGNORE_TRIGGERS SPATIAL_WINDOW_MAX_CELLS`)

// sourceTail reads what may follow a named source: FOR SYSTEM_TIME,
// TABLESAMPLE, an alias, and table hints.
func (p *parser) sourceTail(sc *scope, name string, tbl *guard.Table) {
	if p.peek().is("FOR") && p.peekAt(1).is("SYSTEM_TIME") {
		p.fail(contracts.RefuseUnsupported, "FOR SYSTEM_TIME (temporal tables) is not read by the guard",
			"read the current table, or its history table by name")
	}
	if p.peek().is("TABLESAMPLE") {
		p.fail(contracts.RefuseUnsupported, "TABLESAMPLE is not read by the guard", "bound the rows with TOP or WHERE")
	}
	a := p.alias(false)
	if p.peek().is("WITH") && p.peekAt(1).isPunct("(") {
		p.i++
		p.hints()
	}
	if isHintList(p.toks, p.i) {
		p.hints()
	}
	if p.acceptPunct("(") { // a column list after a table function's alias
		p.identList()
		p.expectPunct(")")
	}
	exposed := a
	if exposed == "" {
		exposed = name
	}
	p.addSource(sc, exposed)
	if tbl != nil {
		tbl.Alias = a
		sc.tables = append(sc.tables, *tbl)
	}
}

// hints refuses a table hint list: a lock hint as not read-only, any other
// as a setting of the query's own.
func (p *parser) hints() {
	p.expectPunct("(")
	for t := p.peek(); t.kind != tEOF && !t.isPunct(")"); t = p.peek() {
		if t.kind == tWord && lockHints[t.upper()] {
			p.fail(contracts.RefuseNotReadOnly, fmt.Sprintf("the table hint %s takes or holds locks", t.upper()),
				"drop the table hint; the query runs in a snapshot transaction")
		}
		p.i++
	}
	p.fail(contracts.RefuseQuerySettings, "a table hint sets how the server reads the table",
		"drop the WITH (…) table hint")
}

// pivot reads PIVOT (agg(x) FOR col IN (…)) alias or UNPIVOT (v FOR n IN
// (…)) alias after a source.
func (p *parser) pivot(sc *scope) {
	for {
		t := p.peek()
		if !t.is("PIVOT") && !t.is("UNPIVOT") {
			return
		}
		p.i++
		p.expectPunct("(")
		if t.is("PIVOT") {
			p.expr()
		} else {
			p.ident("a value column")
		}
		p.expect("FOR")
		p.columnRef()
		p.expect("IN")
		p.expectPunct("(")
		p.identList()
		p.expectPunct(")")
		p.expectPunct(")")
		a := p.alias(false)
		if a == "" {
			p.unexpected("an alias for the " + t.upper())
		}
		p.addSource(sc, a)
	}
}

func (p *parser) columnRef() {
	p.ident("a column")
	for p.acceptPunct(".") {
		p.ident("a column")
	}
}
