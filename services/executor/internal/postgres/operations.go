package postgres

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.Operator = (*Engine)(nil)

// The operational readings. Each is one composed statement (two for
// slow-queries: where pg_stat_statements lives, then its view) run as a
// catalog read is: BEGIN READ ONLY, the request's statement timeout, always
// rolled back. They read the server's statistics views, never a table's
// rows. $1 narrows to one schema where the reading names relations (NULL:
// every schema); every statement is ordered and cut at
// engine.OperationsScanRows.
const (
	// SessionsSQL lists the client sessions on this database other than
	// the reading's own: running_ms is how long the current statement has
	// run (active) or the transaction has stayed open (idle in
	// transaction); blocked_by the sessions holding what it waits for.
	// Another role's session shows only its pid, user and database to a
	// role without pg_read_all_stats (backend_type NULL too), and is kept;
	// a server process has no user.
	SessionsSQL = `SELECT a.pid::text, a.usename::text, a.state, a.query,
       (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - CASE
          WHEN a.state = 'active' THEN a.query_start
          WHEN a.state LIKE 'idle in transaction%' THEN a.xact_start END) * 1000)::bigint,
       CASE WHEN a.wait_event IS NOT NULL THEN a.wait_event_type || ': ' || a.wait_event END,
       NULLIF(pg_catalog.array_to_string(pg_catalog.pg_blocking_pids(a.pid), ', '), '')
  FROM pg_catalog.pg_stat_activity a
 WHERE (a.backend_type = 'client backend' OR a.backend_type IS NULL AND a.usesysid IS NOT NULL)
   AND a.pid <> pg_catalog.pg_backend_pid()
   AND a.datname = pg_catalog.current_database()
 ORDER BY CASE WHEN a.state = 'idle' THEN 1 ELSE 0 END, 5 DESC NULLS LAST, a.pid
 LIMIT 10000`

	// StatementsExtensionSQL finds the schema pg_stat_statements is
	// installed in (no row: not installed in this database), and the
	// server's version (the view's columns were renamed in 13).
	StatementsExtensionSQL = `SELECT n.nspname::text, pg_catalog.current_setting('server_version_num')::int
  FROM pg_catalog.pg_extension x JOIN pg_catalog.pg_namespace n ON n.oid = x.extnamespace
 WHERE x.extname = 'pg_stat_statements'`

	// TableStatsSQL reads pg_stat_user_tables: rows are the statistics
	// system's live-row estimate, bytes the table with its indexes and
	// TOAST (NULL while another session holds or awaits an ACCESS
	// EXCLUSIVE lock on any of them: reading the size would queue behind
	// it), largest first.
	TableStatsSQL = `WITH ` + lockedSQL + `
SELECT s.schemaname::text, s.relname::text, s.n_live_tup,
       CASE WHEN NOT ` + tableLockedSQL + ` THEN pg_catalog.pg_total_relation_size(c.oid) END,
       s.n_dead_tup, s.seq_scan, s.idx_scan,
       GREATEST(s.last_analyze, s.last_autoanalyze)::text
  FROM pg_catalog.pg_stat_user_tables s
  JOIN pg_catalog.pg_class c ON c.oid = s.relid
 WHERE $1::text IS NULL OR s.schemaname = $1
 ORDER BY 4 DESC NULLS LAST, 1, 2
 LIMIT 10000`

	// IndexStatsSQL reads pg_stat_user_indexes: scans since the statistics
	// were last reset, fewest first, then the largest, so an unused index
	// leads. bytes is NULL while the index is locked ACCESS EXCLUSIVE.
	IndexStatsSQL = `WITH ` + lockedSQL + `
SELECT s.schemaname::text, s.relname::text, s.indexrelname::text, i.indisunique,
       CASE WHEN s.indexrelid NOT IN (SELECT oid FROM locked) THEN pg_catalog.pg_relation_size(s.indexrelid) END,
       s.idx_scan
  FROM pg_catalog.pg_stat_user_indexes s
  JOIN pg_catalog.pg_index i ON i.indexrelid = s.indexrelid
 WHERE $1::text IS NULL OR s.schemaname = $1
 ORDER BY 6, 5 DESC NULLS LAST, 1, 2, 3
 LIMIT 10000`

	// StorageSQL reads the database's size, then its tables and
	// materialized views by total size (heap, indexes, TOAST; NULL while
	// locked, as in TableStatsSQL).
	StorageSQL = `WITH ` + lockedSQL + `
SELECT NULL::text, pg_catalog.current_database()::text, 'database',
       pg_catalog.pg_database_size(pg_catalog.current_database()), NULL::bigint, NULL::bigint, NULL::bigint
UNION ALL
(SELECT n.nspname::text, c.relname::text, CASE c.relkind WHEN 'm' THEN 'materialized view' ELSE 'table' END,
       z.total, z.heap, z.indexes, z.total - z.heap - z.indexes
  FROM pg_catalog.pg_class c
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  CROSS JOIN LATERAL (SELECT
       CASE WHEN NOT ` + tableLockedSQL + ` THEN pg_catalog.pg_total_relation_size(c.oid) END AS total,
       CASE WHEN NOT ` + tableLockedSQL + ` THEN pg_catalog.pg_relation_size(c.oid) END AS heap,
       CASE WHEN NOT ` + tableLockedSQL + ` THEN pg_catalog.pg_indexes_size(c.oid) END AS indexes) z
 WHERE c.relkind IN ('r', 'm', 'p')
   AND n.nspname <> 'information_schema' AND n.nspname !~ '^pg_'
   AND ($1::text IS NULL OR n.nspname = $1)
 ORDER BY 4 DESC NULLS LAST, 1, 2
 LIMIT 10000)`

	// lockedSQL names the relations of this database another session
	// holds, or waits for, an ACCESS EXCLUSIVE lock on: a size read takes
	// ACCESS SHARE and would queue behind either.
	lockedSQL = `locked AS (
  SELECT l.relation AS oid FROM pg_catalog.pg_locks l
   WHERE l.locktype = 'relation' AND l.mode = 'AccessExclusiveLock' AND l.pid <> pg_catalog.pg_backend_pid()
     AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
)`

	// tableLockedSQL is true when the table c, its TOAST table or one of
	// its indexes is locked.
	tableLockedSQL = `(c.oid IN (SELECT oid FROM locked) OR c.reltoastrelid IN (SELECT oid FROM locked)
         OR EXISTS (SELECT 1 FROM pg_catalog.pg_index x WHERE x.indrelid = c.oid AND x.indexrelid IN (SELECT oid FROM locked)))`

	// HealthSQL reads one row of figures about the server and this
	// database.
	HealthSQL = `SELECT pg_catalog.current_setting('server_version'),
       (pg_catalog.date_part('epoch', pg_catalog.now() - pg_catalog.pg_postmaster_start_time()))::bigint,
       (SELECT count(*) FROM pg_catalog.pg_stat_activity
         WHERE backend_type = 'client backend' OR backend_type IS NULL AND usesysid IS NOT NULL),
       pg_catalog.current_setting('max_connections')::int,
       d.blks_hit, d.blks_read, d.deadlocks, d.stats_reset::text,
       pg_catalog.pg_database_size(pg_catalog.current_database()),
       pg_catalog.pg_is_in_recovery(),
       (SELECT (pg_catalog.date_part('epoch', pg_catalog.clock_timestamp() - min(a.xact_start)) * 1000)::bigint
          FROM pg_catalog.pg_stat_activity a
         WHERE a.datname = pg_catalog.current_database() AND a.pid <> pg_catalog.pg_backend_pid() AND a.xact_start IS NOT NULL)
  FROM pg_catalog.pg_stat_database d
 WHERE d.datname = pg_catalog.current_database()`
)

// lockedNote says why a size may be NULL.
const lockedNote = "bytes is NULL for a relation another session holds or awaits an ACCESS EXCLUSIVE lock on: reading its size would wait behind that lock"

// StatementsSQL reads pg_stat_statements in schema for this database, the
// most total time first. Servers before 13 name the time columns
// total_time and mean_time.
func StatementsSQL(schema string, versionNum int) string {
	total, mean := "total_exec_time", "mean_exec_time"
	if versionNum < 130000 {
		total, mean = "total_time", "mean_time"
	}
	return `SELECT s.query, s.calls, s.` + total + `::float8, s.` + mean + `::float8, s.rows
  FROM ` + pgx.Identifier{schema, "pg_stat_statements"}.Sanitize() + ` s
 WHERE s.dbid = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
 ORDER BY 3 DESC NULLS LAST
 LIMIT 10000`
}

// pgReading is what one operational reading holds: the engine, the
// statements' context and request, and the schema asked for (nil: every
// schema).
type pgReading struct {
	e      *Engine
	ctx    context.Context
	oreq   engine.Request
	schema any
}

// read sends one curated statement and records it in r.
func (p pgReading) read(r *engine.Reading, sql string, params ...any) ([][]any, error) {
	res, err := p.e.run(p.ctx, sql, params, p.oreq)
	r.Sent(sql, res)
	if err != nil {
		return nil, err
	}
	return res.Rows.Rows, nil
}

// readings are PostgreSQL's operational readings, every kind
// (slow-queries where pg_stat_statements is installed and loaded).
var readings = engine.Readings[pgReading]{
	Engine: "PostgreSQL",
	Take: map[contracts.OperationsKind]func(pgReading, *engine.Reading) error{
		contracts.OpsSessions: engine.StatementRows(statement(SessionsSQL, false), pgReading.hidden, 3, false,
			"sessions on this database only, the reading's own left out; running_ms is how long the current statement has run (active) or the transaction has been open (idle in transaction)",
			"another role's statement shows as <insufficient privilege> unless the connection's role is a member of pg_read_all_stats (or pg_monitor)"),
		contracts.OpsSlowQueries: slowQueries,
		contracts.OpsTableStats: engine.RelationRows(statement(TableStatsSQL, true), readableBy, nil,
			"rows and dead_rows are the statistics system's estimates; bytes include indexes and TOAST; scans count since the statistics were last reset", lockedNote),
		contracts.OpsIndexStats: engine.RelationRows(statement(IndexStatsSQL, true), readableBy, nil,
			"scans count index scans since the statistics were last reset; fewest first, so an unused index leads", lockedNote),
		contracts.OpsStorage: storage,
		contracts.OpsHealth: func(p pgReading, r *engine.Reading) error {
			rows, err := p.read(r, HealthSQL)
			if err != nil {
				return err
			}
			if len(rows) != 1 {
				return &contracts.DBError{Class: contracts.DBOther, Message: "pg_stat_database holds no row for this database"}
			}
			health(r, rows[0])
			return nil
		},
	},
}

// Operations takes one operational reading (engine.Operator).
func (e *Engine) Operations(ctx context.Context, req engine.Request, kind contracts.OperationsKind) (engine.Reading, error) {
	var r engine.Reading
	oreq := req
	oreq.SQL, oreq.Params, oreq.Limits = "", nil, engine.OperationsLimits(e.opMem)
	if req.Timeout > 0 {
		// The timeout holds each statement; the whole reading gets it once
		// more for all of them together.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout+grace)
		defer cancel()
	}
	p := pgReading{e: e, ctx: ctx, oreq: oreq}
	if req.Schema != "" {
		p.schema = req.Schema
	}
	return r, readings.Read(p, &r, kind)
}

// statement is the Rows of sql, sent with the schema asked for when
// bySchema.
func statement(sql string, bySchema bool) engine.Rows[pgReading] {
	return func(p pgReading, r *engine.Reading) ([][]any, error) {
		if bySchema {
			return p.read(r, sql, p.schema)
		}
		return p.read(r, sql)
	}
}

// readableBy is what the connection's readable patterns allow.
func readableBy(p pgReading) func(schema, name string) bool { return p.e.readable }

// hidden reads the relations a statement text must not name.
func (p pgReading) hidden(r *engine.Reading) (map[string]bool, error) {
	return p.e.hiddenNames(p.ctx, p.oreq, r)
}

// slowQueries reads pg_stat_statements, where it is installed and loaded;
// a statement that names a hidden relation is left out.
func slowQueries(p pgReading, r *engine.Reading) error {
	const kind = contracts.OpsSlowQueries
	ext, err := p.read(r, StatementsExtensionSQL)
	if err != nil {
		return err
	}
	if len(ext) == 0 {
		return engine.Unsupported(kind, "the pg_stat_statements extension is not installed in this database, and PostgreSQL keeps no per-statement timings without it",
			contracts.OpsSessions, contracts.OpsTableStats, contracts.OpsIndexStats, contracts.OpsStorage, contracts.OpsHealth)
	}
	nsp, _ := ext[0][0].(string)
	ver, _ := ext[0][1].(int64)
	rows, err := p.read(r, StatementsSQL(nsp, int(ver)))
	if notLoaded(err) {
		return engine.Unsupported(kind, "pg_stat_statements is installed in this database but the server did not load it: it must be listed in shared_preload_libraries, which takes a restart",
			contracts.OpsSessions, contracts.OpsTableStats, contracts.OpsIndexStats, contracts.OpsStorage, contracts.OpsHealth)
	}
	if err != nil {
		return err
	}
	hidden, err := p.hidden(r)
	if err != nil {
		return err
	}
	r.AddStatements(rows, 0, hidden, true)
	r.Note("pg_stat_statements totals since its statistics were last reset, for this database; statements are normalised (constants replaced by $n)")
	return nil
}

// storage reads the database's files and each readable relation's bytes.
func storage(p pgReading, r *engine.Reading) error {
	rows, err := p.read(r, StorageSQL, p.schema)
	if err != nil {
		return err
	}
	for _, row := range rows {
		if row[0] == nil {
			r.Add("", row[1], row[2], row[3], "the database's files on disk")
			continue
		}
		r.AddReadable([][]any{row}, p.e.readable, func(row []any) []any {
			return []any{text(row[0]) + "." + text(row[1]), row[2], row[3], fmt.Sprintf("heap %s, indexes %s, TOAST %s",
				bytesText(row[4]), bytesText(row[5]), bytesText(row[6]))}
		})
	}
	r.Note("a moment's sizes: PostgreSQL keeps no history of them, so growth is not measured")
	r.Note(lockedNote)
	return nil
}

// health turns HealthSQL's row into one row per check.
func health(r *engine.Reading, row []any) {
	r.Add("", "version", row[0], "server_version")
	r.Add("", "uptime_s", engine.NumText(row[1]), "seconds since the server started")
	r.Add("", "connections", fmt.Sprintf("%s of %s", engine.NumText(row[2]), engine.NumText(row[3])),
		"client sessions on the whole server, of max_connections")
	hit, _ := row[4].(int64)
	miss, _ := row[5].(int64)
	since := "since the statistics were last reset"
	if s, ok := row[7].(string); ok {
		since = "since " + s
	}
	var ratio any
	if hit+miss > 0 {
		ratio = strconv.FormatFloat(float64(hit)/float64(hit+miss), 'f', 4, 64)
	}
	r.Add("", "cache_hit_ratio", ratio, fmt.Sprintf("shared-buffer hits over block reads for this database, %s (%d hits, %d reads)", since, hit, miss))
	r.Add("", "database_bytes", engine.NumText(row[8]), "pg_database_size of this database")
	recovery := "false"
	if b, _ := row[9].(bool); b {
		recovery = "true"
	}
	r.Add("", "in_recovery", recovery, "true on a standby replaying WAL")
	r.Add("", "deadlocks", engine.NumText(row[6]), since)
	r.Add("", "oldest_transaction_ms", engine.NumText(row[10]), "the longest-open transaction of another session on this database")
}

// hiddenNames lists, lower-cased, the names of this database's relations
// the readable patterns hide, and of the schemas where they hide every
// relation (none when every relation is readable): a statement text naming
// one is withheld. One statement, sent only when
// patterns are set.
func (e *Engine) hiddenNames(ctx context.Context, req engine.Request, r *engine.Reading) (map[string]bool, error) {
	if len(e.policy.Readable) == 0 {
		return nil, nil
	}
	res, err := e.run(ctx, RelationsSQL, nil, req)
	r.Sent(RelationsSQL, res)
	if err != nil {
		return nil, err
	}
	hidden := engine.HiddenNames(res.Rows.Rows, e.readable)
	if len(hidden) > 0 {
		r.Note("a statement that names a relation this connection may not read is not shown")
	}
	return hidden, nil
}

// notLoaded reports PostgreSQL refusing to read pg_stat_statements because
// the library was not preloaded: SQLSTATE 55000
// (object_not_in_prerequisite_state), which reading the view raises for
// nothing else. The code travels on the engine's typed error (run keeps
// it), never read back from the message.
func notLoaded(err error) bool {
	return sqlState(err) == "55000"
}

func text(v any) string {
	s, _ := v.(string)
	return s
}

func bytesText(v any) string {
	if n, ok := v.(int64); ok {
		return strconv.FormatInt(n, 10) + " B"
	}
	return "unknown"
}
