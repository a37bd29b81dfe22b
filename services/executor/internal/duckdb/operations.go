package duckdb

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

var _ engine.Operator = (*Engine)(nil)

// The operational readings of a DuckDB file. DuckDB runs inside the
// executor's process: the file has no sessions but the executor's own
// connections, and DuckDB keeps no record of the statements it ran, so
// those two kinds are refused. The others read DuckDB's metadata
// functions, on the read path (one SELECT each, DuckDB's prepare agreeing,
// under the request's timeout), never a table's rows. $1 narrows to one
// schema (NULL: every schema).
const (
	// OpsTablesSQL reads duckdb_tables(): rows is DuckDB's estimate, the
	// largest first.
	OpsTablesSQL = `SELECT schema_name, table_name, estimated_size
FROM duckdb_tables()
WHERE database_name = current_database() AND NOT internal AND ($1::VARCHAR IS NULL OR schema_name = $1)
ORDER BY estimated_size DESC NULLS LAST, schema_name, table_name
LIMIT 10000`

	// OpsIndexesSQL reads duckdb_indexes() — the indexes CREATE INDEX made
	// — and, from duckdb_constraints(), the PRIMARY KEY and UNIQUE
	// constraints, for each of which DuckDB keeps an index that
	// duckdb_indexes() does not list.
	OpsIndexesSQL = `SELECT schema_name, table_name, index_name, is_unique FROM (
  SELECT schema_name, table_name, index_name, is_unique
  FROM duckdb_indexes()
  WHERE database_name = current_database()
  UNION ALL
  SELECT DISTINCT schema_name, table_name, constraint_name, true
  FROM duckdb_constraints()
  WHERE database_name = current_database() AND constraint_type IN ('PRIMARY KEY', 'UNIQUE')
)
WHERE $1::VARCHAR IS NULL OR schema_name = $1
ORDER BY schema_name, table_name, index_name
LIMIT 10000`

	// OpsDatabaseSQL reads the file's blocks and the instance's memory,
	// version and settings.
	OpsDatabaseSQL = `SELECT d.database_name, d.block_size, d.total_blocks, d.used_blocks, d.free_blocks,
       d.memory_usage, d.memory_limit, v.library_version, v.source_id,
       current_setting('threads')::VARCHAR, current_setting('access_mode')::VARCHAR
FROM pragma_database_size() AS d, pragma_version() AS v
WHERE d.database_name = current_database()`
)

// duckReading is what one operational reading holds: the engine, the
// statements' context and request, and the schema asked for (nil: every
// schema).
type duckReading struct {
	e      *Engine
	ctx    context.Context
	req    engine.Request
	schema any
}

// read sends one curated statement and records it in r.
func (d duckReading) read(r *engine.Reading, stmt string, params ...any) ([][]any, error) {
	res, err := d.e.run(d.ctx, stmt, params, engine.OperationsLimits(d.e.limit/MaxConns), d.req.Timeout)
	r.Sent(stmt, res)
	if err != nil {
		return nil, err
	}
	return res.Rows.Rows, nil
}

// readings are DuckDB's operational readings; a table the readable
// patterns hide, and its indexes, are left out and counted.
var readings = engine.Readings[duckReading]{
	Engine: "DuckDB",
	Refused: map[contracts.OperationsKind]string{
		contracts.OpsSessions:    "DuckDB runs inside the executor, not as a server: the file has no sessions but the executor's own",
		contracts.OpsSlowQueries: "DuckDB keeps no record of the statements it ran, so none can be reported as slow",
	},
	Take: map[contracts.OperationsKind]func(duckReading, *engine.Reading) error{
		contracts.OpsTableStats: engine.RelationRows(bySchema(OpsTablesSQL), readableBy, func(row []any) []any {
			return []any{text(row[0]), text(row[1]), row[2], nil, nil, nil, nil, nil}
		}, "rows is duckdb_tables().estimated_size; DuckDB reports no size, dead rows, scans or analysis time per table, so those are NULL"),
		contracts.OpsIndexStats: engine.RelationRows(bySchema(OpsIndexesSQL), readableBy, func(row []any) []any {
			return []any{text(row[0]), text(row[1]), row[2], row[3], nil, nil}
		}, "the indexes CREATE INDEX made (duckdb_indexes), and the PRIMARY KEY and UNIQUE constraints by their constraint names (DuckDB keeps an index for each); DuckDB reports no index size or scans, so those are NULL"),
		contracts.OpsStorage: databaseReading(contracts.OpsStorage),
		contracts.OpsHealth:  databaseReading(contracts.OpsHealth),
	},
}

// bySchema is the Rows of stmt, narrowed to the schema asked for.
func bySchema(stmt string) engine.Rows[duckReading] {
	return func(d duckReading, r *engine.Reading) ([][]any, error) { return d.read(r, stmt, d.schema) }
}

// readableBy is what the connection's readable patterns allow.
func readableBy(d duckReading) func(schema, name string) bool { return d.e.readable }

// Operations takes one operational reading (engine.Operator).
func (e *Engine) Operations(ctx context.Context, req engine.Request, kind contracts.OperationsKind) (engine.Reading, error) {
	var r engine.Reading
	d := duckReading{e: e, ctx: ctx, req: req}
	if req.Schema != "" {
		d.schema = req.Schema
	}
	return r, readings.Read(d, &r, kind)
}

// databaseReading takes the storage or health reading, both from
// OpsDatabaseSQL.
func databaseReading(kind contracts.OperationsKind) func(duckReading, *engine.Reading) error {
	return func(d duckReading, r *engine.Reading) error {
		rows, err := d.read(r, OpsDatabaseSQL)
		if err != nil {
			return err
		}
		if len(rows) != 1 {
			return &contracts.DBError{Class: contracts.DBOther, Message: "pragma_database_size() holds no row for this database"}
		}
		database(r, kind, rows[0], d.e.walBytes())
		return nil
	}
}

// walBytes is the size of the file's write-ahead log, nil when there is
// none.
func (e *Engine) walBytes() any {
	fi, err := os.Stat(e.path + ".wal")
	if err != nil {
		return nil
	}
	return fi.Size()
}

// database turns OpsDatabaseSQL's row into the storage or health reading.
func database(r *engine.Reading, kind contracts.OperationsKind, row []any, wal any) {
	block, _ := row[1].(int64)
	total, _ := row[2].(int64)
	used, _ := row[3].(int64)
	free, _ := row[4].(int64)
	name := text(row[0])
	if kind == contracts.OpsStorage {
		r.Add("", name, "database", total*block, fmt.Sprintf("%d blocks of %d bytes, %d in use", total, block, used))
		r.Add("", "free blocks", "free", free*block, fmt.Sprintf("%d blocks inside the file hold no data; CHECKPOINT or a copy of the database returns them", free))
		if wal != nil {
			r.Add("", "write-ahead log", "wal", wal, "the .wal file beside the database, not yet checkpointed into it")
		}
		r.Note("DuckDB reports no size per table; a moment's sizes, with no history, so growth is not measured")
		return
	}
	r.Add("", "version", text(row[7]), "DuckDB library "+text(row[8]))
	r.Add("", "database_bytes", strconv.FormatInt(total*block, 10), fmt.Sprintf("%d blocks of %d bytes, %d in use, %d free", total, block, used, free))
	r.Add("", "memory", text(row[5]), "in use by the executor's DuckDB instance, of its memory_limit "+text(row[6]))
	r.Add("", "threads", text(row[9]), "the instance's threads setting")
	r.Add("", "access_mode", text(row[10]), "how the executor opened the file")
	var walText any
	if n, ok := wal.(int64); ok {
		walText = strconv.FormatInt(n, 10)
	}
	r.Add("", "wal_bytes", walText, "the .wal file beside the database; NULL when there is none")
}
