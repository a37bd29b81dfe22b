package sqlite

import (
	"slices"
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
)

// refs is ColumnRefs written as schema.table.column.
func refs(st *guard.Statement) []string {
	var out []string
	for _, c := range st.ColumnRefs("main") {
		out = append(out, c.Schema+"."+c.Table+"."+c.Column)
	}
	return out
}

// TestNamesColumnRefs: Names reads the tables and columns a statement names
// without the schema, each column tied to a table of its own SELECT only
// where nothing else could own it.
func TestNamesColumnRefs(t *testing.T) {
	cases := []struct {
		name, sql string
		want      []string
	}{
		{"qualified", "SELECT o.total, o.nosuch FROM orders o",
			[]string{"main.orders.nosuch", "main.orders.total"}},
		{"qualified by table name", "SELECT Orders.total FROM main.orders",
			[]string{"main.orders.total"}},
		{"unqualified single table", "SELECT total, nosuch FROM orders WHERE created_at > date('now')",
			[]string{"main.orders.created_at", "main.orders.nosuch", "main.orders.total"}},
		{"join with aliases", "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE region = 'x'",
			[]string{"main.customers.id", "main.customers.name", "main.orders.customer_id", "main.orders.id"}},
		{"correlated subquery", "SELECT id FROM orders o WHERE EXISTS (SELECT 1 FROM items i WHERE i.order_id = o.id AND qty > 1)",
			[]string{"main.items.order_id", "main.orders.id"}},
		{"subquery order by stays inside", "SELECT id FROM orders WHERE id IN (SELECT i.order_id FROM items i ORDER BY nosuch LIMIT 3)",
			[]string{"main.items.order_id", "main.orders.id"}},
		{"cte columns", "WITH c AS (SELECT customer_id, sum(total) AS s FROM orders GROUP BY customer_id) SELECT c.s, customer_id FROM c",
			[]string{"main.orders.customer_id", "main.orders.total"}},
		{"cte joined", "WITH c AS (SELECT 1 AS customer_id) SELECT c.customer_id, cu.name, region FROM c JOIN customers cu ON cu.id = c.customer_id",
			[]string{"main.customers.id", "main.customers.name"}},
		{"cte named like a table", "WITH orders AS (SELECT 1 AS x) SELECT orders.x, x FROM orders", nil},
		{"select alias", "SELECT total * 2 AS dbl, customer_id cid FROM orders WHERE dbl > 1 GROUP BY dbl, cid ORDER BY dbl, nosuch",
			[]string{"main.orders.customer_id", "main.orders.total"}},
		{"star", "SELECT *, o.* FROM orders o", nil},
		{"using", "SELECT id FROM orders JOIN customers c USING (id)",
			[]string{"main.customers.id", "main.orders.id"}},
		{"having", "SELECT customer_id FROM orders o GROUP BY customer_id HAVING count(*) > 1 AND max(o.total) > 2 AND sum(amount) > 0",
			[]string{"main.orders.customer_id", "main.orders.total"}},
		{"from subquery", "SELECT s.n FROM (SELECT nosuch AS n FROM orders) s",
			[]string{"main.orders.nosuch"}},
		{"keywords, casts, collations", "SELECT CAST(total AS UNSIGNED BIG INT), name COLLATE NOCASE, count(DISTINCT region), total IS NOT NULL FROM customers",
			[]string{"main.customers.name", "main.customers.region", "main.customers.total"}},
		{"case", "SELECT CASE WHEN total > 1 THEN 'big' ELSE kind END AS size FROM orders WHERE kind LIKE 'a%' ESCAPE '!' AND total BETWEEN 1 AND lim",
			[]string{"main.orders.kind", "main.orders.lim", "main.orders.total"}},
		{"double-quoted may be a string", `SELECT "nosuch", "o"."x" FROM orders o`, []string{"main.orders.x"}},
		{"named window", "SELECT rank() OVER w FROM orders WINDOW w AS (ORDER BY total)", nil},
		{"table-valued function", "SELECT value, o.id FROM orders o, json_each(o.tags)",
			[]string{"main.orders.id", "main.orders.tags"}},
		{"rowid", "SELECT rowid, o.oid, _rowid_ FROM orders o", nil},
		{"union branches", "SELECT a FROM t1 UNION SELECT b FROM t2 ORDER BY a",
			[]string{"main.t1.a", "main.t2.b"}},
		{"values", "VALUES (1, 2)", nil},
		{"unknown table and column", "SELECT n.nosuch_col FROM nosuch_table n JOIN orders o ON o.id = n.order_id WHERE o.bogus > 1",
			[]string{"main.nosuch_table.nosuch_col", "main.nosuch_table.order_id", "main.orders.bogus", "main.orders.id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, ref := Reader{}.Names(c.sql)
			if ref != nil {
				t.Fatalf("refused %s: %s", ref.Code, ref.Message)
			}
			if !st.ColumnsRead || st.Names != guard.NamesASCIIFold {
				t.Fatalf("ColumnsRead %v, Names %v", st.ColumnsRead, st.Names)
			}
			if got := refs(st); !slices.Equal(got, c.want) {
				t.Errorf("%s\ngot  %q\nwant %q\nscopes %+v", c.sql, got, c.want, st.Scopes)
			}
		})
	}
}

// TestNamesNested: a SELECT that may see an enclosing SELECT's columns is
// Nested; the top level, its CTE bodies, set-operation branches and FROM
// subqueries (SQLite has no LATERAL) are not.
func TestNamesNested(t *testing.T) {
	cases := []struct {
		sql    string
		nested []bool // in Scopes order
	}{
		{"SELECT 1 FROM a", []bool{false}},
		{"SELECT 1 FROM a UNION SELECT 2 FROM b", []bool{false, false}},
		{"WITH c AS (SELECT 1 FROM a) SELECT 1 FROM c", []bool{false, false}},
		{"SELECT (SELECT 1 FROM b) FROM a", []bool{false, true}},
		{"SELECT 1 FROM (SELECT 1 FROM b) s", []bool{false, false}},
		{"SELECT (SELECT 1 FROM (SELECT 1 FROM c) s) FROM a", []bool{false, true, true}},
	}
	for _, c := range cases {
		st, ref := Reader{}.Names(c.sql)
		if ref != nil {
			t.Fatalf("%s: refused %s: %s", c.sql, ref.Code, ref.Message)
		}
		var got []bool
		for _, sc := range st.Scopes {
			got = append(got, sc.Nested)
		}
		if !slices.Equal(got, c.nested) {
			t.Errorf("%s: nested %v, want %v", c.sql, got, c.nested)
		}
	}
}

// TestNamesRefuses: Names refuses what it cannot read, as Read would.
func TestNamesRefuses(t *testing.T) {
	for _, q := range []string{"", "DELETE FROM orders", "SELECT 1; SELECT 2", "WITH c AS (SELECT 1) DELETE FROM orders",
		"PRAGMA table_info(orders)", "SELECT (1"} {
		if st, ref := (Reader{}).Names(q); ref == nil {
			t.Errorf("%q: read as %+v", q, st)
		}
	}
}

// TestReadColumns: on the compiled path the columns are SQLite's own reads,
// tied to their tables; a statement that does not compile yields no
// Statement from Read, and Names still lists what it names.
func TestReadColumns(t *testing.T) {
	_, db := fixtureDB(t)
	r := reader(t, db)
	cases := []struct {
		sql  string
		want []string
	}{
		{"SELECT o.total, c.name FROM orders o JOIN customers c ON c.id = o.customer_id",
			[]string{"main.customers.id", "main.customers.name", "main.orders.customer_id", "main.orders.total"}},
		{"SELECT total FROM orders WHERE id IN (SELECT user_id FROM events WHERE event_date >= '2025-01-01')",
			[]string{"main.events.event_date", "main.events.user_id", "main.orders.id", "main.orders.total"}},
		{"SELECT * FROM v_orders", []string{"main.orders.id", "main.orders.total", "main.v_orders.id", "main.v_orders.total"}},
		{"SELECT count(*) FROM orders", nil},
	}
	for _, c := range cases {
		st, ref := r.Read(c.sql)
		if ref != nil {
			t.Errorf("%s: refused %s: %s", c.sql, ref.Code, ref.Message)
			continue
		}
		if !st.ColumnsRead {
			t.Errorf("%s: ColumnsRead unset", c.sql)
		}
		if got := refs(st); !slices.Equal(got, c.want) {
			t.Errorf("%s\ngot  %q\nwant %q\nscopes %+v", c.sql, got, c.want, st.Scopes)
		}
	}

	q := "SELECT n.label FROM nosuch_table n JOIN orders o ON o.id = n.order_id WHERE o.bogus > 1"
	if st, ref := r.Read(q); ref == nil {
		t.Fatalf("compiled %q as %+v", q, st)
	}
	st, ref := r.Names(q)
	if ref != nil {
		t.Fatalf("Names refused %s: %s", ref.Code, ref.Message)
	}
	if got, want := st.Tables("main"), []string{"main.nosuch_table", "main.orders"}; !slices.Equal(got, want) {
		t.Errorf("tables %q, want %q", got, want)
	}
	want := []string{"main.nosuch_table.label", "main.nosuch_table.order_id", "main.orders.bogus", "main.orders.id"}
	if got := refs(st); !slices.Equal(got, want) {
		t.Errorf("columns %q, want %q", got, want)
	}
}
