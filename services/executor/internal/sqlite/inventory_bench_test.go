package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/sondehq/sonde/pkg/sqlitegen"
)

// BenchmarkInventory reads the whole inventory — Relations, then Describe
// of every relation — of generated files of 100, 1,000 and 5,000 tables
// (a view over every tenth, ANALYZEd), and reports the statements sent.
func BenchmarkInventory(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		b.Run(fmt.Sprintf("tables=%d", n), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "many.db")
			if err := sqlitegen.Generate(context.Background(), path, sqlitegen.Spec{Tables: n, ViewEvery: 10, Rows: 2, Analyze: true}); err != nil {
				b.Fatal(err)
			}
			e := open(b, path)
			statements := 0
			b.ResetTimer()
			for b.Loop() {
				rels, err := e.Relations(context.Background(), catalogReq)
				if err != nil {
					b.Fatal(err)
				}
				cat, err := e.Describe(context.Background(), catalogReq, rels.Relations)
				if err != nil {
					b.Fatal(err)
				}
				if len(cat.Relations) != n+(n+9)/10 {
					b.Fatalf("described %d", len(cat.Relations))
				}
				statements = rels.Statements + cat.Statements
			}
			b.ReportMetric(float64(statements), "statements/op")
		})
	}
}
