package duckdb

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	duckdb "github.com/duckdb/duckdb-go/v2"
)

// layerWrite is one statement the engine's instance settings must refuse on
// their own, with the DuckDB error type and words that say which setting
// refused it.
type layerWrite struct {
	sql     string
	typ     duckdb.ErrorType
	words   string
	control bool // runs on a writable instance with default settings
}

// layerWrites covers what each setting holds: access_mode=READ_ONLY
// (writes, DDL, sequences), enable_external_access=false (files: COPY TO,
// EXPORT, ATTACH, reading files, extensions) and lock_configuration (SET,
// RESET). dir is an empty directory the file writes aim at.
func layerWrites(dir string) []layerWrite {
	const (
		readOnly = "read-only mode"
		noFiles  = "disabled by configuration"
		locked   = "the configuration has been locked"
	)
	in, perm := duckdb.ErrorTypeInvalidInput, duckdb.ErrorTypePermission
	return []layerWrite{
		{"INSERT INTO orders VALUES (999, 1, 'x', 1, DATE '2025-01-01')", in, readOnly, true},
		{"UPDATE orders SET total = 0", in, readOnly, true},
		{"DELETE FROM secrets", in, readOnly, true},
		{"CREATE TABLE x (i INTEGER)", in, readOnly, true},
		{"CREATE VIEW w AS SELECT 1 AS one", in, readOnly, true},
		{"ALTER TABLE orders ADD COLUMN z INTEGER", in, readOnly, true},
		{"SELECT nextval('seq')", in, readOnly, true},
		{"DROP TABLE secrets", in, readOnly, true},
		{"COPY orders TO '" + filepath.Join(dir, "o.csv") + "'", perm, noFiles, true},
		{"COPY (SELECT 1 AS one) TO '" + filepath.Join(dir, "p.parquet") + "' (FORMAT parquet)", perm, noFiles, true},
		{"EXPORT DATABASE '" + filepath.Join(dir, "export") + "'", perm, noFiles, true},
		{"ATTACH '" + filepath.Join(dir, "other.duckdb") + "' AS other", perm, noFiles, true},
		{"ATTACH ':memory:' AS mem", duckdb.ErrorTypeCatalog, readOnly, true},
		{"SELECT * FROM read_csv('/etc/passwd')", perm, noFiles, true},
		{"INSTALL httpfs", perm, noFiles, false},
		{"LOAD httpfs", perm, "disabled through configuration", false},
		{"SET enable_external_access = true", in, locked, false},
		{"SET lock_configuration = false", in, locked, true},
		{"SET memory_limit = '100GB'", in, locked, true},
		{"SET threads = 16", in, locked, true},
		{"SET temp_directory = '" + filepath.Join(dir, "spill") + "'", in, locked, true},
		{"SET max_temp_directory_size = '10GB'", in, locked, true},
		{"SET access_mode = 'READ_WRITE'", in, locked, false},
		{"RESET access_mode", in, locked, false},
		{"SET GLOBAL autoinstall_known_extensions = true", in, locked, true},
	}
}

// TestInstanceSettingsAlone sends every write straight to the engine's own
// instance — past the guard and past DuckDB's single-statement prepare, on
// every connection of its pool — so only the settings the engine opened the
// file with stand. Each is refused with the error of the setting that holds
// it, and the file, the files beside it and the directory the writes aim at
// do not change. A control runs the statements DuckDB accepts by default on
// a writable copy of the file: each is a real write there.
func TestInstanceSettingsAlone(t *testing.T) {
	e, path := corpusEngine(t)
	ctx := context.Background()

	controlDir := t.TempDir()
	control := filepath.Join(t.TempDir(), "control.duckdb")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(control, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cdb, err := sql.Open("duckdb", control)
	if err != nil {
		t.Fatal(err)
	}
	cdb.SetMaxOpenConns(1)
	for _, w := range layerWrites(controlDir) {
		if !w.control {
			continue
		}
		if _, err := cdb.ExecContext(ctx, w.sql); err != nil {
			t.Errorf("control: %s fails on a writable instance (%v); it is not a write the settings refuse", w.sql, err)
		}
	}
	cdb.Close()

	dir := t.TempDir()
	before, files := digest(t, path), dirListing(t, path)
	conns := make([]*sql.Conn, MaxConns)
	for i := range conns {
		if conns[i], err = e.db.Conn(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, c := range conns {
		for _, w := range layerWrites(dir) {
			_, err := c.ExecContext(ctx, w.sql)
			var de *duckdb.Error
			if !errors.As(err, &de) || de.Type != w.typ || !strings.Contains(de.Msg, w.words) {
				t.Errorf("connection %d: %s: %v, want DuckDB error type %d saying %q", i, w.sql, err, w.typ, w.words)
			}
		}
	}
	for _, c := range conns {
		c.Close()
	}
	if after := digest(t, path); after != before {
		t.Fatalf("the database file changed: %s -> %s", before, after)
	}
	if after := dirListing(t, path); after != files {
		t.Fatalf("files beside the database changed: %s -> %s", files, after)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("files were written where the statements aimed: %v", left)
	}
}
