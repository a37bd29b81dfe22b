// Package demodb creates Sonde's demonstration database: a small, realistic
// SQLite shop (customers, products, orders, order_items, payments) that
// `sonde serve` offers when no connection is configured.
//
// The content is deterministic: a fixed-seed PCG generator draws every value,
// so each Ensure writes the same rows, and with the same SQLite library the
// same bytes. The data carry something to find: March 2025 has far fewer
// signups and orders than the months around it, and card payments failed
// often that month.
package demodb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Sizes of the generated tables that do not depend on draws.
const (
	Customers = 500
	Products  = 60
	Orders    = 2000
)

// Description describes the demo database to callers.
const Description = "Demo shop (SQLite): customers, products, orders, order_items, payments; orders from 2024-01 to 2025-06"

// Ensure creates the demo database at path unless a file is already there.
// It writes a temporary file beside path and renames it into place, so a
// reader never sees a half-written database.
func Ensure(path string) error {
	switch fi, err := os.Stat(path); {
	case err == nil && fi.Mode().IsRegular():
		return nil
	case err == nil:
		return fmt.Errorf("demodb: %s exists and is not a regular file", path)
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("demodb: %w", err)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("demodb: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("demodb: %w", err)
	}
	tmpPath := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpPath) // a no-op once renamed

	if err := write(tmpPath); err != nil {
		return fmt.Errorf("demodb: %w", err)
	}
	if err := syncFile(tmpPath); err != nil {
		return fmt.Errorf("demodb: %w", err)
	}
	if err := os.Rename(tmpPath, path); err != nil {
		return fmt.Errorf("demodb: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync() // make the rename durable where the platform allows it
		d.Close()
	}
	return nil
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// write fills the empty database file at path.
func write(path string) error {
	u := url.URL{Scheme: "file", Path: path, RawQuery: "_pragma=journal_mode(MEMORY)&_pragma=synchronous(OFF)"}
	db, err := sql.Open("sqlite", u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)

	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	for _, t := range generate().tables() {
		if err := insert(ctx, tx, t); err != nil {
			return fmt.Errorf("fill %s: %w", t.name, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	return db.Close()
}

func insert(ctx context.Context, tx *sql.Tx, t table) error {
	stmt, err := tx.PrepareContext(ctx, t.insert)
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, row := range t.rows {
		if _, err := stmt.ExecContext(ctx, row...); err != nil {
			return err
		}
	}
	return nil
}

const schema = `
CREATE TABLE customers (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  email       TEXT NOT NULL UNIQUE,
  country     TEXT NOT NULL,      -- ISO 3166-1 alpha-2 code
  segment     TEXT NOT NULL,      -- consumer | business
  signup_date TEXT NOT NULL       -- YYYY-MM-DD
);
CREATE TABLE products (
  id          INTEGER PRIMARY KEY,
  sku         TEXT NOT NULL UNIQUE,
  name        TEXT NOT NULL,
  category    TEXT NOT NULL,
  price_cents INTEGER NOT NULL,   -- list price, EUR cents
  active      INTEGER NOT NULL    -- 1 on sale, 0 withdrawn
);
CREATE TABLE orders (
  id          INTEGER PRIMARY KEY,
  customer_id INTEGER NOT NULL REFERENCES customers(id),
  ordered_at  TEXT NOT NULL,      -- YYYY-MM-DD HH:MM:SS, UTC
  status      TEXT NOT NULL,      -- paid | pending | refunded | cancelled
  total_cents INTEGER NOT NULL,   -- sum of the items, EUR cents
  currency    TEXT NOT NULL
);
CREATE TABLE order_items (
  id               INTEGER PRIMARY KEY,
  order_id         INTEGER NOT NULL REFERENCES orders(id),
  product_id       INTEGER NOT NULL REFERENCES products(id),
  quantity         INTEGER NOT NULL,
  unit_price_cents INTEGER NOT NULL
);
CREATE TABLE payments (
  id           INTEGER PRIMARY KEY,
  order_id     INTEGER NOT NULL REFERENCES orders(id),
  attempted_at TEXT NOT NULL,     -- YYYY-MM-DD HH:MM:SS, UTC
  method       TEXT NOT NULL,     -- card | paypal | bank_transfer | gift_card
  status       TEXT NOT NULL,     -- captured | failed | refunded
  amount_cents INTEGER NOT NULL
);
CREATE INDEX orders_customer_id ON orders(customer_id);
CREATE INDEX orders_ordered_at ON orders(ordered_at);
CREATE INDEX order_items_order_id ON order_items(order_id);
CREATE INDEX payments_order_id ON payments(order_id);
`
