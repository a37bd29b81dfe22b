package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/demodb"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// demoFiles writes the demo database and a connections file naming it.
func demoFiles(t *testing.T) (db, conns string) {
	t.Helper()
	dir := t.TempDir()
	db = filepath.Join(dir, "shop.db")
	if err := demodb.Ensure(db); err != nil {
		t.Fatal(err)
	}
	conns = filepath.Join(dir, "connections.yaml")
	yaml := "connections:\n  - id: shop\n    engine: sqlite\n    path: shop.db\n" +
		"    readable: [\"main.orders\", \"main.customers\", \"main.sqlite_master\"]\n" +
		"    large_tables:\n      main.orders: ordered_at\n"
	if err := os.WriteFile(conns, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return db, conns
}

// run executes the sonde command line args in process and returns its
// output and exit status.
func run(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	var cmd = newQueryCmd()
	if args[0] == "sqlite" {
		cmd = newSQLiteCmd()
	}
	cmd.SetArgs(args[1:])
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	var ee *exitError
	switch {
	case err == nil:
		code = ExitOK
	case errors.As(err, &ee):
		code = ee.code
	default:
		code = ExitError
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

func TestQueryCommand(t *testing.T) {
	_, conns := demoFiles(t)
	base := []string{"query", "--connections", conns, "--connection", "shop"}

	out, errOut, code := run(t, append(base, "select status, count(*) AS n from orders where ordered_at >= '2025-01-01' group by status order by status")...)
	if code != ExitOK || !strings.Contains(out, "status") || !strings.Contains(out, "paid") || !strings.Contains(out, "rows)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}

	out, _, code = run(t, append(base, "--json", "--limit", "3", "select id, customer_id from orders where ordered_at >= '2024-01-01' order by id")...)
	var res api.QueryResponse
	if code != ExitOK || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("exit %d\n%s", code, out)
	}
	if res.RowCount != 3 || !res.Truncated || len(res.TruncatedBy) != 1 || res.TruncatedBy[0] != "rows" || res.Columns[1].Name != "customer_id" {
		t.Errorf("result %+v", res)
	}

	for q, want := range map[string]string{
		"select * from orders":         string(contracts.RefuseLargeTableUnbounded),
		"select * from payments":       string(contracts.RefuseTableNotReadable),
		"select 1; delete from orders": string(contracts.RefuseNotOneStatement),
		"delete from orders":           string(contracts.RefuseNotASelect),
		"select load_extension('x')":   string(contracts.RefuseFunctionDenied),
		"select 1 AS a, 2 AS a":        string(contracts.RefuseUnsupported),
	} {
		out, _, code := run(t, append(base, "--json", q)...)
		// --json prints a refusal as the HTTP API answers an error.
		var eb api.ErrorBody
		r := &eb.Error
		if code != ExitRefused || json.Unmarshal([]byte(out), &eb) != nil || r.Code != contracts.Code(want) || r.Message == "" || r.Fix == "" {
			t.Errorf("%s: exit %d, %s; want refusal %s", q, code, out, want)
		}
	}
	_, errOut, code = run(t, append(base, "select * from orders")...)
	if code != ExitRefused || !strings.Contains(errOut, "refused (large_table_unbounded)") || !strings.Contains(errOut, "fix:") {
		t.Errorf("text refusal: exit %d, %s", code, errOut)
	}

	out, _, code = run(t, append(base, "--json", "select nope from customers")...)
	var dbErr api.ErrorBody
	if code != ExitError || json.Unmarshal([]byte(out), &dbErr) != nil || dbErr.Error.Code != contracts.CodeDBMissingObject || dbErr.Error.Message == "" {
		t.Errorf("database error: exit %d, %s", code, out)
	}

	_, errOut, code = run(t, "query", "--connections", conns, "--connection", "nope", "select 1")
	if code != ExitRefused || !strings.Contains(errOut, "shop (sqlite)") {
		t.Errorf("unknown connection: exit %d", code)
	}
	_, _, code = run(t, append(base, "--limit", "5000", "select 1")...)
	if code != ExitRefused {
		t.Errorf("--limit 5000: exit %d", code)
	}
}

func TestSQLiteCommand(t *testing.T) {
	db, _ := demoFiles(t)
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}

	out, errOut, code := run(t, "sqlite", db)
	if code != ExitOK || !strings.Contains(out, "\"main\".\"orders\" -- table") /* not a terminal: plain ASCII */ || !strings.Contains(out, "\"main\".\"payments\"") {
		t.Fatalf("tables: exit %d\n%s\n%s", code, out, errOut)
	}

	out, _, code = run(t, "sqlite", db, "--json", "--params", `[3, "paid"]`,
		"select id, status from orders where id > ? and status = ? order by id")
	var res api.QueryResponse
	if code != ExitOK || json.Unmarshal([]byte(out), &res) != nil || res.RowCount == 0 || res.RowCount > 200 {
		t.Fatalf("params: exit %d\n%s", code, out)
	}
	if id, _ := res.Rows[0][0].(float64); id <= 3 || res.Rows[0][1] != "paid" {
		t.Errorf("first row %v", res.Rows[0])
	}

	out, _, code = run(t, "sqlite", db, "--json", "select x'00ff' AS b, NULL AS n, 1.5 AS f")
	if code != ExitOK || !strings.Contains(out, `"type": "blob"`) || !strings.Contains(out, `"hex": "00ff"`) {
		t.Errorf("blob: exit %d\n%s", code, out)
	}
	_, _, code = run(t, "sqlite", db, "pragma writable_schema = 1")
	if code != ExitRefused {
		t.Errorf("pragma: exit %d", code)
	}
	out, _, code = run(t, "sqlite", db, "pragma table_info(orders)")
	if code != ExitOK || !strings.Contains(out, "ordered_at") {
		t.Errorf("table_info: exit %d\n%s", code, out)
	}
	_, _, code = run(t, "sqlite", filepath.Join(t.TempDir(), "missing.db"))
	if code != ExitRefused {
		t.Errorf("missing file: exit %d", code)
	}

	after, err := os.ReadFile(db)
	if err != nil || !bytes.Equal(before, after) {
		t.Fatal("the database file changed")
	}
}

func TestQueryHTTP(t *testing.T) {
	s := stacktest.Start(t, stacktest.Options{NoOrchestrator: true,
		Tokens: map[string]contracts.Actor{"tok": {ID: "ann", Role: contracts.RoleMember}}})
	ctx := context.Background()
	c := s.Client("tok")

	res, err := c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "select id, status from orders where id <= ? order by id",
		Params: []any{5}, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.RowCount != 2 || !res.Truncated || res.TruncatedBy[0] != "rows" || res.Columns[0].Name != "id" || len(res.Rows) != 2 {
		t.Errorf("result %+v", res)
	}

	var ae *client.APIError
	_, err = c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "select 1; delete from orders"})
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || ae.Code != contracts.RefuseNotOneStatement || ae.Fix == "" {
		t.Errorf("refusal: %v", err)
	}
	_, err = c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "select nope from orders"})
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || ae.Code != "db_missing_object" {
		t.Errorf("database error: %v", err)
	}
	_, err = c.Query(ctx, api.QueryRequest{ConnectionID: "demo", TimeoutMs: 20,
		SQL: "with recursive c(x) as (select 1 union all select x + 1 from c) select count(*) from c"})
	if !errors.As(err, &ae) || ae.Status != http.StatusGatewayTimeout || ae.Code != "db_timeout" {
		t.Errorf("timeout: %v", err)
	}
	_, err = c.Query(ctx, api.QueryRequest{ConnectionID: "nope", SQL: "select 1"})
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code != contracts.CodeUnknownConnection {
		t.Errorf("unknown connection: %v", err)
	}
	_, err = c.Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "select 1", Limit: 1001})
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest {
		t.Errorf("limit 1001: %v", err)
	}
	_, err = s.Client("wrong").Query(ctx, api.QueryRequest{ConnectionID: "demo", SQL: "select 1"})
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized {
		t.Errorf("unauthenticated: %v", err)
	}
}
