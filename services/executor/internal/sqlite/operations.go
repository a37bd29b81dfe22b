package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	guardsqlite "github.com/sondehq/sonde/pkg/guard/sqlite"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"modernc.org/sqlite"
)

var _ engine.Operator = (*Engine)(nil)

// The operational readings of a SQLite file. SQLite is a library inside
// the executor, not a server: it has no sessions and keeps no record of
// the statements run against the file, so those two kinds are refused.
// The others read sqlite_schema, sqlite_stat1 (what ANALYZE wrote), the
// dbstat virtual table (the pages each b-tree holds) and a few read-only
// pragmas, under opsAuthorizer.
const (
	// OpsObjectsSQL lists the ordinary tables and their indexes (SQLite's
	// own sqlite_ tables left out, a table's automatic indexes kept).
	OpsObjectsSQL = `SELECT type, name, tbl_name FROM sqlite_schema ` +
		`WHERE type IN ('table', 'index') AND rootpage <> 0 AND tbl_name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY tbl_name, name`

	// OpsIndexListSQL reads whether each index of the ordinary tables is
	// unique.
	OpsIndexListSQL = `SELECT s.name, il.name, il."unique" FROM sqlite_schema AS s, pragma_index_list(s.name, 'main') AS il ` +
		`WHERE s.type = 'table' AND s.rootpage <> 0 AND s.name NOT LIKE 'sqlite\_%' ESCAPE '\'`

	// OpsStat1SQL reads ANALYZE's row counts: the first figure of each
	// stat is the rows of the table (or of its index); sent only when
	// sqlite_stat1 exists.
	OpsStat1SQL = `SELECT tbl, max(CAST(substr(stat, 1, instr(stat || ' ', ' ') - 1) AS INTEGER)) FROM sqlite_stat1 GROUP BY tbl`

	// OpsHasStat1SQL says whether ANALYZE has written sqlite_stat1.
	OpsHasStat1SQL = `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat1'`

	// OpsSizesSQL reads the bytes of every b-tree (dbstat's aggregate
	// form: one row per table or index). dbstat visits every page, so it
	// is sent only for a file of at most DBStatMaxBytes.
	OpsSizesSQL = `SELECT name, pgsize FROM dbstat('main', 1)`

	// OpsPagesSQL reads the file's pages.
	OpsPagesSQL = `SELECT p.page_count, s.page_size, f.freelist_count ` +
		`FROM pragma_page_count() AS p, pragma_page_size() AS s, pragma_freelist_count() AS f`

	// OpsHealthSQL reads the settings health reports.
	OpsHealthSQL = `SELECT sqlite_version(), j.journal_mode, v.schema_version, a.auto_vacuum, e.encoding ` +
		`FROM pragma_journal_mode() AS j, pragma_schema_version() AS v, pragma_auto_vacuum() AS a, pragma_encoding() AS e`

	// OpsQuickCheckSQL runs quick_check (which stops at 100 problems), its
	// report read to QuickCheckRows of them; sent only for a file of at
	// most DBStatMaxBytes, since it reads every page.
	OpsQuickCheckSQL = `SELECT quick_check FROM pragma_quick_check() LIMIT 10`
)

// QuickCheckRows bounds the problems quick_check reports (OpsQuickCheckSQL).
const QuickCheckRows = 10

// DBStatMaxBytes is the largest file whose pages a reading visits (dbstat
// sizes, quick_check): past it those figures are NULL, not a full read of a
// production file under a reading's timeout.
const DBStatMaxBytes = 512 << 20

// opsReadable are the system tables and virtual tables the operational
// statements read.
var opsReadable = map[string]bool{"sqlite_master": true, "sqlite_stat1": true, "dbstat": true}

// opsPragmas are the pragmas they call, each with the argument it may
// take: none (a pragma given a value would set it) or a table's name
// (index_list).
var opsPragmas = map[string]func(arg string) bool{
	"index_list":     func(string) bool { return true },
	"page_count":     noArg,
	"page_size":      noArg,
	"freelist_count": noArg,
	"journal_mode":   noArg,
	"schema_version": noArg,
	"auto_vacuum":    noArg,
	"encoding":       noArg,
	"quick_check":    noArg,
}

func noArg(a string) bool { return a == "" }

// opsAuthorizer is the authorizer of the engine's own operational
// statements, never a caller's: catalogAuthorizer's rules, plus reads of
// dbstat and the pragmas of opsPragmas on main with their allowed
// arguments. Writes, DDL, ATTACH and every other pragma stay denied.
func opsAuthorizer(rec *guardsqlite.Record) sqlite.AuthorizerFn {
	base := catalogAuthorizer(rec)
	return func(action sqlite.AuthorizerActionCode, arg1, arg2, db, via string) sqlite.AuthorizerReturnCode {
		main := db == "" || db == DefaultSchema
		switch action {
		case sqlite.AuthRead:
			name := foldASCII(arg1)
			if opsReadable[name] && main {
				return sqlite.AuthorizerOK
			}
			if ok := opsPragmas[strings.TrimPrefix(name, "pragma_")]; ok != nil && strings.HasPrefix(name, "pragma_") {
				return sqlite.AuthorizerOK
			}
		case sqlite.AuthPragma:
			if ok := opsPragmas[foldASCII(arg1)]; ok != nil && main && ok(arg2) {
				return sqlite.AuthorizerOK
			}
		}
		return base(action, arg1, arg2, db, via)
	}
}

// liteReading is what one operational reading holds: the engine and the
// catalog run its statements go through.
type liteReading struct {
	e *Engine
	c *catalogRun
}

// readings are SQLite's operational readings.
var readings = engine.Readings[liteReading]{
	Engine: "SQLite",
	Refused: map[contracts.OperationsKind]string{
		contracts.OpsSessions:    "SQLite is a library reading a file, not a server: the file has no sessions to list",
		contracts.OpsSlowQueries: "SQLite keeps no record of the statements run against a file, so none can be reported as slow",
	},
	Take: map[contracts.OperationsKind]func(liteReading, *engine.Reading) error{
		contracts.OpsTableStats: func(l liteReading, r *engine.Reading) error { return l.e.tableStats(l.c, r) },
		contracts.OpsIndexStats: func(l liteReading, r *engine.Reading) error { return l.e.indexStats(l.c, r) },
		contracts.OpsStorage:    func(l liteReading, r *engine.Reading) error { return l.e.storage(l.c, r) },
		contracts.OpsHealth:     func(l liteReading, r *engine.Reading) error { return l.e.health(l.c, r) },
	},
}

// Operations takes one operational reading (engine.Operator). The
// connection's readable patterns hold it: a table they hide, and its
// indexes, are left out and counted.
func (e *Engine) Operations(ctx context.Context, req engine.Request, kind contracts.OperationsKind) (engine.Reading, error) {
	var r engine.Reading
	// A kind SQLite cannot give is refused before the file is opened.
	if err := readings.Check(kind); err != nil {
		return r, err
	}
	var cat engine.Catalog
	err := e.operations(ctx, req, &cat, func(c *catalogRun) error {
		return readings.Read(liteReading{e: e, c: c}, &r, kind)
	})
	r.SQL, r.Statements, r.Duration = cat.SQL, cat.Statements, cat.Duration
	return r, err
}

// operations is catalog (catalog.go) under opsAuthorizer.
func (e *Engine) operations(ctx context.Context, req engine.Request, out *engine.Catalog, fn func(*catalogRun) error) error {
	return e.composed(ctx, req, out, opsAuthorizer, fn)
}

// tableReadable reports whether the readable patterns allow the table.
func (e *Engine) tableReadable(name string) bool {
	return e.policy.CanRead(guard.NamesASCIIFold, guard.Table{Schema: DefaultSchema, Name: name})
}

// object is a table or an index of the file.
type object struct {
	typ, name, table string
}

// objects reads the tables and indexes (OpsObjectsSQL).
func (c *catalogRun) objects() ([]object, error) {
	var out []object
	err := c.query(OpsObjectsSQL, nil, func(rows *sql.Rows) error {
		var o object
		if err := rows.Scan(&o.typ, &o.name, &o.table); err != nil {
			return err
		}
		out = append(out, o)
		return nil
	})
	return out, err
}

// pages reads the file's page count, page size and free pages.
func (c *catalogRun) pages() (count, size, free int64, err error) {
	err = c.query(OpsPagesSQL, nil, func(rows *sql.Rows) error {
		return rows.Scan(&count, &size, &free)
	})
	return count, size, free, err
}

// sizes reads the bytes of every b-tree by name (folded), or nil when the
// file is larger than DBStatMaxBytes.
func (c *catalogRun) sizes(r *engine.Reading) (map[string]int64, error) {
	count, size, _, err := c.pages()
	if err != nil {
		return nil, err
	}
	if count*size > DBStatMaxBytes {
		r.Note(fmt.Sprintf("bytes is NULL: the file is %d bytes, larger than the %d whose pages a reading visits (dbstat reads every page)", count*size, DBStatMaxBytes))
		return nil, nil
	}
	out := map[string]int64{}
	err = c.query(OpsSizesSQL, nil, func(rows *sql.Rows) error {
		var (
			name string
			n    int64
		)
		if err := rows.Scan(&name, &n); err != nil {
			return err
		}
		out[foldASCII(name)] += n
		return nil
	})
	return out, err
}

// stat1 reads ANALYZE's row counts by table (folded), or nil when ANALYZE
// has never run.
func (c *catalogRun) stat1(r *engine.Reading) (map[string]int64, error) {
	var has int
	if err := c.query(OpsHasStat1SQL, nil, func(rows *sql.Rows) error { return rows.Scan(&has) }); err != nil {
		return nil, err
	}
	if has == 0 {
		r.Note("rows is NULL: ANALYZE has never run on this file, so SQLite holds no row counts (none is counted here)")
		return nil, nil
	}
	out := map[string]int64{}
	err := c.query(OpsStat1SQL, nil, func(rows *sql.Rows) error {
		var (
			tbl string
			n   sql.NullInt64
		)
		if err := rows.Scan(&tbl, &n); err != nil {
			return err
		}
		if n.Valid {
			out[foldASCII(tbl)] = n.Int64
		}
		return nil
	})
	r.Note("rows is what ANALYZE counted when it last ran (sqlite_stat1), NULL for a table it has no figure for")
	return out, err
}

// tableStats reads one row per readable table: its rows from sqlite_stat1
// and its bytes (with its indexes) from dbstat, largest first.
func (e *Engine) tableStats(c *catalogRun, r *engine.Reading) error {
	objs, err := c.objects()
	if err != nil {
		return err
	}
	counts, err := c.stat1(r)
	if err != nil {
		return err
	}
	sizes, err := c.sizes(r)
	if err != nil {
		return err
	}
	type table struct {
		name  string
		bytes *int64
	}
	var tables []table
	at := map[string]int{}
	for _, o := range objs {
		if !e.tableReadable(o.table) {
			if o.typ == "table" {
				r.Hidden++
			}
			continue
		}
		if o.typ == "table" {
			at[foldASCII(o.name)] = len(tables)
			tables = append(tables, table{name: o.name})
		}
	}
	for _, o := range objs {
		i, ok := at[foldASCII(o.table)]
		if !ok || sizes == nil {
			continue
		}
		n := sizes[foldASCII(o.name)]
		if tables[i].bytes == nil {
			tables[i].bytes = new(int64)
		}
		*tables[i].bytes += n
	}
	slices.SortStableFunc(tables, func(a, b table) int {
		if a.bytes != nil && b.bytes != nil && *a.bytes != *b.bytes {
			return cmp.Compare(*b.bytes, *a.bytes)
		}
		return cmp.Compare(a.name, b.name)
	})
	for _, t := range tables {
		var rows, bytes any
		if n, ok := counts[foldASCII(t.name)]; ok {
			rows = n
		}
		if t.bytes != nil {
			bytes = *t.bytes
		}
		r.Add(DefaultSchema, DefaultSchema, t.name, rows, bytes, nil, nil, nil, nil)
	}
	r.Note("bytes is the table's pages with its indexes' (dbstat); SQLite tracks no dead rows, scans or analysis times, so those are NULL")
	return nil
}

// indexStats reads one row per index of a readable table, largest first.
func (e *Engine) indexStats(c *catalogRun, r *engine.Reading) error {
	objs, err := c.objects()
	if err != nil {
		return err
	}
	unique := map[string]bool{}
	if err := c.query(OpsIndexListSQL, nil, func(rows *sql.Rows) error {
		var (
			tbl, idx string
			u        bool
		)
		if err := rows.Scan(&tbl, &idx, &u); err != nil {
			return err
		}
		unique[foldASCII(idx)] = u
		return nil
	}); err != nil {
		return err
	}
	sizes, err := c.sizes(r)
	if err != nil {
		return err
	}
	var idx []object
	for _, o := range objs {
		if o.typ != "index" {
			continue
		}
		if !e.tableReadable(o.table) {
			r.Hidden++
			continue
		}
		idx = append(idx, o)
	}
	size := func(o object) int64 { return sizes[foldASCII(o.name)] }
	slices.SortStableFunc(idx, func(a, b object) int {
		return cmp.Or(cmp.Compare(size(b), size(a)), cmp.Compare(a.table, b.table), cmp.Compare(a.name, b.name))
	})
	for _, o := range idx {
		var bytes any
		if sizes != nil {
			bytes = size(o)
		}
		r.Add(DefaultSchema, DefaultSchema, o.table, o.name, unique[foldASCII(o.name)], bytes, nil)
	}
	r.Note("SQLite counts no index scans, so scans is NULL; an index named sqlite_autoindex_… is the one SQLite made for a UNIQUE or PRIMARY KEY constraint")
	return nil
}

// storage reads the file's size and free pages, its write-ahead log, and
// each readable table's bytes (with its indexes), largest first.
func (e *Engine) storage(c *catalogRun, r *engine.Reading) error {
	count, size, free, err := c.pages()
	if err != nil {
		return err
	}
	r.Add("", DefaultSchema, "database", count*size, fmt.Sprintf("%d pages of %d bytes", count, size))
	r.Add("", "freelist", "free pages", free*size, fmt.Sprintf("%d pages inside the file hold no data; VACUUM would return them", free))
	if fi, err := os.Stat(e.path + "-wal"); err == nil {
		r.Add("", "write-ahead log", "wal", fi.Size(), "the -wal file beside the database, not yet checkpointed into it")
	}
	var stats engine.Reading
	if err := e.tableStats(c, &stats); err != nil {
		return err
	}
	r.Hidden += stats.Hidden
	for i, row := range stats.Rows {
		r.Add(stats.Schemas[i], row[1], "table", row[3], "the table's pages with its indexes'")
	}
	for _, n := range stats.Notes {
		if strings.HasPrefix(n, "bytes is NULL") {
			r.Note(n)
		}
	}
	r.Note("a moment's sizes: SQLite keeps no history of them, so growth is not measured")
	return nil
}

// health reads SQLite's version and settings, the file's pages, and — for
// a file of at most DBStatMaxBytes — quick_check's verdict.
func (e *Engine) health(c *catalogRun, r *engine.Reading) error {
	var (
		version, journal, encoding string
		schemaVersion, autoVacuum  int64
	)
	if err := c.query(OpsHealthSQL, nil, func(rows *sql.Rows) error {
		return rows.Scan(&version, &journal, &schemaVersion, &autoVacuum, &encoding)
	}); err != nil {
		return err
	}
	count, size, free, err := c.pages()
	if err != nil {
		return err
	}
	r.Add("", "version", version, "sqlite_version() of the library the executor links")
	r.Add("", "journal_mode", journal, "wal lets readers and a writer work at once; delete, truncate and persist do not")
	r.Add("", "page_size", strconv.FormatInt(size, 10), "bytes per page")
	r.Add("", "database_bytes", strconv.FormatInt(count*size, 10), fmt.Sprintf("%d pages", count))
	r.Add("", "freelist_pages", strconv.FormatInt(free, 10), "pages inside the file that hold no data")
	r.Add("", "schema_version", strconv.FormatInt(schemaVersion, 10), "changes whenever the schema does")
	r.Add("", "auto_vacuum", [...]string{"none", "full", "incremental"}[min(max(autoVacuum, 0), 2)], "whether free pages are returned to the file system")
	r.Add("", "encoding", encoding, "text encoding of the file")
	if count*size > DBStatMaxBytes {
		r.Add("", "quick_check", nil, fmt.Sprintf("not run: the file is %d bytes, larger than the %d a reading reads through; run PRAGMA quick_check off-line", count*size, DBStatMaxBytes))
		return nil
	}
	var problems []string
	if err := c.query(OpsQuickCheckSQL, nil, func(rows *sql.Rows) error {
		var p string
		if err := rows.Scan(&p); err != nil {
			return err
		}
		problems = append(problems, p)
		return nil
	}); err != nil {
		return err
	}
	switch {
	case len(problems) == 1 && problems[0] == "ok":
		r.Add("", "quick_check", "ok", "PRAGMA quick_check found no problem")
	default:
		hidden, err := e.hiddenNames(c)
		if err != nil {
			return err
		}
		detail := strings.Join(problems, "; ")
		if engine.NamesAny(detail, hidden) {
			detail = "the problems name a relation this connection may not read, so they are not shown"
			r.Withheld++
		}
		value := fmt.Sprintf("%d problems", len(problems))
		if len(problems) >= QuickCheckRows {
			value = fmt.Sprintf("%d problems or more", len(problems))
		}
		r.Add("", "quick_check", value, detail)
	}
	return nil
}

// hiddenNames lists, folded, the tables the readable patterns hide and
// their indexes.
func (e *Engine) hiddenNames(c *catalogRun) (map[string]bool, error) {
	objs, err := c.objects()
	if err != nil {
		return nil, err
	}
	hidden := map[string]bool{}
	for _, o := range objs {
		if !e.tableReadable(o.table) {
			hidden[strings.ToLower(o.name)] = true
		}
	}
	return hidden, nil
}
