// Package sqlitegen writes SQLite database files with many tables — views,
// foreign keys, indexes, a few rows each — for the tests and benchmarks of
// what must hold on production-sized schemas (the inventory, its packing,
// inspect_schema's paging). The files are deterministic: the same Spec
// writes the same tables with the same names and rows.
package sqlitegen

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	_ "modernc.org/sqlite" // the database/sql driver "sqlite"
)

// Spec says what Generate writes.
type Spec struct {
	// Tables is the number of ordinary tables, named TableName(0) …
	// TableName(Tables-1).
	Tables int
	// ViewEvery puts a view, ViewName(i), over every ViewEvery-th table
	// (i = 0, ViewEvery, 2·ViewEvery, …); 0 writes no view.
	ViewEvery int
	// Rows is the number of rows in each table.
	Rows int
	// Analyze runs ANALYZE at the end, which writes sqlite_stat1.
	Analyze bool
}

// words give the tables names a ranking by the words of an objective can
// tell apart.
var words = []string{"orders", "customers", "invoices", "payments", "shipments", "products",
	"suppliers", "accounts", "ledger", "events", "sessions", "tickets", "refunds", "carts",
	"reviews", "warehouses", "employees", "contracts", "subscriptions", "coupons"}

// TableName is the name of the i-th table (from 0), e.g. "orders_0000",
// "customers_0001".
func TableName(i int) string { return fmt.Sprintf("%s_%04d", words[i%len(words)], i) }

// ViewName is the name of the view over the i-th table.
func ViewName(i int) string { return "v_" + TableName(i) }

// Generate writes a new database file at path as s says; a file already
// there is an error. Every table is
//
//	id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, label TEXT,
//	amount REAL, created_at TEXT, parent_id INTEGER REFERENCES <table i-1>(id),
//	owner_id INTEGER REFERENCES <table 0>   (tables 1, 6, 11, …: an implicit
//	                                         reference to the primary key)
//
// with an index on created_at on every third table (i = 0, 3, 6, …); table
// 0 has no parent_id key. A view selects id, code and amount.
func Generate(ctx context.Context, path string, s Spec) error {
	if s.Tables < 1 || s.ViewEvery < 0 || s.Rows < 0 {
		return fmt.Errorf("sqlitegen: spec %+v: want at least one table and no negative counts", s)
	}
	if _, err := os.Lstat(path); err == nil {
		return fmt.Errorf("sqlitegen: %s exists; name a new file", path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("sqlitegen: %w", err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		return fmt.Errorf("sqlitegen: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlitegen: %w", err)
	}
	defer tx.Rollback()
	exec := func(q string, args ...any) error {
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return fmt.Errorf("sqlitegen: %s: %w", q, err)
		}
		return nil
	}
	for i := range s.Tables {
		name := quote(TableName(i))
		ddl := "CREATE TABLE " + name + " (id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, label TEXT, amount REAL, created_at TEXT"
		if i > 0 {
			ddl += ", parent_id INTEGER REFERENCES " + quote(TableName(i-1)) + "(id)"
		}
		if i%5 == 1 {
			ddl += ", owner_id INTEGER REFERENCES " + quote(TableName(0))
		}
		if err := exec(ddl + ")"); err != nil {
			return err
		}
		if i%3 == 0 {
			if err := exec("CREATE INDEX " + quote(TableName(i)+"_created") + " ON " + name + " (created_at)"); err != nil {
				return err
			}
		}
		if s.ViewEvery > 0 && i%s.ViewEvery == 0 {
			if err := exec("CREATE VIEW " + quote(ViewName(i)) + " AS SELECT id, code, amount FROM " + name); err != nil {
				return err
			}
		}
		for r := range s.Rows {
			err := exec("INSERT INTO "+name+" (id, code, label, amount, created_at) VALUES (?, ?, ?, ?, ?)",
				r+1, fmt.Sprintf("%s-%d", TableName(i), r+1), fmt.Sprintf("row %d", r+1),
				float64((i*31+r*17)%1000)/10, fmt.Sprintf("2026-%02d-%02d", 1+r%12, 1+r%28))
			if err != nil {
				return err
			}
		}
	}
	if s.Analyze {
		if err := exec("ANALYZE"); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlitegen: %w", err)
	}
	return db.Close()
}

// ManyTables writes n tables, a view over every tenth, three rows each and
// no statistics (Generate with Spec{Tables: n, ViewEvery: 10, Rows: 3}).
func ManyTables(path string, n int) error {
	return Generate(context.Background(), path, Spec{Tables: n, ViewEvery: 10, Rows: 3})
}

// quote writes name as a SQLite identifier.
func quote(name string) string {
	b := []byte{'"'}
	for i := 0; i < len(name); i++ {
		if name[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, name[i])
	}
	return string(append(b, '"'))
}
