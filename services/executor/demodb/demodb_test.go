package demodb_test

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/sondehq/sonde/services/executor/demodb"
	_ "modernc.org/sqlite"
)

func count(t *testing.T, db *sql.DB, query string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func TestEnsure(t *testing.T) {
	dir := t.TempDir()
	a := filepath.Join(dir, "a", "demo.db")
	if err := demodb.Ensure(a); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+a+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	// Fixed sizes, and the drawn ones pinned: a change here is a change of
	// the demo content.
	for query, want := range map[string]int{
		"select count(*) from customers":   demodb.Customers,
		"select count(*) from products":    demodb.Products,
		"select count(*) from orders":      demodb.Orders,
		"select count(*) from order_items": 4933,
		"select count(*) from payments":    2141,
		// Every order's total is the sum of its items.
		`select count(*) from orders o where total_cents !=
		   (select sum(quantity * unit_price_cents) from order_items i where i.order_id = o.id)`: 0,
		// Nobody orders before signing up.
		`select count(*) from orders o join customers c on c.id = o.customer_id
		   where c.signup_date > substr(o.ordered_at, 1, 10)`: 0,
		"select count(distinct status) from orders": 4,
	} {
		if got := count(t, db, query); got != want {
			t.Errorf("%s = %d, want %d", query, got, want)
		}
	}

	// The story: March 2025 orders and signups fall against the months around.
	month := func(table, col, m string) int {
		return count(t, db, "select count(*) from "+table+" where substr("+col+", 1, 7) = '"+m+"'")
	}
	for _, tc := range []struct{ table, col string }{{"orders", "ordered_at"}, {"customers", "signup_date"}} {
		feb, mar, apr := month(tc.table, tc.col, "2025-02"), month(tc.table, tc.col, "2025-03"), month(tc.table, tc.col, "2025-04")
		if 2*mar >= feb || 2*mar >= apr {
			t.Errorf("%s: no dip in March 2025: %d, %d, %d", tc.table, feb, mar, apr)
		}
	}

	// Deterministic: a second database elsewhere has the same bytes.
	b := filepath.Join(dir, "b.db")
	if err := demodb.Ensure(b); err != nil {
		t.Fatal(err)
	}
	da, _ := os.ReadFile(a)
	dbb, _ := os.ReadFile(b)
	if !bytes.Equal(da, dbb) {
		t.Error("two demo databases differ")
	}

	// Idempotent: an existing file is left as it is, and no temporary file stays.
	if err := os.WriteFile(b, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := demodb.Ensure(b); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(b); string(got) != "keep me" {
		t.Error("Ensure rewrote an existing file")
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if filepath.Ext(e.Name()) == ".tmp" {
			t.Errorf("temporary file %s left behind", e.Name())
		}
	}
}

func TestEnsureRefusesDirectory(t *testing.T) {
	if err := demodb.Ensure(t.TempDir()); err == nil {
		t.Fatal("Ensure over a directory succeeded")
	}
}
