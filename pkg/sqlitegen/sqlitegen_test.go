package sqlitegen

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
)

func TestGenerate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "many.db")
	if err := Generate(context.Background(), path, Spec{Tables: 25, ViewEvery: 10, Rows: 2, Analyze: true}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	count := func(q string, args ...any) int {
		t.Helper()
		var n int
		if err := db.QueryRow(q, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return n
	}
	if n := count("SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite%'"); n != 25 {
		t.Errorf("%d tables", n)
	}
	if n := count("SELECT count(*) FROM sqlite_schema WHERE type = 'view'"); n != 3 {
		t.Errorf("%d views", n)
	}
	if n := count("SELECT count(*) FROM " + quote(TableName(24))); n != 2 {
		t.Errorf("%d rows", n)
	}
	if n := count("SELECT count(*) FROM pragma_foreign_key_list(?)", TableName(1)); n != 2 {
		t.Errorf("%d foreign keys of %s", n, TableName(1))
	}
	if n := count("SELECT count(*) FROM sqlite_stat1"); n == 0 {
		t.Error("ANALYZE wrote nothing")
	}
	if err := ManyTables(path, 3); err == nil {
		t.Error("wrote over an existing file")
	}
}
