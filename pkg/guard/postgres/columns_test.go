package postgres_test

import (
	"slices"
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/postgres"
)

// refs is ColumnRefs written as schema.table.column.
func refs(st *guard.Statement, defaultSchema string) []string {
	var out []string
	for _, c := range st.ColumnRefs(defaultSchema) {
		out = append(out, c.Schema+"."+c.Table+"."+c.Column)
	}
	return out
}

// TestColumnRefs: the columns a statement names, each tied to a table of its
// own SELECT only where nothing else could own it.
func TestColumnRefs(t *testing.T) {
	cases := []struct {
		name, sql string
		want      []string
	}{
		{"qualified", "SELECT o.total, o.nosuch FROM orders o",
			[]string{"public.orders.nosuch", "public.orders.total"}},
		{"qualified by table name", "SELECT orders.total FROM sales.orders",
			[]string{"sales.orders.total"}},
		{"unqualified single table", "SELECT total, nosuch FROM orders WHERE created_at > now()",
			[]string{"public.orders.created_at", "public.orders.nosuch", "public.orders.total"}},
		{"join with aliases", "SELECT o.id, c.name FROM orders o JOIN customers c ON c.id = o.customer_id WHERE region = 'x'",
			[]string{"public.customers.id", "public.customers.name", "public.orders.customer_id", "public.orders.id"}},
		{"correlated subquery", "SELECT id FROM orders o WHERE EXISTS (SELECT 1 FROM items i WHERE i.order_id = o.id AND qty > 1)",
			[]string{"public.items.order_id", "public.orders.id"}},
		{"scalar subquery", "SELECT (SELECT max(total) FROM orders) AS m FROM customers", nil},
		{"cte columns", "WITH c AS (SELECT customer_id, sum(total) AS s FROM orders GROUP BY customer_id) SELECT c.s, customer_id FROM c",
			[]string{"public.orders.customer_id", "public.orders.total"}},
		{"cte joined", "WITH c AS (SELECT 1 AS customer_id) SELECT c.customer_id, cu.name, region FROM c JOIN customers cu ON cu.id = c.customer_id",
			[]string{"public.customers.id", "public.customers.name"}},
		{"cte named like a table", "WITH orders AS (SELECT 1 AS x) SELECT orders.x, x FROM orders", nil},
		{"select alias", "SELECT total * 2 AS dbl FROM orders GROUP BY dbl ORDER BY dbl, nosuch",
			[]string{"public.orders.total"}},
		{"star", "SELECT *, o.* FROM orders o", nil},
		{"using", "SELECT id FROM orders JOIN customers c USING (id)",
			[]string{"public.customers.id", "public.orders.id"}},
		{"having", "SELECT customer_id FROM orders o GROUP BY customer_id HAVING count(*) > 1 AND max(o.total) > 2 AND sum(amount) > 0",
			[]string{"public.orders.customer_id", "public.orders.total"}},
		{"whole row", "SELECT orders, row_to_json(o) FROM orders, orders o", nil},
		{"from subquery", "SELECT s.n FROM (SELECT nosuch AS n FROM orders) s",
			[]string{"public.orders.nosuch"}},
		{"lateral", "SELECT l.qty FROM orders o, LATERAL (SELECT qty FROM items WHERE items.order_id = o.id) l",
			[]string{"public.items.order_id"}},
		{"from subquery inside a subquery", "SELECT (SELECT count(*) FROM (SELECT x FROM items) s) FROM orders", nil},
		{"system columns", "SELECT ctid, xmin, o.tableoid FROM orders o", nil},
		{"union branches", "SELECT a FROM t1 UNION SELECT b FROM t2 ORDER BY a",
			[]string{"public.t1.a", "public.t2.b"}},
		{"quoted names", `SELECT "Total" FROM "Orders"`, []string{"public.Orders.Total"}},
		{"table function", "SELECT g, o.id FROM orders o, generate_series(1, 3) g", []string{"public.orders.id"}},
		{"attribute that may be a call", "SELECT o.to_jsonb FROM orders o", nil},
		{"cast function name is a column", "SELECT o.name, o.text FROM orders o", []string{"public.orders.name", "public.orders.text"}},
		{"three names", "SELECT public.orders.total FROM orders", nil},
		{"order by only", "SELECT 1 FROM orders ORDER BY nosuch", nil},
		{"window", "SELECT rank() OVER (PARTITION BY region ORDER BY total) FROM orders",
			[]string{"public.orders.region", "public.orders.total"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, ref := postgres.Reader{}.Read(c.sql)
			if ref != nil {
				t.Fatalf("refused %s: %s", ref.Code, ref.Message)
			}
			if !st.ColumnsRead {
				t.Fatal("ColumnsRead unset")
			}
			if got := refs(st, "public"); !slices.Equal(got, c.want) {
				t.Errorf("%s\ngot  %q\nwant %q\nscopes %+v", c.sql, got, c.want, st.Scopes)
			}
		})
	}
}

// TestNestedScopes: a SELECT that may see an enclosing SELECT's columns is
// Nested; the top level, its CTE bodies and set-operation branches and its
// plain FROM subqueries are not.
func TestNestedScopes(t *testing.T) {
	cases := []struct {
		sql    string
		nested []bool // in Scopes order
	}{
		{"SELECT 1 FROM a", []bool{false}},
		{"SELECT 1 FROM a UNION SELECT 2 FROM b", []bool{false, false}},
		{"WITH c AS (SELECT 1 FROM a) SELECT 1 FROM c", []bool{false, false}},
		{"SELECT (SELECT 1 FROM b) FROM a", []bool{true, false}},
		{"SELECT 1 FROM a WHERE x IN (SELECT y FROM b UNION SELECT z FROM c)", []bool{true, true, false}},
		{"SELECT 1 FROM (SELECT 1 FROM b) s", []bool{false, false}},
		{"SELECT 1 FROM a, LATERAL (SELECT 1 FROM b) s", []bool{true, false}},
		{"SELECT (SELECT 1 FROM (SELECT 1 FROM c) s) FROM a", []bool{true, true, false}},
		{"SELECT (WITH w AS (SELECT 1 FROM c) SELECT 1 FROM w) FROM a", []bool{true, true, false}},
	}
	for _, c := range cases {
		st, ref := postgres.Reader{}.Read(c.sql)
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
