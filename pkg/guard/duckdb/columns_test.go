package duckdb

import (
	"slices"
	"testing"
)

// TestColumnRefs: the columns a statement names, each tied to a table of its
// own SELECT only where nothing else could own it.
func TestColumnRefs(t *testing.T) {
	r := reader(t)
	cases := []struct {
		name, sql string
		want      []string
	}{
		{"qualified", "SELECT o.total, o.nosuch FROM orders o",
			[]string{"main.orders.nosuch", "main.orders.total"}},
		{"qualified by table name", "SELECT Orders.total FROM sales.orders",
			[]string{"sales.orders.total"}},
		{"unqualified single table", "SELECT total, nosuch FROM orders WHERE created_at > now()",
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
		{"select alias", "SELECT total * 2 AS dbl FROM orders WHERE dbl > 1 GROUP BY dbl ORDER BY dbl, nosuch",
			[]string{"main.orders.total"}},
		{"star", "SELECT *, o.*, * EXCLUDE (nosuch), COLUMNS('x.*') FROM orders o", nil},
		{"using", "SELECT id FROM orders JOIN customers c USING (id)",
			[]string{"main.customers.id", "main.orders.id"}},
		{"having", "SELECT customer_id FROM orders o GROUP BY customer_id HAVING count(*) > 1 AND max(o.total) > 2 AND sum(amount) > 0",
			[]string{"main.orders.customer_id", "main.orders.total"}},
		{"whole row", "SELECT orders, o FROM orders, orders o", nil},
		{"from subquery", "SELECT s.n FROM (SELECT o.nosuch AS n FROM orders o) s",
			[]string{"main.orders.nosuch"}},
		{"from subquery may be lateral", "SELECT s.n FROM orders, (SELECT nosuch AS n FROM items) s", nil},
		{"lambda", "SELECT list_transform(tags, x -> x + 1) FROM orders", []string{"main.orders.tags"}},
		{"table function", "SELECT r, o.id FROM orders o, range(3) r", []string{"main.orders.id"}},
		{"values", "SELECT v.a, a FROM (VALUES (1)) v(a)", nil},
		{"struct field", "SELECT s.f, o.s.f FROM orders o", nil},
		{"rowid", "SELECT rowid FROM orders", nil},
		{"sql value keywords", "SELECT current_date, USER, \"current_timestamp\", o.current_date FROM orders o",
			[]string{"main.orders.current_date"}},
		{"union branches", "SELECT a FROM t1 UNION SELECT b FROM t2 ORDER BY a",
			[]string{"main.t1.a", "main.t2.b"}},
		{"qualify left out", "SELECT id FROM orders QUALIFY row_number() OVER (ORDER BY nosuch) = 1", []string{"main.orders.id"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, ref := r.Read(c.sql)
			if ref != nil {
				t.Fatalf("refused %s: %s", ref.Code, ref.Message)
			}
			if !st.ColumnsRead {
				t.Fatal("ColumnsRead unset")
			}
			var got []string
			for _, c := range st.ColumnRefs("main") {
				got = append(got, c.Schema+"."+c.Table+"."+c.Column)
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("%s\ngot  %q\nwant %q\nscopes %+v", c.sql, got, c.want, st.Scopes)
			}
		})
	}
}

// TestNestedScopes: a SELECT that may see an enclosing SELECT's columns is
// Nested; the top level, its CTE bodies and set-operation branches are not.
// DuckDB reads a FROM subquery as LATERAL when it names an outer column, so
// every FROM subquery is Nested.
func TestNestedScopes(t *testing.T) {
	r := reader(t)
	cases := []struct {
		sql    string
		nested []bool // in Scopes order
	}{
		{"SELECT 1 FROM a", []bool{false}},
		{"SELECT 1 FROM a UNION SELECT 2 FROM b", []bool{false, false}},
		{"WITH c AS (SELECT 1 FROM a) SELECT 1 FROM c", []bool{false, false}},
		{"SELECT (SELECT 1 FROM b) FROM a", []bool{false, true}},
		{"SELECT 1 FROM (SELECT 1 FROM b) s", []bool{false, true}},
		{"SELECT (WITH w AS (SELECT 1 FROM c) SELECT 1 FROM w) FROM a", []bool{false, true, true}},
	}
	for _, c := range cases {
		st, ref := r.Read(c.sql)
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
