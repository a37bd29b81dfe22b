package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// The engine reads its inventory with a fixed set of composed statements,
// whatever the number of relations: the relations are named by one JSON
// array bound as a parameter and joined to SQLite's table-valued metadata
// pragmas, never one statement per table. Virtual tables and views have
// rootpage 0 in sqlite_schema (they own no b-tree); an ordinary table never
// does.
const (
	// RelationsSQL lists every table, view and virtual table of main that
	// is not one of SQLite's own (sqlite_%, as the guard's system list).
	RelationsSQL = `SELECT name, type, rootpage FROM sqlite_schema ` +
		`WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name`

	// TableColumnsSQL reads the columns of the ordinary tables named by ?1,
	// and whether ANALYZE has written sqlite_stat1.
	TableColumnsSQL = `SELECT s.name, p.cid, p.name, p.type, p."notnull", p.pk, p.hidden, ` +
		`EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'sqlite_stat1') ` +
		`FROM sqlite_schema AS s, pragma_table_xinfo(s.name, 'main') AS p ` +
		`WHERE s.type = 'table' AND s.rootpage <> 0 AND s.name COLLATE NOCASE IN (SELECT value FROM json_each(?1))`

	// ViewColumnsSQL reads the columns of the views and virtual tables named
	// by ?1: SQLite compiles each view, and connects to each virtual table's
	// module, to answer — which can fail (a view over a dropped table, a
	// module this build lacks), so these are read apart from the tables.
	ViewColumnsSQL = `SELECT s.name, s.type, p.cid, p.name, p.type, p."notnull", p.pk, p.hidden ` +
		`FROM sqlite_schema AS s, pragma_table_xinfo(s.name, 'main') AS p ` +
		`WHERE s.type IN ('table', 'view') AND s.rootpage = 0 AND s.name COLLATE NOCASE IN (SELECT value FROM json_each(?1))`

	// IndexesSQL reads the key columns of every index of the ordinary
	// tables named by ?1 (an expression column has cid -2 and no name: its
	// index's DDL is read to write it).
	IndexesSQL = `WITH ddl (name, sql) AS MATERIALIZED (` +
		`SELECT name COLLATE NOCASE, sql FROM sqlite_schema WHERE type = 'index' AND sql IS NOT NULL ` +
		`AND tbl_name COLLATE NOCASE IN (SELECT value FROM json_each(?1))) ` +
		`SELECT s.name, il.name, il."unique", il.origin, il.partial, ix.seqno, ix.cid, ix.name, ` +
		`CASE WHEN ix.cid = -2 THEN d.sql END ` +
		`FROM sqlite_schema AS s, pragma_index_list(s.name, 'main') AS il, pragma_index_xinfo(il.name, 'main') AS ix ` +
		`LEFT JOIN ddl AS d ON d.name = il.name ` +
		`WHERE s.type = 'table' AND s.rootpage <> 0 AND s.name COLLATE NOCASE IN (SELECT value FROM json_each(?1)) AND ix.key`

	// ForeignKeysSQL reads the foreign keys of the ordinary tables named by
	// ?1, with the parent's name as stored and, for a key that names no
	// parent columns (it refers to the parent's primary key), that primary
	// key in order, as a JSON array.
	ForeignKeysSQL = `WITH rel (name, ordinary) AS MATERIALIZED (` +
		`SELECT name COLLATE NOCASE, type = 'table' AND rootpage <> 0 FROM sqlite_schema WHERE type IN ('table', 'view')) ` +
		`SELECT s.name, f.id, f.seq, f."table", f."from", f."to", r.name, ` +
		`CASE WHEN f."to" IS NULL AND f.seq = 0 AND r.ordinary THEN (SELECT json_group_array(k.name) FROM (` +
		`SELECT name FROM pragma_table_info(r.name, 'main') WHERE pk > 0 ORDER BY pk) AS k) END ` +
		`FROM sqlite_schema AS s, pragma_foreign_key_list(s.name, 'main') AS f LEFT JOIN rel AS r ON r.name = f."table" ` +
		`WHERE s.type = 'table' AND s.rootpage <> 0 AND s.name COLLATE NOCASE IN (SELECT value FROM json_each(?1))`

	// StatsSQL reads what ANALYZE wrote about the tables named by ?1; sent
	// only when sqlite_stat1 exists.
	StatsSQL = `SELECT tbl, idx, stat FROM sqlite_stat1 WHERE tbl COLLATE NOCASE IN (SELECT value FROM json_each(?1))`
)

// StatisticsSource is what Describe's estimates are read from.
const StatisticsSource = "sqlite_stat1 (written by ANALYZE)"

// MaxIsolationStatements bounds the statements Describe spends finding the
// views and virtual tables SQLite cannot describe (a view over a dropped
// table, a virtual table of a module this build lacks) when reading their
// columns together fails: their halves are read apart until each failing
// one is alone. Past the bound the ones not yet read are left without
// columns.
const MaxIsolationStatements = 32

var (
	_ engine.Cataloger = (*Engine)(nil)
	_ engine.Guarded   = (*Engine)(nil)
)

// Relations lists the tables, views and virtual tables of main in name
// order (binary, as SQLite stores the names), SQLite's own sqlite_ tables
// left out and the ones the readable patterns do not allow counted in
// Unreadable. The shadow tables of a virtual table (an FTS5 table's _data,
// _idx, _content, …) are tables and listed as such. One statement.
func (e *Engine) Relations(ctx context.Context, req engine.Request) (engine.Catalog, error) {
	var out engine.Catalog
	err := e.catalog(ctx, req, &out, func(c *catalogRun) error {
		return c.query(RelationsSQL, nil, func(rows *sql.Rows) error {
			var (
				name, typ string
				root      int64
			)
			if err := rows.Scan(&name, &typ, &root); err != nil {
				return err
			}
			if !e.policy.CanRead(guard.NamesASCIIFold, guard.Table{Schema: DefaultSchema, Name: name}) {
				out.Unreadable++
				return nil
			}
			out.Relations = append(out.Relations, contracts.Relation{
				Schema: DefaultSchema, Name: name, Kind: relationKind(typ, root), EngineKind: typ})
			return nil
		})
	})
	return out, err
}

// DefinitionsSQL reads the CREATE statements of the relations named by ?1,
// as written (comments included).
const DefinitionsSQL = `SELECT name, sql FROM sqlite_schema ` +
	`WHERE type IN ('table', 'view') AND sql IS NOT NULL AND name COLLATE NOCASE IN (SELECT value FROM json_each(?1))`

// Definitions sets each relation's stored CREATE statement: one statement.
func (e *Engine) Definitions(ctx context.Context, req engine.Request, rels []contracts.Relation) (engine.Catalog, error) {
	out := engine.Catalog{Relations: rels}
	names := make([]string, len(rels))
	at := make(map[string]int, len(rels))
	for i, r := range rels {
		names[i] = r.Name
		at[strings.ToLower(r.Name)] = i
	}
	arg, err := json.Marshal(names)
	if err != nil {
		return out, err
	}
	err = e.catalog(ctx, req, &out, func(c *catalogRun) error {
		return c.query(DefinitionsSQL, []any{string(arg)}, func(rows *sql.Rows) error {
			var name, def string
			if err := rows.Scan(&name, &def); err != nil {
				return err
			}
			if i, ok := at[strings.ToLower(name)]; ok {
				rels[i].Definition = def
			}
			return nil
		})
	})
	return out, err
}

// relationKind maps a sqlite_schema row to the kind vocabulary.
func relationKind(typ string, rootpage int64) contracts.RelationKind {
	switch {
	case typ == "view":
		return contracts.RelationView
	case rootpage == 0:
		return contracts.RelationVirtualTable
	}
	return contracts.RelationTable
}

// Describe fills in rels (relations of main, as Relations lists them) with
// their columns (a virtual table's hidden columns left out, generated ones
// kept), primary key, unique constraints, foreign keys, indexes created by
// CREATE INDEX, and the row estimates ANALYZE wrote in sqlite_stat1 (Stats
// nil for a table it has no row for). A relation's Kind says how it is read
// (a view or virtual table apart from the tables); names are matched as
// SQLite matches them (ASCII case folded) and answered as stored. A relation
// that no longer exists or is not in main is dropped, one the readable
// patterns do not allow is dropped and counted in Unreadable, and a view or
// virtual table SQLite cannot describe keeps no columns. At most five
// statements — the tables' columns, the views' and virtual tables' columns,
// indexes, foreign keys, statistics — each sent only when it has something
// to read, plus at most MaxIsolationStatements when a view or virtual table
// cannot be described.
func (e *Engine) Describe(ctx context.Context, req engine.Request, rels []contracts.Relation) (engine.Catalog, error) {
	out := engine.Catalog{Relations: make([]contracts.Relation, 0, len(rels))}
	d := &describer{policy: e.policy, byName: map[string]*described{}, indexes: map[string]*index{}}
	for _, r := range rels {
		if !strings.EqualFold(r.Schema, DefaultSchema) {
			continue
		}
		if !d.readable(r.Name) {
			out.Unreadable++
			continue
		}
		key := foldASCII(r.Name)
		if d.byName[key] != nil {
			continue // asked twice: described once
		}
		s := &described{rel: contracts.Relation{Schema: DefaultSchema, Name: r.Name, Kind: r.Kind, EngineKind: r.EngineKind},
			table: r.Kind != contracts.RelationView && r.Kind != contracts.RelationVirtualTable}
		d.all, d.byName[key] = append(d.all, s), s
		if s.table {
			d.tables = append(d.tables, r.Name)
		} else {
			d.views = append(d.views, r.Name)
		}
	}
	err := e.catalog(ctx, req, &out, func(c *catalogRun) error {
		if len(d.tables) > 0 {
			if err := d.tableColumns(c); err != nil {
				return err
			}
		}
		if len(d.views) > 0 {
			if err := d.viewColumns(c); err != nil {
				return err
			}
		}
		if len(d.tables) == 0 {
			return nil
		}
		if err := d.readIndexes(c); err != nil {
			return err
		}
		if err := d.foreignKeys(c); err != nil {
			return err
		}
		if !d.analyzed {
			return nil
		}
		out.StatisticsSource = StatisticsSource
		return d.stats(c)
	})
	if err != nil {
		return out, err
	}
	for _, s := range d.all {
		if s.found {
			if s.rel.Columns == nil {
				s.rel.Columns = []contracts.RelationColumn{}
			}
			out.Relations = append(out.Relations, s.rel)
		}
	}
	return out, nil
}

// describer is one Describe call's relations and what its statements read.
type describer struct {
	policy        guard.Policy
	all           []*described
	byName        map[string]*described // by ASCII-folded name
	tables, views []string              // the names each statement is given
	indexes       map[string]*index     // by ASCII-folded index name
	analyzed      bool                  // sqlite_stat1 exists
}

// described is one relation Describe fills in.
type described struct {
	rel   contracts.Relation
	found bool
	table bool // read as an ordinary table
}

func (d *describer) lookup(name string) *described { return d.byName[foldASCII(name)] }

func (d *describer) readable(name string) bool {
	return d.policy.CanRead(guard.NamesASCIIFold, guard.Table{Schema: DefaultSchema, Name: name})
}

// column is one row of pragma_table_xinfo.
type column struct {
	cid     int64
	name    string
	typ     string
	notNull bool
	pk      int64 // position in the primary key, from 1; 0 when not in it
	hidden  int64 // 1: a virtual table's hidden column; 2, 3: generated
}

// setColumns orders a relation's columns by cid, leaving out a virtual
// table's hidden ones, and reads its primary key in key order.
func (s *described) setColumns(cs []column) {
	slices.SortFunc(cs, func(a, b column) int { return cmp.Compare(a.cid, b.cid) })
	s.rel.Columns = make([]contracts.RelationColumn, 0, len(cs))
	var key []column
	for _, c := range cs {
		if c.hidden == 1 {
			continue
		}
		s.rel.Columns = append(s.rel.Columns, contracts.RelationColumn{Name: c.name, Type: c.typ, Nullable: !c.notNull})
		if c.pk > 0 {
			key = append(key, c)
		}
	}
	slices.SortFunc(key, func(a, b column) int { return cmp.Compare(a.pk, b.pk) })
	for _, c := range key {
		s.rel.PrimaryKey = append(s.rel.PrimaryKey, c.name)
	}
}

// tableColumns reads the ordinary tables' columns, and whether ANALYZE has
// written sqlite_stat1.
func (d *describer) tableColumns(c *catalogRun) error {
	cols := map[*described][]column{}
	err := c.query(TableColumnsSQL, []any{jsonNames(d.tables)}, func(rows *sql.Rows) error {
		var (
			name     string
			col      column
			typ      sql.NullString
			notNull  bool
			analyzed bool
		)
		if err := rows.Scan(&name, &col.cid, &col.name, &typ, &notNull, &col.pk, &col.hidden, &analyzed); err != nil {
			return err
		}
		d.analyzed = analyzed
		s := d.lookup(name)
		if s == nil {
			return nil
		}
		col.typ, col.notNull = typ.String, notNull
		s.found, s.rel.Name, s.rel.Kind, s.rel.EngineKind = true, name, contracts.RelationTable, "table"
		cols[s] = append(cols[s], col)
		return nil
	})
	for s, cs := range cols {
		s.setColumns(cs)
	}
	return err
}

// viewColumns reads the views' and virtual tables' columns, isolating the
// ones SQLite cannot describe.
func (d *describer) viewColumns(c *catalogRun) error {
	cols := map[*described][]column{}
	read := func(names []string) error {
		return c.query(ViewColumnsSQL, []any{jsonNames(names)}, func(rows *sql.Rows) error {
			var (
				name, typ string
				col       column
				ctyp      sql.NullString
				notNull   bool
			)
			if err := rows.Scan(&name, &typ, &col.cid, &col.name, &ctyp, &notNull, &col.pk, &col.hidden); err != nil {
				return err
			}
			s := d.lookup(name)
			if s == nil {
				return nil
			}
			col.typ, col.notNull = ctyp.String, notNull
			s.found, s.rel.Name, s.rel.Kind, s.rel.EngineKind = true, name, relationKind(typ, 0), typ
			cols[s] = append(cols[s], col)
			return nil
		})
	}
	err := c.isolate(d.views, read, func(name string) {
		// SQLite holds it but cannot say its columns: listed without.
		if s := d.lookup(name); s != nil {
			s.found = true
		}
	})
	for s, cs := range cols {
		s.setColumns(cs)
	}
	return err
}

// index is one index as pragma_index_list and pragma_index_xinfo read it.
type index struct {
	of      *described
	name    string
	unique  bool
	origin  string // c (CREATE INDEX), u (UNIQUE), pk (PRIMARY KEY)
	partial bool
	keys    []indexKey
}

type indexKey struct {
	seqno  int64
	name   string
	column bool // a column, not an expression or the rowid
}

func (ix *index) columns() []string {
	out := make([]string, len(ix.keys))
	for i, k := range ix.keys {
		out[i] = k.name
	}
	return out
}

// readIndexes reads every index of the ordinary tables: UNIQUE constraints'
// go to Unique, CREATE INDEX's to Indexes, the primary key's nowhere (it is
// PrimaryKey).
func (d *describer) readIndexes(c *catalogRun) error {
	err := c.query(IndexesSQL, []any{jsonNames(d.tables)}, func(rows *sql.Rows) error {
		var (
			table, name, origin string
			unique, partial     bool
			key                 indexKey
			cid                 int64
			col, ddl            sql.NullString
		)
		if err := rows.Scan(&table, &name, &unique, &origin, &partial, &key.seqno, &cid, &col, &ddl); err != nil {
			return err
		}
		s := d.lookup(table)
		if s == nil {
			return nil
		}
		ix := d.indexes[foldASCII(name)]
		if ix == nil {
			ix = &index{of: s, name: name, unique: unique, origin: origin, partial: partial}
			d.indexes[foldASCII(name)] = ix
		}
		switch cid {
		case -2: // an expression
			key.name = indexExpression(ddl.String, int(key.seqno))
		case -1:
			key.name = "rowid"
		default:
			key.name, key.column = col.String, true
		}
		ix.keys = append(ix.keys, key)
		return nil
	})
	if err != nil {
		return err
	}
	all := slices.Collect(maps.Values(d.indexes))
	slices.SortFunc(all, func(a, b *index) int { return strings.Compare(a.name, b.name) })
	ownKey := map[*described]bool{}
	for _, ix := range all {
		slices.SortFunc(ix.keys, func(a, b indexKey) int { return cmp.Compare(a.seqno, b.seqno) })
		switch ix.origin {
		case "pk": // a WITHOUT ROWID table's, or a key that is not the rowid
			ownKey[ix.of] = true
		case "u":
			ix.of.rel.Unique = append(ix.of.rel.Unique, ix.columns())
		default:
			ix.of.rel.Indexes = append(ix.of.rel.Indexes, contracts.Index{Name: ix.name, Unique: ix.unique, Columns: ix.columns()})
		}
	}
	// A lone INTEGER PRIMARY KEY with no index of its own is the rowid:
	// never null, though SQLite does not declare it NOT NULL.
	for _, s := range d.all {
		if !s.table || ownKey[s] || len(s.rel.PrimaryKey) != 1 {
			continue
		}
		for i, c := range s.rel.Columns {
			if c.Name == s.rel.PrimaryKey[0] && strings.EqualFold(c.Type, "INTEGER") {
				s.rel.Columns[i].Nullable = false
			}
		}
	}
	return nil
}

// foreignKeys reads the ordinary tables' foreign keys, one per key.
func (d *describer) foreignKeys(c *catalogRun) error {
	type keyID struct {
		of *described
		id int64
	}
	keys := map[keyID]*contracts.ForeignKey{}
	var order []keyID
	err := c.query(ForeignKeysSQL, []any{jsonNames(d.tables)}, func(rows *sql.Rows) error {
		var (
			table, parent, from string
			to, stored, pk      sql.NullString
			id, seq             int64
		)
		if err := rows.Scan(&table, &id, &seq, &parent, &from, &to, &stored, &pk); err != nil {
			return err
		}
		s := d.lookup(table)
		if s == nil {
			return nil
		}
		k := keyID{s, id}
		fk := keys[k]
		if fk == nil {
			if stored.Valid {
				parent = stored.String
			}
			fk = &contracts.ForeignKey{Columns: []string{}, RefSchema: DefaultSchema, RefName: parent, RefColumns: []string{}}
			keys[k], order = fk, append(order, k)
		}
		fk.Columns = append(fk.Columns, from)
		switch {
		case to.Valid:
			fk.RefColumns = append(fk.RefColumns, to.String)
		case pk.Valid && d.readable(fk.RefName):
			// The key names no parent columns: it refers to the parent's
			// primary key, told only of a parent that may be read.
			var key []string
			if json.Unmarshal([]byte(pk.String), &key) == nil {
				fk.RefColumns = key
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	// pragma_foreign_key_list numbers a table's keys from the last
	// declared; list them as declared.
	slices.SortStableFunc(order, func(a, b keyID) int { return cmp.Compare(b.id, a.id) })
	for _, k := range order {
		k.of.rel.ForeignKeys = append(k.of.rel.ForeignKeys, *keys[k])
	}
	return nil
}

// stats reads what ANALYZE wrote in sqlite_stat1 about the ordinary tables.
// Each row's first integer is the rows of the table (idx NULL) or of an
// index — a partial index holds fewer, so the largest is the table's — and
// a full index's second is the average rows per value of its first column.
func (d *describer) stats(c *catalogRun) error {
	return c.query(StatsSQL, []any{jsonNames(d.tables)}, func(rows *sql.Rows) error {
		var (
			table     string
			idx, stat sql.NullString
		)
		if err := rows.Scan(&table, &idx, &stat); err != nil {
			return err
		}
		s := d.lookup(table)
		if s == nil || !s.table || !s.found {
			return nil
		}
		ints := statInts(stat.String)
		if len(ints) == 0 {
			return nil
		}
		if s.rel.Stats == nil {
			s.rel.Stats = &contracts.RelationStats{}
		}
		n := float64(ints[0])
		s.rel.Stats.Rows = max(s.rel.Stats.Rows, n)
		ix := d.indexes[foldASCII(idx.String)]
		if !idx.Valid || ix == nil || ix.partial || len(ix.keys) == 0 || !ix.keys[0].column || len(ints) < 2 || ints[1] <= 0 {
			return nil
		}
		first := ix.keys[0].name
		if _, seen := s.rel.Stats.Columns[first]; seen {
			return nil
		}
		if s.rel.Stats.Columns == nil {
			s.rel.Stats.Columns = map[string]contracts.ColumnStats{}
		}
		distinct := n / float64(ints[1])
		s.rel.Stats.Columns[first] = contracts.ColumnStats{Distinct: &distinct}
		return nil
	})
}

// statInts reads the leading integers of a sqlite_stat1 stat ("1000 10 1",
// possibly followed by keywords such as "unordered").
func statInts(stat string) []int64 {
	var out []int64
	for _, f := range strings.Fields(stat) {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil || n < 0 {
			break
		}
		out = append(out, n)
	}
	return out
}
