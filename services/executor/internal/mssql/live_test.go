package mssql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
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

}

// TestLiveCatalog: Relations and Describe against a server, on tables with
// every key shape, a view and a table no pattern allows.
func TestLiveCatalog(t *testing.T) {
	db, dsn := live(t)
	ctx := context.Background()
	drop := "DROP VIEW IF EXISTS sonde_test.big_orders; DROP TABLE IF EXISTS sonde_test.lines; " +
		"DROP TABLE IF EXISTS sonde_test.customers; DROP TABLE IF EXISTS sonde_test.secrets"
	for _, stmt := range []string{
		drop,
		"CREATE TABLE sonde_test.customers (id int PRIMARY KEY, email nvarchar(200) NOT NULL UNIQUE, country char(2), region varchar(10), CONSTRAINT customers_place UNIQUE (country, region))",
		"CREATE TABLE sonde_test.secrets (id int PRIMARY KEY)",
		"CREATE TABLE sonde_test.lines (order_id int NOT NULL REFERENCES sonde_test.orders (id), n int NOT NULL, customer_id int REFERENCES sonde_test.customers (id), secret_id int REFERENCES sonde_test.secrets (id), amount decimal(12,2), at datetime2(3), CONSTRAINT lines_pk PRIMARY KEY (order_id, n))",
		"CREATE INDEX lines_at ON sonde_test.lines (at, amount) INCLUDE (customer_id)",
		"CREATE UNIQUE INDEX lines_customer ON sonde_test.lines (customer_id, order_id, n)",
		"CREATE VIEW sonde_test.big_orders AS SELECT id, total FROM sonde_test.orders WHERE total > 10",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("fixture: %s: %v", stmt, err)
		}
	}
	t.Cleanup(func() { db.Exec(drop) })
	readable := []string{"SONDE_TEST.orders", "sonde_test.events", "sonde_test.customers", "sonde_test.lines", "sonde_test.big_orders"}
	e, err := Open(ctx, Config{DSN: dsn, Readable: readable})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	req := engine.Request{Profile: contracts.ProfileInspect, Timeout: 10 * time.Second}
	cat, err := e.Relations(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range cat.Relations {
		if r.Schema == "sonde_test" {
			got = append(got, r.Name+":"+string(r.Kind))
		}
	}
	want := "big_orders:view customers:table events:table lines:table orders:table"
	if strings.Join(got, " ") != want || cat.Unreadable < 1 || cat.Statements != 1 {
		t.Errorf("relations %q (%d unreadable, %d statements), want %q", got, cat.Unreadable, cat.Statements, want)
	}
	desc, err := e.Describe(ctx, req, []contracts.Relation{
		{Schema: "sonde_test", Name: "LINES"}, {Schema: "sonde_test", Name: "customers"},
		{Schema: "sonde_test", Name: "big_orders"}, {Schema: "sonde_test", Name: "secrets"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(desc.Relations) != 3 || desc.Unreadable != 1 || desc.Statements != 2 {
		t.Fatalf("describe: %+v", desc)
	}
	lines, customers, view := desc.Relations[0], desc.Relations[1], desc.Relations[2]
	if lines.Name != "lines" || len(lines.Columns) != 6 || lines.Columns[4].Type != "decimal(12,2)" || lines.Columns[5].Type != "datetime2(3)" ||
		strings.Join(lines.PrimaryKey, ",") != "order_id,n" || len(lines.ForeignKeys) != 2 || len(lines.Indexes) != 2 ||
		strings.Join(lines.Indexes[0].Columns, ",") != "at,amount" || !lines.Indexes[1].Unique || lines.Stats == nil {
		t.Errorf("lines: %+v", lines)
	}
	if len(customers.Unique) != 2 || customers.Columns[1].Type != "nvarchar(200)" || customers.Columns[1].Nullable {
		t.Errorf("customers: %+v", customers)
	}
	if view.Kind != contracts.RelationView || view.Stats != nil || len(view.Columns) != 2 {
		t.Errorf("view: %+v", view)
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
