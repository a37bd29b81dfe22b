package guard_test

import (
	"database/sql"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
)

func TestA1TmpDuckTiming(t *testing.T) {
	ns := os.Getenv("A1N")
	if ns == "" {
		t.Skip()
	}
	c, _ := duckdb.NewConnector(":memory:?threads=1", nil)
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	db.Exec("CREATE TABLE t(x INT)")
	for _, f := range strings.Split(ns, ",") {
		n, _ := strconv.Atoi(f)
		q := map[string]string{
			"plus": "SELECT 1" + strings.Repeat("+1", n),
			"colplus": "SELECT x" + strings.Repeat("+x", n) + " FROM t",
			"and": "SELECT 1 FROM t WHERE " + strings.Repeat("x=1 AND ", n) + "x=1",
			"or": "SELECT 1 FROM t WHERE " + strings.Repeat("x=1 OR ", n) + "x=1",
			"case": "SELECT " + strings.Repeat("CASE WHEN x=1 THEN ", n) + "1" + strings.Repeat(" END", n) + " FROM t",
			"abs": "SELECT " + strings.Repeat("abs(", n) + "x" + strings.Repeat(")", n) + " FROM t",
			"concat": "SELECT 'a'" + strings.Repeat("||'a'", n),
			"sub": "SELECT " + strings.Repeat("(SELECT ", n) + "1" + strings.Repeat(")", n),
			"parens": "SELECT " + strings.Repeat("(", n) + "x" + strings.Repeat(")", n) + " FROM t",
			"union": "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", n),
			"join": "SELECT 1 FROM t t0" + strings.Repeat(" JOIN t ON true", n),
		}[os.Getenv("A1S")]
		var s string
		start := time.Now()
		db.QueryRow(`SELECT json_serialize_sql(?::VARCHAR)::VARCHAR`, q).Scan(&s)
		t1 := time.Since(start)
		start = time.Now()
		var back sql.NullString
		err := db.QueryRow(`SELECT TRY(json_deserialize_sql(?::VARCHAR))`, s).Scan(&back)
		t2 := time.Since(start)
		start = time.Now()
		st, err2 := db.Prepare(q)
		if err2 == nil {
			st.Close()
		}
		t3 := time.Since(start)
		t.Logf("n=%d serialize %v (%d bytes) deserialize %v (%v) prepare %v (%v)", n, t1, len(s), t2, err, t3, err2)
	}
}
