package mssql

import (
	"context"
	"fmt"
	"strconv"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.Operator = (*Engine)(nil)

// The operational readings of SQL Server read its dynamic management views
// (not run against a live server here: see docs/executor-mssql.md). Each
// statement is one batch on the read path (run: a snapshot transaction
// always rolled back, the request's timeout, the metered socket), ordered
// and cut at engine.OperationsScanRows. The DMVs ask for VIEW SERVER STATE
// (sessions, slow-queries, health) or VIEW DATABASE STATE (table-stats,
// index-stats, storage); without it SQL Server refuses the statement and
// the reading fails as a permission error, in SQL Server's words.

// OpsSessionsSQL lists the user sessions on this database other than the
// reading's own: what each runs (or ran last), how long the current
// request has run, what it waits for and which session blocks it.
const OpsSessionsSQL = `SELECT TOP (10000) CAST(s.session_id AS nvarchar(12)) AS session, s.login_name AS [user],
       COALESCE(r.status, s.status) AS state, t.text AS query,
       CAST(r.total_elapsed_time AS bigint) AS running_ms,
       CASE WHEN r.wait_type IS NOT NULL THEN r.wait_type + COALESCE(N': ' + NULLIF(r.wait_resource, N''), N'') END AS waiting_on,
       CAST(NULLIF(r.blocking_session_id, 0) AS nvarchar(12)) AS blocked_by
  FROM sys.dm_exec_sessions AS s
  LEFT JOIN sys.dm_exec_requests AS r ON r.session_id = s.session_id
  LEFT JOIN sys.dm_exec_connections AS c ON c.session_id = s.session_id
 OUTER APPLY sys.dm_exec_sql_text(COALESCE(r.sql_handle, c.most_recent_sql_handle)) AS t
 WHERE s.is_user_process = 1 AND s.session_id <> @@SPID AND s.database_id = DB_ID()
 ORDER BY CASE WHEN r.session_id IS NULL THEN 1 ELSE 0 END, r.total_elapsed_time DESC, s.session_id`

// OpsSlowQueriesSQL reads the plan cache's statistics of this database's
// statements, the most total elapsed time first.
const OpsSlowQueriesSQL = `SELECT TOP (10000)
       SUBSTRING(st.text, qs.statement_start_offset / 2 + 1,
         (CASE WHEN qs.statement_end_offset = -1 THEN DATALENGTH(st.text) ELSE qs.statement_end_offset END
          - qs.statement_start_offset) / 2 + 1) AS query,
       qs.execution_count AS calls,
       CAST(qs.total_elapsed_time / 1000.0 AS float) AS total_ms,
       CAST(qs.total_elapsed_time / 1000.0 / NULLIF(qs.execution_count, 0) AS float) AS mean_ms,
       qs.total_rows AS [rows]
  FROM sys.dm_exec_query_stats AS qs
 CROSS APPLY sys.dm_exec_sql_text(qs.sql_handle) AS st
 CROSS APPLY (SELECT CAST(pa.value AS int) AS dbid FROM sys.dm_exec_plan_attributes(qs.plan_handle) AS pa
               WHERE pa.attribute = N'dbid') AS d
 WHERE d.dbid = DB_ID()
 ORDER BY qs.total_elapsed_time DESC`

// OpsTableStatsSQL reads each user table's rows and reserved bytes
// (sys.dm_db_partition_stats), its scans since the server started
// (sys.dm_db_index_usage_stats: scans of the heap or clustered index, and
// seeks and lookups of any index) and when its statistics were last
// updated, largest first, narrowed to one schema when schema is set.
func OpsTableStatsSQL(schema string) string {
	return `SELECT TOP (10000) s.name AS [schema], o.name AS [table],
       (SELECT SUM(p.row_count) FROM sys.dm_db_partition_stats AS p WHERE p.object_id = o.object_id AND p.index_id IN (0, 1)) AS [rows],
       (SELECT SUM(p.reserved_page_count) FROM sys.dm_db_partition_stats AS p WHERE p.object_id = o.object_id) * 8192 AS bytes,
       CAST(NULL AS bigint) AS dead_rows,
       (SELECT SUM(u.user_scans) FROM sys.dm_db_index_usage_stats AS u
         WHERE u.database_id = DB_ID() AND u.object_id = o.object_id AND u.index_id IN (0, 1)) AS seq_scans,
       (SELECT SUM(u.user_seeks + u.user_lookups) FROM sys.dm_db_index_usage_stats AS u
         WHERE u.database_id = DB_ID() AND u.object_id = o.object_id) AS index_scans,
       CONVERT(nvarchar(30), (SELECT MAX(STATS_DATE(st.object_id, st.stats_id)) FROM sys.stats AS st WHERE st.object_id = o.object_id), 126) AS last_analyzed
  FROM sys.objects AS o
  JOIN sys.schemas AS s ON s.schema_id = o.schema_id
 WHERE o.type = 'U' AND o.is_ms_shipped = 0` + schemaFilter(schema) + `
 ORDER BY bytes DESC, s.name, o.name`
}

// OpsIndexStatsSQL reads each index of a user table: unique, reserved
// bytes, and its seeks, scans and lookups since the server started (0 when
// SQL Server holds no usage row), the least used first.
func OpsIndexStatsSQL(schema string) string {
	return `SELECT TOP (10000) s.name AS [schema], o.name AS [table], i.name AS [index], i.is_unique AS [unique],
       (SELECT SUM(p.reserved_page_count) FROM sys.dm_db_partition_stats AS p
         WHERE p.object_id = i.object_id AND p.index_id = i.index_id) * 8192 AS bytes,
       COALESCE((SELECT u.user_seeks + u.user_scans + u.user_lookups FROM sys.dm_db_index_usage_stats AS u
         WHERE u.database_id = DB_ID() AND u.object_id = i.object_id AND u.index_id = i.index_id), 0) AS scans
  FROM sys.indexes AS i
  JOIN sys.objects AS o ON o.object_id = i.object_id
  JOIN sys.schemas AS s ON s.schema_id = o.schema_id
 WHERE i.index_id > 0 AND i.is_hypothetical = 0 AND o.type = 'U' AND o.is_ms_shipped = 0` + schemaFilter(schema) + `
 ORDER BY scans, bytes DESC, s.name, o.name, i.name`
}

// OpsFilesSQL reads the database's files: allocated and used bytes, and
// how far each may grow.
const OpsFilesSQL = `SELECT f.name, LOWER(f.type_desc), CAST(f.size AS bigint) * 8192,
       CAST(FILEPROPERTY(f.name, 'SpaceUsed') AS bigint) * 8192,
       CASE f.max_size WHEN -1 THEN N'unlimited' WHEN 0 THEN N'no growth'
            ELSE CAST(CAST(f.max_size AS bigint) * 8192 AS nvarchar(30)) + N' bytes' END
  FROM sys.database_files AS f
 ORDER BY f.file_id`

// OpsHealthSQL reads one row of figures about the server and this
// database.
const OpsHealthSQL = `SELECT CAST(SERVERPROPERTY('ProductVersion') AS nvarchar(128)), CAST(SERVERPROPERTY('Edition') AS nvarchar(128)),
       (SELECT CAST(DATEDIFF(SECOND, i.sqlserver_start_time, SYSDATETIME()) AS bigint) FROM sys.dm_os_sys_info AS i),
       (SELECT CAST(COUNT(*) AS bigint) FROM sys.dm_exec_sessions WHERE is_user_process = 1),
       CAST(@@MAX_CONNECTIONS AS bigint),
       (SELECT SUM(CAST(size AS bigint)) * 8192 FROM sys.database_files),
       CAST(DATABASEPROPERTYEX(DB_NAME(), 'Status') AS nvarchar(60)),
       CAST(DATABASEPROPERTYEX(DB_NAME(), 'Recovery') AS nvarchar(60)),
       CAST(DATABASEPROPERTYEX(DB_NAME(), 'Updateability') AS nvarchar(60)),
       (SELECT CAST(a.cntr_value AS float) / NULLIF(b.cntr_value, 0)
          FROM sys.dm_os_performance_counters AS a
          JOIN sys.dm_os_performance_counters AS b ON b.object_name = a.object_name AND b.counter_name = N'Buffer cache hit ratio base'
         WHERE a.counter_name = N'Buffer cache hit ratio' AND a.object_name LIKE N'%Buffer Manager%'),
       (SELECT CAST(COUNT(*) AS bigint) FROM sys.dm_exec_requests WHERE blocking_session_id <> 0)`

// schemaFilter narrows a statement over s (sys.schemas) to one schema; the
// name is a Unicode literal, quotes doubled.
func schemaFilter(schema string) string {
	if schema == "" {
		return ""
	}
	return " AND s.name = " + quote(schema)
}

// msReading is what one operational reading holds: the engine, how a
// statement is sent (under the reading's context and request), the schema
// asked for and what the readable patterns allow.
type msReading struct {
	e        *Engine
	run      func(stmt string) (engine.Result, error)
	schema   string
	readable func(schema, name string) bool
}

// read sends one curated statement and records it in r.
func (m msReading) read(r *engine.Reading, stmt string) ([][]any, error) {
	res, err := m.run(stmt)
	r.Sent(stmt, res)
	if err != nil {
		return nil, err
	}
	if res.Rows == nil {
		return nil, nil
	}
	return res.Rows.Rows, nil
}

// hidden reads the relations the readable patterns hide (none when they
// hide nothing), for withholding the statement texts that name one.
func (m msReading) hidden(r *engine.Reading) (map[string]bool, error) {
	if len(m.e.readable) == 0 {
		return nil, nil
	}
	cat, err := m.read(r, RelationsSQL)
	if err != nil {
		return nil, err
	}
	return engine.HiddenNames(cat, m.readable), nil
}

// readings are SQL Server's operational readings, every kind. A table the
// readable patterns hide, and its indexes, are left out and counted; a
// statement text that names a hidden relation is withheld.
var readings = engine.Readings[msReading]{
	Engine: "SQL Server",
	Take: map[contracts.OperationsKind]func(msReading, *engine.Reading) error{
		contracts.OpsSessions: engine.StatementRows(statement(OpsSessionsSQL), msReading.hidden, 3, false,
			"user sessions on this database, the reading's own left out; query is the running request's batch, or the session's last one; running_ms is the current request's elapsed time"),
		contracts.OpsSlowQueries: engine.StatementRows(statement(OpsSlowQueriesSQL), msReading.hidden, 0, true,
			"sys.dm_exec_query_stats: totals for the statements whose plans are still cached, since each was cached; a plan evicted or recompiled starts again"),
		contracts.OpsTableStats: engine.RelationRows(bySchema(OpsTableStatsSQL), readableBy, nil,
			"rows and bytes from sys.dm_db_partition_stats (bytes reserved, indexes included); scans since the server started (seq_scans: scans of the heap or clustered index); SQL Server reports no dead rows here, so dead_rows is NULL; last_analyzed is the newest STATS_DATE"),
		contracts.OpsIndexStats: engine.RelationRows(bySchema(OpsIndexStatsSQL), readableBy, nil,
			"scans are seeks, scans and lookups since the server started (sys.dm_db_index_usage_stats), the least used first"),
		contracts.OpsStorage: func(m msReading, r *engine.Reading) error {
			files, err := m.read(r, OpsFilesSQL)
			if err != nil {
				return err
			}
			rows, err := m.read(r, OpsTableStatsSQL(m.schema))
			if err != nil {
				return err
			}
			for _, f := range files {
				r.Add("", f[0], text(f[1])+" file", f[2], fmt.Sprintf("%s bytes used; grows to %s", engine.NumText(f[3]), text(f[4])))
			}
			r.AddReadable(rows, m.readable, func(row []any) []any {
				return []any{text(row[0]) + "." + text(row[1]), "table", row[3], "reserved pages, indexes included"}
			})
			r.Note("a moment's sizes: SQL Server keeps no history of them here, so growth is not measured")
			return nil
		},
		contracts.OpsHealth: func(m msReading, r *engine.Reading) error {
			rows, err := m.read(r, OpsHealthSQL)
			if err != nil {
				return err
			}
			return health(r, rows)
		},
	},
}

// statement is the Rows of stmt.
func statement(stmt string) engine.Rows[msReading] {
	return func(m msReading, r *engine.Reading) ([][]any, error) { return m.read(r, stmt) }
}

// bySchema is the Rows of the statement sql makes for the schema asked for.
func bySchema(sql func(schema string) string) engine.Rows[msReading] {
	return func(m msReading, r *engine.Reading) ([][]any, error) { return m.read(r, sql(m.schema)) }
}

// readableBy is what the connection's readable patterns allow.
func readableBy(m msReading) func(schema, name string) bool { return m.readable }

// Operations takes one operational reading (engine.Operator).
func (e *Engine) Operations(ctx context.Context, req engine.Request, kind contracts.OperationsKind) (engine.Reading, error) {
	var r engine.Reading
	oreq := engine.Request{Profile: req.Profile, Timeout: req.Timeout, Limits: engine.OperationsLimits(e.opMem)}
	m := msReading{e: e, schema: req.Schema, readable: canRead(e.policy(e.l)),
		run: func(stmt string) (engine.Result, error) { return e.run(ctx, e.l, oreq, stmt, nil) }}
	return r, readings.Read(m, &r, kind)
}

// health turns OpsHealthSQL's row into one row per check.
func health(r *engine.Reading, rows [][]any) error {
	if len(rows) != 1 || len(rows[0]) != 11 {
		return &contracts.DBError{Class: contracts.DBOther, Message: fmt.Sprintf("the health statement returned %d rows, want one of 11 figures", len(rows))}
	}
	h := rows[0]
	r.Add("", "version", h[0], "SERVERPROPERTY('ProductVersion'), "+text(h[1]))
	r.Add("", "uptime_s", engine.NumText(h[2]), "seconds since the server started")
	r.Add("", "connections", fmt.Sprintf("%s of %s", engine.NumText(h[3]), engine.NumText(h[4])), "user sessions on the whole server, of @@MAX_CONNECTIONS")
	r.Add("", "database_bytes", engine.NumText(h[5]), "the database's files, allocated")
	r.Add("", "status", h[6], "DATABASEPROPERTYEX Status")
	r.Add("", "recovery_model", h[7], "DATABASEPROPERTYEX Recovery")
	r.Add("", "updateability", h[8], "DATABASEPROPERTYEX Updateability")
	var ratio any
	if f, ok := h[9].(float64); ok {
		ratio = strconv.FormatFloat(f, 'f', 4, 64)
	}
	r.Add("", "cache_hit_ratio", ratio, "Buffer cache hit ratio (the buffer manager's counter)")
	r.Add("", "blocked_requests", engine.NumText(h[10]), "requests on the server waiting on another session")
	return nil
}
