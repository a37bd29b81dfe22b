// Package sqlite is the guard's reader for SQLite: it reads a statement with
// SQLite's own compiler and authorizer, on a connection that holds the
// database's schema, and reduces it to the guard's neutral shape.
//
// What decides what, for one statement:
//   - a lexer that follows SQLite's tokenizer splits the text: empty, more
//     than one statement, and the first keyword (SELECT, WITH, VALUES, or
//     PRAGMA of a read-only metadata pragma) are refused before SQLite sees
//     anything;
//   - SQLite compiles the statement (sqlite3_prepare, nothing executes) under
//     Authorizer, which allows only reads, the allowlisted functions and the
//     metadata pragmas and records every table read — CTE scoping and view
//     expansion are SQLite's own — and the first denial, which becomes the
//     refusal; SQLite's syntax errors are its own words;
//   - SQLite compiles the text again with a stray ")" after it: that fails
//     unless SQLite's first statement ends before the end of the text, so
//     SQLite itself proves the text is one statement;
//   - a small reader of SQLite's SELECT grammar places each table in the
//     SELECT that names it and finds the lower bounds of that SELECT's WHERE
//     and join conditions. A table SQLite reads that this reader did not
//     place (through a view, or a statement it could not follow) is put in a
//     scope with no bound, so a large table read there is refused.
package sqlite

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// Compiler compiles the first statement of sql with SQLite's own parser on a
// connection that holds the database's schema, with auth installed as the
// connection's authorizer, and returns the names of its result columns. It
// must execute nothing.
type Compiler interface {
	Compile(sql string, auth sqlite.AuthorizerFn) (columns []string, err error)
}

// CompilerFunc adapts a function to Compiler.
type CompilerFunc func(sql string, auth sqlite.AuthorizerFn) ([]string, error)

// Compile calls f.
func (f CompilerFunc) Compile(sql string, auth sqlite.AuthorizerFn) ([]string, error) {
	return f(sql, auth)
}

// Reader reads SQLite statements; it implements guard.Reader.
type Reader struct {
	// Compiler compiles on a connection to the database the statement is for.
	Compiler Compiler
	// Policy's readable patterns are held by the authorizer while SQLite
	// compiles (a table, or the table a metadata pragma names); the zero
	// Policy lets every table be read and leaves the rules to guard.Apply.
	Policy guard.Policy
}

var (
	_ guard.Reader     = Reader{}
	_ guard.NameLister = Reader{}
)

// Reading is everything Inspect learned about one statement.
type Reading struct {
	guard.Statement
	// Columns are the names of the result columns, as SQLite names them.
	Columns []string
	// Reads are the table reads SQLite's authorizer allowed.
	Reads []Read
	// Functions are the functions the statement calls, lower case.
	Functions []string
	// Followed is false when the scope reader could not follow the
	// statement's structure: no bound was credited anywhere.
	Followed bool
	// CTEs are the names SQLite reported a read of with no column and no
	// database that name no table, view or virtual table of the database:
	// CTEs (the statement's, or a view's). The statement runs under
	// StatementAuthorizer with them, as it was compiled here.
	CTEs []string
}

// CompileError is SQLite's own refusal to compile a statement that the
// authorizer did not deny: a syntax error, a missing table or column.
type CompileError struct {
	// Err is the driver's error, with SQLite's result code.
	Err error
	// Fingerprint is the statement's canonical fingerprint, so a statement
	// that fails to compile can still be recognised when it is sent again.
	Fingerprint string
}

func (e *CompileError) Error() string { return e.Err.Error() }
func (e *CompileError) Unwrap() error { return e.Err }

// Read implements guard.Reader. A statement SQLite cannot compile is refused
// as unparsable, with SQLite's words.
func (r Reader) Read(sql string) (*guard.Statement, *contracts.Refusal) {
	rd, err := r.Inspect(sql)
	if err != nil {
		var ref *contracts.Refusal
		if errors.As(err, &ref) {
			return nil, ref
		}
		return nil, guard.Refuse(contracts.RefuseUnparsable, "SQLite cannot compile the statement: "+err.Error(),
			"write it in SQLite's dialect, with the tables and columns the schema has")
	}
	return &rd.Statement, nil
}

// Inspect reads one statement. Its error is a *contracts.Refusal, a
// *CompileError, or the Compiler's own failure.
func (r Reader) Inspect(sql string) (*Reading, error) {
	toks, end, ref := split(sql)
	if ref != nil {
		return nil, ref
	}
	stmt, text := first(sql, toks, end)

	lead := stmt[0]
	isPragma := lead.is("PRAGMA")
	var sh *shape
	switch {
	case lead.is("SELECT"), lead.is("WITH"), lead.is("VALUES"):
		// WITH … DELETE is a DELETE: refused before SQLite compiles it.
		sh = readShape(stmt)
		verb := sh.verb
		if verb == "" {
			// The scope reader stopped inside a CTE: find the body's verb
			// the plain way, and leave the rest to SQLite.
			verb = bodyVerb(stmt)
		}
		if verb != "SELECT" && verb != "VALUES" {
			return nil, leadRefusal(token{kind: kWord, text: verb})
		}
	case isPragma:
		if ref := checkPragma(stmt); ref != nil {
			return nil, ref
		}
	default:
		return nil, leadRefusal(lead)
	}
	if ref := onlyOne(toks, end); ref != nil {
		return nil, ref
	}
	if ref := deniedByName(stmt); ref != nil {
		return nil, ref
	}
	if ref := checkWork(stmt); ref != nil { // work.go
		return nil, ref
	}

	// SQLite reports a CTE read with none of its columns used as it reports
	// count(*) of an unqualified table: the read is the CTE's only when no
	// table, view or virtual table answers to the name. Each such read the
	// patterns deny is looked up, and the statement compiled again with the
	// names that proved to be CTEs'.
	var (
		ctes   []string
		looked = map[string]bool{}
		rec    *Record
		cols   []string
		err    error
	)
	for {
		rec = &Record{}
		cols, err = r.Compiler.Compile(text, StatementAuthorizer(r.Policy, rec, ctes))
		name := foldASCII(rec.deniedBareRead())
		if name == "" || looked[name] || len(looked) == maxLookups {
			break
		}
		looked[name] = true
		if !r.absent(name) {
			break
		}
		ctes = append(ctes, name)
	}
	if ref, _ := rec.Denied(); ref != nil {
		return nil, ref
	}
	if err != nil {
		return nil, &CompileError{Err: err, Fingerprint: (&guard.Statement{Canonical: canonical(stmt)}).Fingerprint()}
	}
	// A table created under a CTE's name between the look-up and the compile
	// would have been read as the CTE: look again at the names read so.
	for _, name := range rec.CTEReads() {
		if !r.absent(name) {
			return nil, guard.Refuse(contracts.RefuseTableNotReadable,
				fmt.Sprintf("a table named %s, like a CTE the statement reads, appeared while SQLite read the statement", name),
				"send the statement again, or give the CTE a name no table has")
		}
	}
	// The proof that SQLite's first statement is the whole text: with a
	// stray ")" after it the text no longer compiles.
	if _, err := r.Compiler.Compile(text+"\n)", StatementAuthorizer(r.Policy, nil, ctes)); err == nil {
		return nil, guard.Refuse(contracts.RefuseEngineParse,
			"SQLite reads the text as more than one statement: its first statement ends before the text does",
			"send exactly one SELECT, with no ';' inside it")
	}
	if len(cols) == 0 {
		return nil, guard.Refuse(contracts.RefuseNotASelect, "the statement returns no columns",
			"write one SELECT that returns the columns you need")
	}

	rd := &Reading{Columns: cols, Reads: rec.Reads(), Functions: rec.Functions(), Followed: true, CTEs: ctes}
	rd.Text = text
	rd.Canonical = canonical(stmt)
	rd.Names = guard.NamesASCIIFold
	if isPragma {
		return rd, nil
	}
	rd.Followed = sh.err == nil
	rd.Scopes = merge(sh, rd.Reads)
	addReadColumns(rd.Scopes, rd.Reads)
	rd.ColumnsRead = true
	return rd, nil
}

// Names implements guard.NameLister. Read compiles a statement against the
// database's schema, so one that names a table or column the database lacks
// is refused with no Statement; Names reads the same text with the scope
// reader alone, without the schema: each SELECT's tables (unqualified names
// left in no schema) and the column names it writes (Scope.Columns). It
// refuses only what it cannot read — not one statement, not a SELECT, a
// shape the scope reader does not follow — and checks nothing else: its
// Statement names what the text refers to and never says it may run.
func (r Reader) Names(sql string) (*guard.Statement, *contracts.Refusal) {
	toks, end, ref := split(sql)
	if ref != nil {
		return nil, ref
	}
	stmt, text := first(sql, toks, end)
	if lead := stmt[0]; !lead.is("SELECT") && !lead.is("WITH") && !lead.is("VALUES") {
		return nil, leadRefusal(lead)
	}
	if ref := onlyOne(toks, end); ref != nil {
		return nil, ref
	}
	sh := readShape(stmt)
	verb := sh.verb
	if verb == "" {
		verb = bodyVerb(stmt)
	}
	if verb != "SELECT" && verb != "VALUES" {
		return nil, leadRefusal(token{kind: kWord, text: verb})
	}
	if sh.err != nil {
		return nil, guard.Refuse(contracts.RefuseUnsupported,
			"the guard cannot follow the statement's structure: "+sh.err.Error(),
			"write it as one SELECT in SQLite's dialect")
	}
	for i := range sh.scopes {
		for j := range sh.scopes[i].Tables {
			t := &sh.scopes[i].Tables[j]
			t.System = systemTable(t.Name)
		}
	}
	return &guard.Statement{Text: text, Canonical: canonical(stmt), Scopes: sh.scopes, Names: guard.NamesASCIIFold, ColumnsRead: true}, nil
}

// split lexes sql after the checks every reading begins with and returns
// its tokens and the index of the token that ends the first statement (a
// ';' or the end).
func split(sql string) (toks []token, end int, ref *contracts.Refusal) {
	if ref := guard.CheckShape(sql, guard.LexSQLite); ref != nil { // before any native parser: docs/guard.md
		return nil, 0, ref
	}
	switch {
	case strings.IndexByte(sql, 0) >= 0:
		return nil, 0, guard.Refuse(contracts.RefuseUnparsable, "the statement contains a NUL byte",
			"remove the NUL byte; SQLite would ignore everything after it")
	case !utf8.ValidString(sql):
		return nil, 0, guard.Refuse(contracts.RefuseUnparsable, "the statement is not valid UTF-8", "send the statement as UTF-8 text")
	}
	toks = lex(sql)
	first := 0
	for toks[first].kind == kSemi {
		first++
	}
	if toks[first].kind == kEOF {
		return nil, 0, guard.Refuse(contracts.RefuseEmpty, "the statement is empty (only whitespace, comments or ';')",
			"send one SELECT statement")
	}
	end = first
	for toks[end].kind != kEOF && toks[end].kind != kSemi {
		end++
	}
	return toks, end, nil
}

// first returns the first statement's tokens, ending with kEOF, and its text.
func first(sql string, toks []token, end int) (stmt []token, text string) {
	start := 0
	for toks[start].kind == kSemi {
		start++
	}
	stmt = append(toks[start:end:end], token{kEOF, len(sql), ""})
	last := toks[end-1]
	return stmt, sql[toks[start].pos : last.pos+len(last.text)]
}

// onlyOne refuses a text with a statement after the first one.
func onlyOne(toks []token, end int) *contracts.Refusal {
	for j := end; toks[j].kind != kEOF; j++ {
		if toks[j].kind != kSemi {
			return guard.Refuse(contracts.RefuseNotOneStatement,
				fmt.Sprintf("the text holds more than one statement: after the ';' at byte %d another begins with %s", toks[end].pos, describe(toks[j])),
				"send exactly one SELECT per call: remove the ';' and everything after it")
		}
	}
	return nil
}

// maxLookups bounds the names Inspect looks up for one statement; a read
// of a further one is held to the patterns as a table's.
const maxLookups = 32

// absent reports whether no table, view or virtual table of the database
// answers to name: SQLite's own lookup of the bare name, compiling
// SELECT 1 FROM "name", fails with SQLITE_ERROR (no such table). A name that
// compiles, or fails any other way (denied, busy, interrupted, a Compiler
// that is no SQLite connection), is a table's, and a read of it is held to
// the patterns.
func (r Reader) absent(name string) bool {
	probe := `SELECT 1 FROM "` + strings.ReplaceAll(name, `"`, `""`) + `"`
	_, err := r.Compiler.Compile(probe, Authorizer(guard.Policy{}, nil))
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_ERROR
}

// deniedByName refuses a call of a function of a denied family by its name,
// before SQLite compiles it: SQLite says only "no such function" of one this
// build does not have (readfile, writefile), and the authorizer is never
// asked about it.
func deniedByName(stmt []token) *contracts.Refusal {
	for i, t := range stmt[:len(stmt)-1] {
		if t.kind != kWord || !stmt[i+1].op("(") || allowedFunction(t.text) {
			continue
		}
		if fam := deniedFamily(t.text); !strings.HasPrefix(fam, "it is not on") {
			return guard.Refuse(contracts.RefuseFunctionDenied,
				fmt.Sprintf("the function %s is denied: %s", t.text, fam),
				"compute it with the core, aggregate, window, date, math and JSON functions, or leave it out")
		}
	}
	return nil
}

// checkPragma allows PRAGMA [schema.]name[(arg) | = arg] for the read-only
// metadata pragmas only; the table it names is the authorizer's to check.
func checkPragma(stmt []token) *contracts.Refusal {
	i := 1
	if i+2 < len(stmt) && stmt[i+1].op(".") {
		i += 2
	}
	name := stmt[i]
	if (name.kind == kWord || name.kind == kIdent) && metadataPragmas[strings.ToLower(name.name())] {
		return nil
	}
	return guard.Refuse(contracts.RefuseNotASelect,
		fmt.Sprintf("PRAGMA %s is not one of the read-only metadata pragmas", name.text),
		"read the schema with PRAGMA "+strings.Join(sortedKeys(metadataPragmas), ", ")+", or SELECT … FROM sqlite_master")
}

// statementWords are the keywords a SQLite statement can begin with; a text
// that begins with anything else is not SQL SQLite can parse.
var statementWords = set("ALTER", "ANALYZE", "ATTACH", "BEGIN", "COMMIT", "CREATE", "DELETE", "DETACH",
	"DROP", "END", "EXPLAIN", "INSERT", "PRAGMA", "REINDEX", "RELEASE", "REPLACE", "ROLLBACK",
	"SAVEPOINT", "SELECT", "UPDATE", "VACUUM", "VALUES", "WITH")

// leadRefusal refuses a statement by the keyword it begins with: a statement
// of another kind is not a SELECT; a text SQLite could not even begin to
// parse (SELEC 1) is unparsable.
func leadRefusal(t token) *contracts.Refusal {
	if t.kind == kWord && statementWords[strings.ToUpper(t.text)] {
		return notASelect(t)
	}
	what := describe(t)
	if t.text == "" {
		what = "nothing SQLite can read"
	}
	return guard.Refuse(contracts.RefuseUnparsable,
		fmt.Sprintf("SQLite cannot parse the statement: no SQLite statement begins with %s", what),
		"write one SELECT (or WITH … SELECT, or VALUES) in SQLite's dialect; check the spelling of the first keyword")
}

// bodyVerb finds the keyword the body of a WITH statement begins with: the
// word after the last CTE's closing parenthesis. Empty when there is none.
func bodyVerb(stmt []token) string {
	depth := 0
	for i, t := range stmt {
		switch {
		case t.op("("):
			depth++
		case t.op(")"):
			depth--
			if depth == 0 && i+1 < len(stmt) {
				if n := stmt[i+1]; n.kind == kWord && !n.is("AS") {
					return strings.ToUpper(n.text)
				}
			}
		}
	}
	return ""
}

func notASelect(t token) *contracts.Refusal {
	fix := "rewrite it as a single SELECT (or WITH … SELECT) that reads what you need; nothing may change the database"
	switch strings.ToUpper(t.text) {
	case "EXPLAIN":
		fix = "run the SELECT itself with run_read_query; plans are not read here"
	case "ATTACH", "DETACH":
		fix = "read only this connection's own database"
	}
	return guard.Refuse(contracts.RefuseNotASelect,
		fmt.Sprintf("only a SELECT (or WITH … SELECT, VALUES, or a metadata PRAGMA) may run; this statement begins with %s", describe(t)), fix)
}

// merge builds the statement's scopes: the scope reader's, each keeping only
// the tables SQLite confirms it reads, and one more scope, with no bound,
// holding every table SQLite reads that the scope reader did not place —
// read through a view, or in a statement it could not follow.
func merge(sh *shape, reads []Read) []guard.Scope {
	key := func(schema, name string) string {
		if schema == "" || strings.EqualFold(schema, "main") {
			schema = "main"
		}
		return foldASCII(schema + "." + name)
	}
	confirmed := map[string]bool{}
	for _, rd := range reads {
		if rd.Via == "" || sh.ctes[foldASCII(rd.Via)] {
			confirmed[key(rd.Database, rd.Table)] = true
		}
	}
	placed := map[string]bool{}
	var scopes []guard.Scope
	for _, sc := range sh.scopes {
		var tables []guard.Table
		for _, t := range sc.Tables {
			// SQLite reports a read of sqlite_schema (and its other
			// aliases) as one of sqlite_master.
			switch foldASCII(t.Name) {
			case "sqlite_schema":
				t.Name = "sqlite_master"
			case "sqlite_temp_schema":
				t.Name = "sqlite_temp_master"
			}
			t.System = systemTable(t.Name)
			k := key(t.Schema, t.Name)
			if confirmed[k] {
				tables = append(tables, t)
				placed[k] = true
			}
		}
		if len(tables) > 0 {
			scopes = append(scopes, guard.Scope{Tables: tables, Bounds: sc.Bounds})
		}
	}
	var rest guard.Scope
	seen := map[string]bool{}
	for _, rd := range reads {
		k := key(rd.Database, rd.Table)
		viaView := rd.Via != "" && !sh.ctes[foldASCII(rd.Via)]
		if (placed[k] && !viaView) || seen[k] {
			continue
		}
		seen[k] = true
		schema := rd.Database
		if schema == "" {
			schema = "main"
		}
		rest.Tables = append(rest.Tables, guard.Table{Schema: schema, Name: rd.Table, System: systemTable(rd.Table)})
	}
	if len(rest.Tables) > 0 {
		scopes = append(scopes, rest)
	}
	return scopes
}

// canonical is the statement's tokens, one space apart, keywords and bare
// identifiers in lower case (SQLite reads them case-insensitively), quoted
// identifiers and literals exactly as written, comments and terminators gone.
func canonical(stmt []token) string {
	var b strings.Builder
	for i, t := range stmt {
		if t.kind == kEOF {
			break
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if t.kind == kWord {
			b.WriteString(strings.ToLower(t.text))
		} else {
			b.WriteString(t.text)
		}
	}
	return b.String()
}

// systemTable reports whether SQLite keeps the table itself: the schema table
// under any of its names (sqlite_schema, sqlite_master, sqlite_temp_schema,
// sqlite_temp_master) and the other sqlite_ tables (sqlite_sequence,
// sqlite_stat1, sqlite_stat4, which holds sampled index keys). SQLite keeps
// the sqlite_ prefix for itself: no user table has it.
func systemTable(name string) bool { return strings.HasPrefix(foldASCII(name), "sqlite_") }

// foldASCII folds the ASCII letters only, as SQLite compares identifiers.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
