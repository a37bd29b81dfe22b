package sqlite

import (
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
)

// The guard beside SQLite's bare compile of the same statement on the same
// connection: what reading a statement costs over preparing it once.
var benchStatements = map[string]string{
	"point":    "SELECT * FROM orders WHERE id = 1",
	"join":     "SELECT e.kind, c.name FROM events e JOIN customers c ON c.id = e.user_id WHERE e.event_date >= '2025-01-01' AND c.region = 'eu'",
	"analytic": "WITH a AS (SELECT customer_id, sum(total) t FROM orders GROUP BY 1) SELECT customer_id, rank() OVER (ORDER BY t DESC) FROM a WHERE t > (SELECT avg(total) FROM orders)",
}

func BenchmarkGuard(b *testing.B) {
	_, db := fixtureDB(b)
	r := reader(b, db)
	for _, name := range []string{"point", "join", "analytic"} {
		q := benchStatements[name]
		b.Run(name+"/guard", func(b *testing.B) {
			for b.Loop() {
				if _, ref := guard.Check(r, q, policy); ref != nil {
					b.Fatal(ref)
				}
			}
		})
		b.Run(name+"/prepare", func(b *testing.B) {
			allow := Authorizer(guard.Policy{}, nil)
			for b.Loop() {
				if _, err := r.Compiler.Compile(q, allow); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
