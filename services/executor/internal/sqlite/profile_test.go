package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

func profileFixture(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "p.db")
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{
		`CREATE TABLE "t""; DROP TABLE secret; --" (id INTEGER PRIMARY KEY, note TEXT, code)`,
		`INSERT INTO "t""; DROP TABLE secret; --" VALUES (1, 'a@b.cd', '123456789012'), (2, NULL, 7), (3, 'x', NULL)`,
		"CREATE TABLE secret (k TEXT)", "INSERT INTO secret VALUES ('key')",
		"CREATE INDEX secret_k ON secret (k)",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

func TestProfileSQLite(t *testing.T) {
	path := profileFixture(t)
	before := fileState(t, path)
	name := `t"; DROP TABLE secret; --`
	e, err := Open(context.Background(), path, guard.Policy{Readable: []string{`"t""; DROP TABLE secret; --"`}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx := context.Background()
	req := engine.Request{Timeout: 5 * time.Second}
	cat, err := e.Describe(ctx, req, []contracts.Relation{{Schema: DefaultSchema, Name: name}})
	if err != nil || len(cat.Relations) != 1 {
		t.Fatalf("describe: %v", err)
	}
	rel := cat.Relations[0]
	res, err := e.Profile(ctx, req, engine.ProfileRequest{Relation: rel, Columns: rel.Columns, Depth: contracts.DepthPattern})
	if err != nil {
		t.Fatal(err)
	}
	note, code := res.Columns[1], res.Columns[2]
	if res.Rows != 3 || note.Present != 2 || *note.Distinct != 2 || *note.EmailLike != 1 || *note.DigitRun != 0 ||
		code.Present != 2 || *code.DigitRun != 1 || res.Columns[0].EmailLike != nil {
		t.Fatalf("%+v", res)
	}

	// The connection's authorizer holds a composed statement too: one that
	// reads an unreadable table, or calls a function off the allowlist, is
	// denied while SQLite compiles it.
	for what, pred := range map[string]string{
		"unreadable table": "(SELECT count(*) FROM secret) > 0",
		"load_extension":   "load_extension('x') IS NULL",
		"writable pragma":  "(SELECT count(*) FROM pragma_writable_schema) > 0",
	} {
		hostile := Dialect
		hostile.EmailLike = func(string) string { return pred }
		plan := engine.ComposeProfile(hostile, engine.ProfileRequest{Relation: rel, Columns: rel.Columns, Depth: contracts.DepthPattern}, 0)
		db, _ := e.current(ctx)
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = plan.Read(e.run(ctx, conn, plan.SQL, nil, nil, profileLimits, time.Second))
		conn.Close()
		var dbErr *contracts.DBError
		if !errors.As(err, &dbErr) || dbErr.Class != contracts.DBPermission && !strings.Contains(dbErr.Message, "not authorized") {
			t.Errorf("%s: %v", what, err)
		}
	}

	// The index of the unreadable table is counted, never named.
	un, err := e.Unprofilable(ctx, req)
	if err != nil || len(un.Relations) != 0 || un.Unreadable != 1 {
		t.Errorf("unprofilable %+v %v", un, err)
	}
	if fileState(t, path) != before {
		t.Fatal("the file changed")
	}
}
