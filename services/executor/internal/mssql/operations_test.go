package mssql

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// These tests hold the composed DMV statements and the projection of their
// rows; that SQL Server answers them is for a live server
// (TestLiveOperations).

func TestOperationsSQL(t *testing.T) {
	for name, c := range map[string]struct {
		sql  string
		want []string
	}{
		"sessions": {OpsSessionsSQL, []string{"sys.dm_exec_sessions", "sys.dm_exec_requests", "blocking_session_id",
			"s.is_user_process = 1", "s.session_id <> @@SPID", "s.database_id = DB_ID()", "TOP (10000)"}},
		"slow-queries": {OpsSlowQueriesSQL, []string{"sys.dm_exec_query_stats", "sys.dm_exec_sql_text", "pa.attribute = N'dbid'",
			"d.dbid = DB_ID()", "ORDER BY qs.total_elapsed_time DESC", "TOP (10000)"}},
		"table-stats": {OpsTableStatsSQL(""), []string{"sys.dm_db_partition_stats", "sys.dm_db_index_usage_stats", "STATS_DATE",
			"o.type = 'U'", "ORDER BY bytes DESC"}},
		"index-stats": {OpsIndexStatsSQL(""), []string{"sys.indexes", "i.is_hypothetical = 0", "i.is_unique", "ORDER BY scans, bytes DESC"}},
		"files":       {OpsFilesSQL, []string{"sys.database_files", "FILEPROPERTY(f.name, 'SpaceUsed')"}},
		"health":      {OpsHealthSQL, []string{"SERVERPROPERTY('ProductVersion')", "sys.dm_os_sys_info", "@@MAX_CONNECTIONS", "Buffer cache hit ratio base"}},
	} {
		for _, w := range c.want {
			if !strings.Contains(c.sql, w) {
				t.Errorf("%s: lacks %q", name, w)
			}
		}
		if strings.Contains(c.sql, ";") {
			t.Errorf("%s: more than one statement", name)
		}
	}
	// The schema narrows in the statement, as a literal with its quotes
	// doubled: a hostile schema name cannot end the string.
	hostile := "x'; DROP TABLE dbo.orders; --"
	for _, sql := range []string{OpsTableStatsSQL(hostile), OpsIndexStatsSQL(hostile)} {
		if !strings.Contains(sql, "AND s.name = N'x''; DROP TABLE dbo.orders; --'") {
			t.Errorf("schema filter:\n%s", sql)
		}
	}
	if strings.Contains(OpsTableStatsSQL(""), "s.name = ") {
		t.Error("an empty schema narrows")
	}
}

// cannedReading is an operational reading of e whose statements answer
// rows[statement] (and the relations of RelationsSQL) instead of reaching a
// server, so the table's projections are read offline.
func cannedReading(e *Engine, readable func(schema, name string) bool, rows map[string][][]any) msReading {
	return msReading{e: e, readable: readable, run: func(stmt string) (engine.Result, error) {
		return engine.Result{Statements: 1, Rows: &rowset.Set{Rows: rows[stmt]}}, nil
	}}
}

func TestOperationsProjection(t *testing.T) {
	e := offline([]string{"dbo.*"})
	pol := e.policy(&login{catalog: "shop", defaultSchema: "dbo"})
	readable := canRead(pol)
	relations := [][]any{{"dbo", "orders", "U"}, {"secret", "keys", "U"}, {"dbo", "salaries", "U"}}
	hidden := engine.HiddenNames(relations, readable)
	if !hidden["keys"] || !hidden["secret"] || hidden["dbo"] || hidden["orders"] {
		t.Fatalf("hidden %v", hidden)
	}
	hostile := "x]; DROP TABLE dbo.orders; --\nnext"
	cases := []struct {
		kind        contracts.OperationsKind
		rows, files [][]any
		rowsOut     int
		hiddenOut   int
		withheld    int
	}{
		{contracts.OpsSessions, [][]any{
			{"52", "app", "suspended", "SELECT * FROM dbo.orders", int64(1200), "LCK_M_S: KEY: 5:72057594043236352 (8194443284a0)", "51"},
			{"51", "app", "sleeping", "UPDATE secret.keys SET k = 1", nil, nil, nil},
		}, nil, 2, 0, 1},
		{contracts.OpsSlowQueries, [][]any{
			{"SELECT count(*) FROM [secret].[keys]", int64(3), 12.5, 4.1, int64(3)},
			{"SELECT * FROM dbo.orders", int64(10), 10.0, 1.0, int64(100)},
		}, nil, 1, 1, 0},
		{contracts.OpsTableStats, [][]any{
			{"dbo", "orders", int64(100), int64(65536), nil, int64(2), int64(5), "2026-01-01T00:00:00"},
			{"secret", "keys", int64(1), int64(8192), nil, nil, nil, nil},
			{"dbo", hostile, int64(0), int64(0), nil, nil, nil, nil},
		}, nil, 2, 1, 0},
		{contracts.OpsIndexStats, [][]any{
			{"dbo", "orders", "PK_orders", true, int64(16384), int64(40)},
			{"secret", "keys", "PK_keys", true, int64(8192), int64(0)},
		}, nil, 1, 1, 0},
		{contracts.OpsStorage, [][]any{
			{"dbo", "orders", int64(100), int64(65536), nil, nil, nil, nil},
			{"secret", "keys", int64(1), int64(8192), nil, nil, nil, nil},
		}, [][]any{{"shop", "rows", int64(8 << 20), int64(3 << 20), "unlimited"}, {"shop_log", "log", int64(1 << 20), int64(1 << 19), "2097152 bytes"}}, 3, 1, 0},
		{contracts.OpsHealth, [][]any{{"16.0.1000.6", "Developer Edition", int64(3600), int64(12), int64(32767), int64(9 << 20),
			"ONLINE", "FULL", "READ_WRITE", 0.9987, int64(1)}}, nil, 9, 0, 0},
	}
	statement := map[contracts.OperationsKind]string{
		contracts.OpsSessions: OpsSessionsSQL, contracts.OpsSlowQueries: OpsSlowQueriesSQL, contracts.OpsTableStats: OpsTableStatsSQL(""),
		contracts.OpsIndexStats: OpsIndexStatsSQL(""), contracts.OpsStorage: OpsTableStatsSQL(""), contracts.OpsHealth: OpsHealthSQL,
	}
	for _, c := range cases {
		var r engine.Reading
		m := cannedReading(e, readable, map[string][][]any{statement[c.kind]: c.rows, OpsFilesSQL: c.files, RelationsSQL: relations})
		if err := readings.Read(m, &r, c.kind); err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		b, _ := json.Marshal(r.Rows)
		if len(r.Rows) != c.rowsOut || r.Hidden != c.hiddenOut || r.Withheld != c.withheld {
			t.Errorf("%s: %d rows, %d hidden, %d withheld: %s", c.kind, len(r.Rows), r.Hidden, r.Withheld, b)
		}
		for _, row := range r.Rows {
			if len(row) != len(contracts.OperationsColumns[c.kind]) {
				t.Errorf("%s: row %v, want %d values", c.kind, row, len(contracts.OperationsColumns[c.kind]))
			}
		}
		if strings.Contains(strings.ToLower(string(b)), "keys") {
			t.Errorf("%s names the hidden table: %s", c.kind, b)
		}
	}
	var r engine.Reading
	if err := readings.Read(cannedReading(e, readable, nil), &r, contracts.OpsHealth); err == nil {
		t.Error("a health statement with no row was accepted")
	}
}
