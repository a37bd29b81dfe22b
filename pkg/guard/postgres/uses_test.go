package postgres_test

import (
	"slices"
	"testing"

	"github.com/sondehq/sonde/pkg/guard/postgres"
)

func uses(t *testing.T, q string) postgres.Uses {
	t.Helper()
	_, u, ref := postgres.Reader{ServerVersion: 170000}.ReadUses(q)
	if ref != nil {
		t.Fatalf("ReadUses(%q) refused %s: %s", q, ref.Code, ref.Message)
	}
	return u
}

// TestUsesImplicitOperators holds Uses.Operators to the operators
// PostgreSQL finds by name without their being written (issue 17, item 3:
// a planted public.=(integer, numeric) ran through CASE x WHEN 1.5, JOIN …
// USING, NATURAL JOIN and IN).
func TestUsesImplicitOperators(t *testing.T) {
	cases := []struct {
		sql  string
		want []string
	}{
		{"SELECT CASE id WHEN 1.5 THEN 'a' END FROM orders", []string{"="}},
		{"SELECT 1 FROM orders JOIN customers USING (id)", []string{"="}},
		{"SELECT 1 FROM orders NATURAL JOIN customers", []string{"="}},
		{"SELECT 1 FROM orders NATURAL LEFT JOIN customers", []string{"="}},
		{"SELECT 1 FROM orders WHERE id IN (1, 2.5)", []string{"="}},
		{"SELECT 1 FROM orders WHERE id NOT IN (1, 2.5)", []string{"<>"}},
		{"SELECT 1 FROM orders WHERE id IN (SELECT id FROM customers)", []string{"="}},
		{"SELECT 1 FROM orders WHERE id NOT IN (SELECT id FROM customers)", []string{"="}},
		{"SELECT 1 FROM orders WHERE id = ANY (SELECT id FROM customers)", []string{"="}},
		{"SELECT 1 FROM orders WHERE (id, amount) IN ((1, 2))", []string{"="}},
		{"SELECT 1 FROM orders WHERE (id, amount) < (1, 2)", []string{"<"}},
		{"SELECT nullif(id, 1.5) FROM orders", []string{"="}},
		{"SELECT 1 FROM orders WHERE id IS DISTINCT FROM 1.5", []string{"="}},
		{"SELECT 1 FROM orders WHERE id IS NOT DISTINCT FROM 1.5", []string{"="}},
		{"SELECT 1 FROM orders WHERE id BETWEEN 1 AND 2", []string{">=", "<="}},
		{"SELECT 1 FROM orders WHERE id BETWEEN SYMMETRIC 2 AND 1", []string{">=", "<="}},
		{"SELECT 1 FROM orders WHERE id NOT BETWEEN 1 AND 2", []string{"<", ">"}},
		{"SELECT 1 FROM orders WHERE id NOT BETWEEN SYMMETRIC 1 AND 2", []string{"<", ">"}},
		{"SELECT 1 FROM customers WHERE name LIKE 'a%'", []string{"~~"}},
		{"SELECT 1 FROM customers WHERE name NOT LIKE 'a%'", []string{"!~~"}},
		{"SELECT 1 FROM customers WHERE name ILIKE 'a%'", []string{"~~*"}},
		{"SELECT 1 FROM customers WHERE name NOT ILIKE 'a%'", []string{"!~~*"}},
		{"SELECT 1 FROM customers WHERE name SIMILAR TO 'a%'", []string{"~"}},
		{"WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) CYCLE n SET c TO 1 DEFAULT 0 USING p SELECT * FROM t", []string{"<>"}},
	}
	for _, c := range cases {
		u := uses(t, c.sql)
		for _, w := range c.want {
			if !slices.Contains(u.Operators, w) {
				t.Errorf("%s\n operators %q lack %q", c.sql, u.Operators, w)
			}
		}
	}
	// NOT BETWEEN is < or >, never >= and <=.
	if u := uses(t, "SELECT 1 FROM orders WHERE id NOT BETWEEN 1 AND 2"); slices.Contains(u.Operators, ">=") {
		t.Errorf("NOT BETWEEN reports %q", u.Operators)
	}
}

// TestUsesQualified holds Uses.Qualified to every call written with a
// schema, pg_catalog's included (issue 17, item 18: the catalog check must
// catch evil.lower(1) without the guard's own schema rule).
func TestUsesQualified(t *testing.T) {
	u := uses(t, `SELECT pg_catalog.lower(name), upper(name), extract(year FROM now()), trim(name),
	                     now() AT TIME ZONE 'UTC'
	                FROM customers, pg_catalog.generate_series(1, 2)`)
	for _, want := range []postgres.QualifiedFunction{
		{Schema: "pg_catalog", Name: "lower"},
		{Schema: "pg_catalog", Name: "generate_series"},
		// The grammar's own calls are pg_catalog's.
		{Schema: "pg_catalog", Name: "extract"},
		{Schema: "pg_catalog", Name: "btrim"},
		{Schema: "pg_catalog", Name: "timezone"},
	} {
		if !slices.Contains(u.Qualified, want) {
			t.Errorf("qualified %+v lack %+v", u.Qualified, want)
		}
	}
	for _, q := range u.Qualified {
		if q.Name == "upper" || q.Name == "now" {
			t.Errorf("unqualified call reported qualified: %+v", q)
		}
	}
	for _, f := range []string{"lower", "upper", "extract", "btrim", "timezone", "generate_series", "now"} {
		if !slices.Contains(u.Functions, f) {
			t.Errorf("functions %q lack %s", u.Functions, f)
		}
	}
	// The guard refuses evil.lower itself; the uses of what it passes name
	// the schema so that the catalog check does not depend on that rule.
	if _, _, ref := (postgres.Reader{ServerVersion: 170000}).ReadUses("SELECT evil.lower('x')"); ref == nil {
		t.Error("evil.lower passed")
	}
}

// TestUsesOrdering holds Uses.Ordering to the statements that compare,
// sort, group or hash through an operator class PostgreSQL picks itself
// (issue 17, item 3: a user default operator class ran through
// '{}'::json UNION …).
func TestUsesOrdering(t *testing.T) {
	ordering := []string{
		`SELECT '{}'::json UNION SELECT '{}'::json`,
		`SELECT 1 INTERSECT ALL SELECT 1`,
		`SELECT 1 EXCEPT ALL SELECT 1`,
		`SELECT id FROM orders ORDER BY amount`,
		`SELECT id FROM orders ORDER BY amount USING <`,
		`SELECT customer_id FROM orders GROUP BY customer_id`,
		`SELECT customer_id FROM orders GROUP BY ROLLUP (customer_id)`,
		`SELECT DISTINCT customer_id FROM orders`,
		`SELECT DISTINCT ON (customer_id) id FROM orders`,
		`SELECT rank() OVER (PARTITION BY customer_id) FROM orders`,
		`SELECT rank() OVER (ORDER BY id) FROM orders`,
		`SELECT rank() OVER w FROM orders WINDOW w AS (PARTITION BY customer_id)`,
		`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY amount) FROM orders`,
		`SELECT array_agg(id ORDER BY amount) FROM orders`,
		`SELECT count(DISTINCT id) FROM orders`,
		`SELECT max(amount) FROM orders`,
		`SELECT min(amount) FROM orders`,
		`SELECT array_position(ARRAY['{}'::json], '{}'::json)`,
		`SELECT greatest(1, 2)`,
		`SELECT least(1, 2)`,
		`SELECT CASE id WHEN 1 THEN 0 END FROM orders`,
		`SELECT 1 FROM orders JOIN customers USING (id)`,
		`SELECT 1 FROM orders NATURAL JOIN customers`,
		`SELECT 1 FROM orders o JOIN customers c ON c.id = o.customer_id`,
		`SELECT 1 FROM orders o, customers c WHERE c.id = o.customer_id`,
		`SELECT 1 FROM orders WHERE id IN (1, 2)`,
		`SELECT 1 FROM orders WHERE id IN (SELECT id FROM customers)`,
		`SELECT 1 FROM orders WHERE id = ANY (ARRAY[1])`,
		`SELECT 1 FROM orders WHERE id > ALL (SELECT id FROM customers)`,
		`SELECT ROW('{}'::json) = ROW('{}'::json)`,
		`SELECT ARRAY['{}'::json] @> ARRAY['{}'::json]`,
		`SELECT nullif(1, 2)`,
		`SELECT 1 IS DISTINCT FROM 2`,
		`SELECT 1 FROM orders WHERE id BETWEEN 1 AND 2`,
		`SELECT 1 FROM orders WHERE id NOT BETWEEN 1 AND 2`,
		`WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) SEARCH DEPTH FIRST BY n SET o SELECT * FROM t`,
		`WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 3) CYCLE n SET c USING p SELECT * FROM t`,
		`SELECT JSON_ARRAYAGG(id ORDER BY amount) FROM orders`,
		`SELECT (SELECT max(id) FROM customers)`,
	}
	for _, q := range ordering {
		if u := uses(t, q); !u.Ordering {
			t.Errorf("Ordering false for %s", q)
		}
	}
	plain := []string{
		`SELECT 1`,
		`SELECT id, amount + 1 FROM orders LIMIT 10`,
		`SELECT count(*), sum(amount) FROM orders`,
		`SELECT 1 UNION ALL SELECT 2`,
		`SELECT 1 FROM orders CROSS JOIN customers`,
		`SELECT 1 FROM orders, customers`,
		`SELECT rank() OVER () FROM orders`,
		`SELECT name LIKE 'a%' FROM customers`,
		`SELECT CASE WHEN id IS NULL THEN 0 END FROM orders`,
	}
	for _, q := range plain {
		if u := uses(t, q); u.Ordering {
			t.Errorf("Ordering true for %s", q)
		}
	}
}
