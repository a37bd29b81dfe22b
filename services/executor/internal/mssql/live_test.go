package mssql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	mssqldb "github.com/microsoft/go-mssqldb"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// liveURL is the SQL Server the live tests use: a login that may create a
// schema in its database, on a database with ALLOW_SNAPSHOT_ISOLATION ON.
const liveURL = "SONDE_TEST_MSSQL_URL"

// live opens the test server, creates the fixture schema sonde_test with
// its tables, and drops it when the test ends.
func live(t *testing.T) (*sql.DB, string) {
	t.Helper()
	dsn := os.Getenv(liveURL)
	if dsn == "" {
		t.Skipf("no SQL Server: set %s (e.g. sqlserver://sa:pass@localhost:1433?database=sonde) to run the live tests; the parser-level guard and the showplan parsing are tested without one", liveURL)
	}
	conn, err := mssqldb.NewConnector(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	t.Cleanup(func() { db.Close() })
	ctx := context.Background()
	for _, stmt := range []string{
		"IF SCHEMA_ID('sonde_test') IS NOT NULL BEGIN DROP TABLE IF EXISTS sonde_test.orders; DROP TABLE IF EXISTS sonde_test.events; DROP SCHEMA sonde_test END",
		"CREATE SCHEMA sonde_test",
		"CREATE TABLE sonde_test.orders (id int PRIMARY KEY, total decimal(10,2), note nvarchar(100), ref uniqueidentifier)",
		"INSERT INTO sonde_test.orders VALUES (1, 10.50, N'first', NEWID()), (2, 20.25, N'second', NEWID()), (3, 5.00, NULL, NULL)",
		"CREATE TABLE sonde_test.events (id int PRIMARY KEY, event_date date NOT NULL)",
		"INSERT INTO sonde_test.events VALUES (1, '2026-01-01'), (2, '2026-02-01')",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("fixture: %s: %v", stmt, err)
		}
	}
	t.Cleanup(func() {
		db.Exec("DROP TABLE IF EXISTS sonde_test.orders; DROP TABLE IF EXISTS sonde_test.events; DROP SCHEMA IF EXISTS sonde_test")
	})
	return db, dsn
}

func checksum(t *testing.T, db *sql.DB) string {
	t.Helper()
	var n, s int64
	if err := db.QueryRow("SELECT COUNT(*), CHECKSUM_AGG(BINARY_CHECKSUM(*)) FROM sonde_test.orders").Scan(&n, &s); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(n, "/", s)
}

func TestLiveRead(t *testing.T) {
	db, dsn := live(t)
	ctx := context.Background()
	e, err := Open(ctx, Config{DSN: dsn, Readable: []string{"sonde_test.*"}, LargeTables: map[string]string{"sonde_test.events": "event_date"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req := engine.Request{Profile: contracts.ProfileAgentReadOnly, Limits: rowset.Limits{MaxRows: 200, MaxBytes: 1 << 20}, Timeout: 10 * time.Second}

	req.SQL = "SELECT id, total, note, ref FROM sonde_test.orders ORDER BY id"
	res, err := e.Read(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows.Rows) != 3 || res.Rows.Rows[0][1] != "10.50" {
		t.Errorf("rows %v", res.Rows.Rows)
	}

	before := checksum(t, db)
	for _, sql := range []string{
		"SELECT 1; DELETE FROM sonde_test.orders",
		"SELECT 1 DELETE FROM sonde_test.orders",
		"SELECT * INTO sonde_test.copy FROM sonde_test.orders",
		"SELECT * FROM sonde_test.orders WITH (UPDLOCK)",
		"SELECT * FROM sonde_test.events",
		"SELECT * FROM dbo.anything",
	} {
		req.SQL = sql
		_, err := e.Read(ctx, req)
		var ref *contracts.Refusal
		if !errors.As(err, &ref) {
			t.Errorf("%q: %v, want a refusal", sql, err)
		}
	}
	if after := checksum(t, db); after != before {
		t.Errorf("the table changed: %s -> %s", before, after)
	}

	req.SQL = "SELECT COUNT(*) FROM sonde_test.events WHERE event_date >= '2026-01-15'"
	if _, err := e.Read(ctx, req); err != nil {
		t.Errorf("bounded read: %v", err)
	}
	req.SQL = "SELECT nope FROM sonde_test.orders"
	var de *contracts.DBError
	if _, err := e.Read(ctx, req); !errors.As(err, &de) || de.Class != contracts.DBMissingObject {
		t.Errorf("missing column: %v", err)
	}
	req.SQL = "SELECT COUNT_BIG(*) FROM sonde_test.orders a CROSS JOIN sonde_test.orders b CROSS JOIN sys.all_objects c CROSS JOIN sys.all_objects d CROSS JOIN sys.all_objects f"
	e.readable = append(e.readable, "sys.*")
	req.Timeout = 200 * time.Millisecond
	if _, err := e.Read(ctx, req); !errors.As(err, &de) || de.Class != contracts.DBTimeout {
		t.Errorf("long statement: %v, want a timeout", err)
	}
	req.Timeout = 10 * time.Second
	req.SQL = "SELECT 1 AS one"
	if _, err := e.Read(ctx, req); err != nil {
		t.Errorf("the pool did not recover after a timeout: %v", err)
	}

	res, err = e.Schema(ctx, engine.Request{Profile: contracts.ProfileInspect, Schema: "sonde_test", Table: "orders", Limits: req.Limits})
	if err != nil || len(res.Rows.Rows) != 4 {
		t.Errorf("schema: %v, %+v", err, res.Rows)
	}
}

// TestLiveMemoryCancelPrivileges: a value past the operation's memory is
// refused under an agent profile and truncated under inspect, with the
// session closed; a cancelled context stops the statement at the server
// (go-mssqldb sends an attention); the test login, which created a schema,
// is reported as able to write.
func TestLiveMemoryCancelPrivileges(t *testing.T) {
	_, dsn := live(t)
	ctx := context.Background()
	e, err := Open(ctx, Config{DSN: dsn, Readable: []string{"sonde_test.*", "sys.all_objects"}, OperationMemory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()

	reasons, err := e.WriteCapable(ctx)
	if err != nil || len(reasons) == 0 {
		t.Errorf("a login that creates schemas: %q, %v; want reasons", reasons, err)
	}

	req := engine.Request{Profile: contracts.ProfileAgentReadOnly, Limits: rowset.Limits{MaxRows: 10, MaxBytes: 8 << 20}, Timeout: 30 * time.Second}
	for _, sql := range []string{
		"SELECT REPLICATE(CAST('x' AS varchar(max)), 5000000) AS big",
		"SELECT REPLICATE(CAST(N'x' AS nvarchar(max)), 5000000) AS big",
		"SELECT CAST(REPLICATE(CAST('x' AS varchar(max)), 5000000) AS varbinary(max)) AS big",
	} {
		req.SQL = sql
		var tooLarge *rowset.TooLargeError
		if _, err := e.Read(ctx, req); !errors.As(err, &tooLarge) {
			t.Errorf("%s: %v, want too large", sql, err)
		}
	}
	req.Profile, req.Limits.Truncate = contracts.ProfileInspect, true
	req.SQL = "SELECT REPLICATE(CAST('x' AS varchar(max)), 5000000) AS big"
	if res, err := e.Read(ctx, req); err != nil || !res.Rows.Truncated {
		t.Errorf("inspect: %v, %+v; want truncated", err, res.Rows)
	}
	req.SQL = "SELECT 1 AS one"
	if _, err := e.Read(ctx, req); err != nil {
		t.Errorf("the pool did not recover after a value too large: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(300*time.Millisecond, cancel)
	req.SQL = "SELECT COUNT_BIG(*) FROM sys.all_objects a CROSS JOIN sys.all_objects b CROSS JOIN sys.all_objects c CROSS JOIN sys.all_objects d"
	start := time.Now()
	var de *contracts.DBError
	if _, err := e.Read(cctx, req); !errors.As(err, &de) || de.Class != contracts.DBCancelled {
		t.Errorf("cancelled: %v, want cancelled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the cancelled statement took %s to stop", d)
	}
}
