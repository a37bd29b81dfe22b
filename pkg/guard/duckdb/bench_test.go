package duckdb

import (
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/duckdb/duckdbtest"
)

var benchQueries = map[string]string{
	"simple": "SELECT id, total FROM orders WHERE total > 10 ORDER BY total DESC LIMIT 5",
	"analytic": `WITH paid AS (SELECT customer_id, total, ordered_at FROM orders WHERE status = 'paid'),
	 ranked AS (SELECT customer_id, sum(total) AS spent, row_number() OVER (ORDER BY sum(total) DESC) AS rk FROM paid GROUP BY 1)
	 SELECT c.name, r.spent, percentile_cont(0.5) WITHIN GROUP (ORDER BY r.spent) OVER () AS med
	 FROM ranked r JOIN customers c ON c.id = r.customer_id
	 JOIN events e ON e.customer_id = c.id AND e.event_date >= current_date - INTERVAL 30 DAY
	 WHERE r.rk <= 10 QUALIFY count(*) OVER (PARTITION BY c.id) > 1`,
}

// BenchmarkParse is DuckDB's raw parse: one json_serialize_sql call.
func BenchmarkParse(b *testing.B) {
	r := reader(b)
	for name, q := range benchQueries {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := r.Serialize(q); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGuard is the whole guard: parse, walk, canonical form and the
// policy's rules.
func BenchmarkGuard(b *testing.B) {
	r := reader(b)
	p := duckdbtest.Policy()
	for name, q := range benchQueries {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, ref := guard.Check(r, q, p); ref != nil {
					b.Fatal(ref)
				}
			}
		})
	}
}
