package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

func openConn(t *testing.T, c connections.Connection) *Engine {
	t.Helper()
	e, err := OpenConnection(context.Background(), c, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e.(*Engine)
}

// TestPolicyEnforced: the connection's readable patterns and large tables
// hold every read, including what SQLite compiles while a statement runs.
func TestPolicyEnforced(t *testing.T) {
	e := openConn(t, connections.Connection{ID: "f", Engine: contracts.EngineSQLite, Path: fixture(t),
		Readable: []string{"main.t", "main.n", "main.sqlite_master"}, LargeTables: map[string]string{"main.n": "i"}})
	for q, want := range map[string]string{
		"select id from t":                                     "",
		"select * from n where i >= 990":                       "",
		"select * from n where i between 1 and 3":              "",
		"select count(*) from n":                               string(contracts.RefuseLargeTableUnbounded),
		"select * from t join n on n.i = t.id":                 string(contracts.RefuseLargeTableUnbounded),
		"select * from \"it's\"":                               string(contracts.RefuseTableNotReadable),
		"select * from v":                                      string(contracts.RefuseTableNotReadable),
		"select * from t where id in (select a from \"it's\")": string(contracts.RefuseTableNotReadable),
		"pragma table_info(\"it's\")":                          string(contracts.RefuseTableNotReadable),
		"pragma table_info(t)":                                 "",
		"select name from pragma_table_info('t')":              "",
	} {
		_, err := read(t, e, q)
		if want == "" {
			if err != nil {
				t.Errorf("%s: %v", q, err)
			}
			continue
		}
		wantRefusal(t, err, contracts.Code(want))
	}
	// The argument of a table-valued pragma is known only when it runs:
	// SQLite compiles the PRAGMA then, and the authorizer denies it.
	_, err := read(t, e, "select name from pragma_table_info('it''s')")
	if d := wantClass(t, err, contracts.DBPermission); !strings.Contains(d.Message, "table_info") {
		t.Errorf("message %q does not name the pragma", d.Message)
	}
	// The inventory names only readable relations and counts the others.
	cat, err := e.Relations(context.Background(), engine.Request{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got := relationNames(cat.Relations); got != "n,t" || cat.Unreadable != 2 {
		t.Errorf("relations %s, %d unreadable", got, cat.Unreadable)
	}
}

func TestRequestLimits(t *testing.T) {
	e := open(t, fixture(t))
	ctx := context.Background()
	req := func(q string, params ...any) engine.Request {
		return engine.Request{SQL: q, Params: params, Limits: truncateLimits, Timeout: 5 * time.Second}
	}
	long := "select 1 " + strings.Repeat(" ", MaxSQLBytes)
	_, err := e.Read(ctx, req(long))
	wantRefusal(t, err, refuse.BadRequest)

	many := make([]any, MaxParams+1)
	_, err = e.Read(ctx, req("select ?", many...))
	wantRefusal(t, err, refuse.BadRequest)
	_, err = e.Read(ctx, req("select ?", map[string]any{"a": 1}))
	wantRefusal(t, err, refuse.BadRequest)
	_, err = e.Read(ctx, req("select ?", strings.Repeat("x", MaxParamBytes+1)))
	wantRefusal(t, err, refuse.BadRequest)
	// ?129 is past SQLite's own limit on this connection.
	_, err = e.Read(ctx, req("select ?129"))
	if err == nil {
		t.Error("?129 compiled")
	}

	cols := make([]string, MaxColumns+1)
	for i := range cols {
		cols[i] = fmt.Sprintf("%d AS c%d", i, i)
	}
	_, err = e.Read(ctx, req("select "+strings.Join(cols, ", ")))
	wantRefusal(t, err, refuse.Unsupported)

	_, err = e.Read(ctx, req("select 1 AS a, 2 AS A"))
	wantRefusal(t, err, refuse.Unsupported)
	_, err = e.Read(ctx, req("select * from t a join t b on a.id = b.id"))
	var r *contracts.Refusal
	if wantRefusal(t, err, refuse.Unsupported); err != nil {
		r = err.(*contracts.Refusal)
		if !strings.Contains(r.Fix, "AS aliases") {
			t.Errorf("fix %q", r.Fix)
		}
	}

	// Values past 1 MB: built by the statement, or stored in the file. The
	// truncating profile gets what fitted, marked truncated.
	res, err := e.Read(ctx, req("select zeroblob(2000000)"))
	if err != nil || !res.Rows.Truncated {
		t.Errorf("zeroblob(2000000) truncating: %v, %+v", err, res.Rows)
	}
	_, err = e.Read(ctx, req("select 1e999"))
	if d := wantClass(t, err, contracts.DBOther); !strings.Contains(d.Message, "not a finite number") {
		t.Errorf("message %q", d.Message)
	}
}

func TestStoredValueTooBig(t *testing.T) {
	path := fixture(t)
	w, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Exec("CREATE TABLE big (b BLOB); INSERT INTO big VALUES (zeroblob(1500000)), (x'01')"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	e := open(t, path)
	_, err = read(t, e, "select b from big")
	var tooLarge *rowset.TooLargeError
	if !errors.As(err, &tooLarge) {
		t.Errorf("a stored value over the limit: %v, want too large", err)
	}
	res, err := read(t, e, "select length(b) from big where rowid = 2")
	if err != nil || res.Rows.Rows[0][0] != int64(1) {
		t.Fatalf("small value: %v, %v", res.Rows, err)
	}
}

// TestParamsBound: parameters are values, never SQL.
func TestParamsBound(t *testing.T) {
	e := open(t, fixture(t))
	res, err := e.Read(context.Background(), engine.Request{
		SQL:    "select ? + 1 AS n, ? AS s, ? AS f, ? AS z, (select count(*) from t where name = ?) AS c",
		Params: []any{float64(41), "'; drop table t; --", 1.5, nil, "ann"},
		Limits: refuseLimits, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	row := res.Rows.Rows[0]
	if row[0] != int64(42) || row[1] != "'; drop table t; --" || row[2] != 1.5 || row[3] != nil || row[4] != int64(1) {
		t.Errorf("row %#v", row)
	}
}

// TestGuardPolicyDefaults: an engine opened with no policy reads every table.
func TestGuardPolicyDefaults(t *testing.T) {
	e := open(t, fixture(t))
	if e.policy.DefaultSchema != "main" || len(e.policy.Readable) != 0 {
		t.Fatalf("policy %+v", e.policy)
	}
	if _, err := read(t, e, `select * from t, v`); err == nil {
		t.Fatal("duplicate column names passed")
	}
}
