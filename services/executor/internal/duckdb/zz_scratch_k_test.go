package duckdb

import (
	"database/sql"
	"os"
	"strings"
	"testing"
)

func TestZZScratchK(t *testing.T) {
	db, err := sql.Open("duckdb", "?threads=2&memory_limit=128MB")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range strings.Split(os.Getenv("KQ"), "\n;;\n") {
		rows, err := db.Query(q)
		if err != nil {
			t.Logf("%s\n  ERR %v", q, err)
			continue
		}
		cols, _ := rows.Columns()
		t.Logf("%s\n  cols %q", q, cols)
		n := 0
		for rows.Next() {
			vals := make([]any, len(cols))
			ps := make([]any, len(cols))
			for i := range vals {
				ps[i] = &vals[i]
			}
			rows.Scan(ps...)
			if n < 30 {
				s := ""
				for _, v := range vals {
					x := strings.ReplaceAll(strings.TrimSpace(toS(v)), "\n", "\n    ")
					if len(x) > 2000 {
						x = x[:2000]
					}
					s += x + " | "
				}
				t.Logf("    %s", s)
			}
			n++
		}
		t.Logf("  rows %d err %v", n, rows.Err())
		rows.Close()
	}
}

func toS(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "NULL"
	}
	return strings.TrimSpace(strings.ReplaceAll(fmtAny(v), "\x00", ""))
}
