package postgres_test

import (
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
)

// benchStatements are a short read, a typical analytics query and a long one.
var benchStatements = map[string]string{
	"short": "SELECT count(*) FROM orders WHERE created_at >= now() - interval '7 days'",
	"typical": `SELECT c.name, date_trunc('month', o.created_at) AS m, sum(o.amount),
	        percentile_cont(0.5) WITHIN GROUP (ORDER BY o.amount)
	   FROM orders o JOIN customers c ON c.id = o.customer_id
	  WHERE o.created_at >= '2024-01-01' GROUP BY 1, 2 ORDER BY 3 DESC LIMIT 20`,
	"long": strings.Repeat(typical+" UNION ALL ", 7) + typical,
}

const typical = `(SELECT c.name, date_trunc('month', o.created_at) AS m, sum(o.amount)
	   FROM orders o JOIN customers c ON c.id = o.customer_id
	  WHERE o.created_at >= '2024-01-01' AND c.id IN (SELECT customer_id FROM orders WHERE amount > 10)
	  GROUP BY 1, 2)`

// BenchmarkGuard times the whole guard (parse, walk, deparse for the
// canonical form, the policy) beside pg_query.Parse alone, the floor under
// it, on the same statement, side by side so the ratio survives a noisy
// machine.
func BenchmarkGuard(b *testing.B) {
	for _, name := range []string{"short", "typical", "long"} {
		q := benchStatements[name]
		b.Run(name+"/parse", func(b *testing.B) {
			for b.Loop() {
				if _, err := pg_query.Parse(q); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/guard", func(b *testing.B) {
			for b.Loop() {
				if _, ref := guard.Check(postgres.Reader{}, q, postgrestest.Policy()); ref != nil {
					b.Fatal(ref)
				}
			}
		})
	}
}
