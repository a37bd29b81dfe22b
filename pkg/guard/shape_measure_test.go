package guard_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/duckdb/duckdb-go/v2"
	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/pkg/guard/mssql"
	_ "modernc.org/sqlite"
)

// deepShapes are the statement shapes that nest a parse tree without bound,
// each built at size n in a dialect ("pg", "duckdb", "sqlite", "mssql").
// The measurement below and the property test both use them.
var deepShapes = []struct {
	name  string
	build func(n int, dialect string) string
}{
	{"plus", func(n int, _ string) string { return "SELECT 1" + strings.Repeat("+1", n) }},
	{"parens", func(n int, _ string) string {
		return "SELECT " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n)
	}},
	{"case", func(n int, _ string) string {
		return "SELECT " + strings.Repeat("CASE WHEN 1=1 THEN ", n) + "1" + strings.Repeat(" END", n)
	}},
	{"subselect", func(n int, _ string) string {
		return "SELECT " + strings.Repeat("(SELECT ", n) + "1" + strings.Repeat(")", n)
	}},
	{"in_list", func(n int, _ string) string {
		return "SELECT 1 WHERE 1 IN (" + strings.Repeat("1,", n) + "1)"
	}},
	{"long_literal", func(n int, _ string) string { return "SELECT '" + strings.Repeat("x", n) + "'" }},
	{"not", func(n int, d string) string {
		if d == "mssql" {
			return "SELECT 1 WHERE " + strings.Repeat("NOT ", n) + "1=1"
		}
		return "SELECT " + strings.Repeat("NOT ", n) + "1=1"
	}},
	{"minus", func(n int, _ string) string { return "SELECT " + strings.Repeat("- ", n) + "1" }},
	{"function", func(n int, _ string) string {
		return "SELECT " + strings.Repeat("abs(", n) + "1" + strings.Repeat(")", n)
	}},
	{"and", func(n int, _ string) string { return "SELECT 1 WHERE " + strings.Repeat("1=1 AND ", n) + "1=1" }},
	{"concat", func(n int, d string) string {
		if d == "mssql" {
			return "SELECT 'a'" + strings.Repeat("+'a'", n)
		}
		return "SELECT 'a'" + strings.Repeat("||'a'", n)
	}},
	{"union", func(n int, _ string) string { return "SELECT 1" + strings.Repeat(" UNION ALL SELECT 1", n) }},
	{"join", func(n int, _ string) string {
		return "SELECT 1 FROM (SELECT 1 AS a) t" + strings.Repeat(" JOIN (SELECT 1 AS a) u ON 1=1", n)
	}},
	{"cast", func(n int, d string) string {
		if d == "pg" || d == "duckdb" {
			return "SELECT 1" + strings.Repeat("::int", n)
		}
		return "SELECT " + strings.Repeat("CAST(", n) + "1" + strings.Repeat(" AS int)", n)
	}},
	{"brackets", func(n int, d string) string {
		switch d {
		case "pg":
			return "SELECT " + strings.Repeat("ARRAY[", n) + "1" + strings.Repeat("]", n)
		case "duckdb":
			return "SELECT " + strings.Repeat("[", n) + "1" + strings.Repeat("]", n)
		}
		return "SELECT " + strings.Repeat("[a", n)
	}},
	{"subscript", func(n int, _ string) string { return "SELECT x" + strings.Repeat("[1]", n) + " FROM t" }},
	{"dots", func(n int, _ string) string { return "SELECT x" + strings.Repeat(".a", n) + " FROM t" }},
	{"collate", func(n int, d string) string {
		c := ` COLLATE "C"`
		switch d {
		case "sqlite":
			c = " COLLATE binary"
		case "duckdb":
			c = " COLLATE nocase"
		case "mssql":
			c = " COLLATE Latin1_General_CI_AS"
		}
		return "SELECT 'a'" + strings.Repeat(c, n)
	}},
	{"is_null", func(n int, _ string) string { return "SELECT 1 WHERE 1" + strings.Repeat(" IS NULL", n) }},
	{"exists", func(n int, _ string) string {
		return "SELECT 1 WHERE " + strings.Repeat("EXISTS (SELECT 1 WHERE ", n) + "1=1" + strings.Repeat(")", n)
	}},
	{"cte", func(n int, _ string) string {
		var b strings.Builder
		b.WriteString("WITH c0 AS (SELECT 1 AS a)")
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, ", c%d AS (SELECT a FROM c%d)", i, i-1)
		}
		fmt.Fprintf(&b, " SELECT a FROM c%d", n)
		return b.String()
	}},
	{"comment", func(n int, _ string) string { return "SELECT 1 " + strings.Repeat("/*", n) + strings.Repeat("*/", n) }},
	{"comments", func(n int, _ string) string { return "SELECT 1 " + strings.Repeat("/* x */", n) }},
	{"line_comments", func(n int, _ string) string { return "SELECT 1 " + strings.Repeat("-- x\n", n) }},
	{"tilde", func(n int, d string) string { return "SELECT " + strings.Repeat("~ ", n) + "1" }},
}

// probeEngines run one statement through a native parser in this process.
var probeEngines = map[string]func(q string) error{
	// pg_query parses and the reader deparses (the canonical form).
	"pg": func(q string) error {
		tree, err := pg_query.Parse(q)
		if err != nil {
			return err
		}
		_, err = pg_query.Deparse(tree)
		return err
	},
	// The DuckDB guard's two calls, then the engine's own prepare.
	"duckdb": func(q string) error {
		c, err := duckdb.NewConnector(":memory:?threads=1", nil)
		if err != nil {
			return err
		}
		db := sql.OpenDB(c)
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		var s string
		var back sql.NullString
		if err := db.QueryRowContext(ctx, `SELECT s::VARCHAR, TRY(json_deserialize_sql(s)) FROM (SELECT json_serialize_sql(?::VARCHAR) AS s)`, q).Scan(&s, &back); err != nil {
			return err
		}
		if strings.HasPrefix(s, `{"error":true`) {
			return errors.New(s[:min(len(s), 200)])
		}
		if _, err := db.ExecContext(ctx, "CREATE TABLE t(x STRUCT(a INT)[])"); err != nil {
			return err
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return err
		}
		return st.Close()
	},
	// The DuckDB guard's two calls alone: the parser, without the planner.
	"duckparse": func(q string) error {
		c, err := duckdb.NewConnector(":memory:?threads=1", nil)
		if err != nil {
			return err
		}
		db := sql.OpenDB(c)
		defer db.Close()
		var s string
		var back sql.NullString
		if err := db.QueryRow(`SELECT s::VARCHAR, TRY(json_deserialize_sql(s)) FROM (SELECT json_serialize_sql(?::VARCHAR) AS s)`, q).Scan(&s, &back); err != nil {
			return err
		}
		if strings.HasPrefix(s, `{"error":true`) {
			return errors.New(s[:min(len(s), 200)])
		}
		return nil
	},
	// SQLite compiles (sqlite3_prepare) as the SQLite reader does.
	"sqlite": func(q string) error {
		db, err := sql.Open("sqlite", ":memory:")
		if err != nil {
			return err
		}
		defer db.Close()
		if _, err := db.Exec("CREATE TABLE t(x)"); err != nil {
			return err
		}
		st, err := db.Prepare(q)
		if err != nil {
			return err
		}
		return st.Close()
	},
	// The T-SQL reader is Go; it is its own parser.
	"mssql": func(q string) error {
		if _, ref := (mssql.Reader{}).Read(q); ref != nil {
			return errors.New(string(ref.Code) + ": " + ref.Message)
		}
		return nil
	},
}

// TestShapeProbe is the child of TestShapeMeasure: it runs one probe named
// by SONDE_SHAPE_PROBE ("engine shape n") and prints its outcome. A crash
// shows as the child's death.
func TestShapeProbe(t *testing.T) {
	spec := os.Getenv("SONDE_SHAPE_PROBE")
	if spec == "" {
		t.Skip("a child of TestShapeMeasure")
	}
	f := strings.Fields(spec)
	n, _ := strconv.Atoi(f[2])
	for _, s := range deepShapes {
		if s.name == f[1] {
			err := probeEngines[f[0]](s.build(n, f[0]))
			msg := "ok"
			if err != nil {
				msg = "error " + strings.ReplaceAll(err.Error(), "\n", " ")
			}
			fmt.Printf("PROBE %s\n", msg[:min(len(msg), 160)])
			return
		}
	}
	t.Fatalf("no shape %q", f[1])
}

// TestShapeMeasure finds, per engine and shape, the smallest size at which
// the native parser fails cleanly and the smallest at which it kills the
// process, each probe in a child process. It informs the limits of
// guard.CheckShape (docs/guard.md lists the figures). It is slow; run it on
// purpose:
//
//	SONDE_SHAPE_MEASURE=pg,duckdb,sqlite,mssql go test -run TestShapeMeasure -v -timeout 60m ./pkg/guard/
//
// duckparse is DuckDB's parser alone, without the planner (whose time grows
// fast with depth); SONDE_SHAPE_ONLY=plus,case picks shapes and
// SONDE_SHAPE_TOP the largest size.
func TestShapeMeasure(t *testing.T) {
	engines := os.Getenv("SONDE_SHAPE_MEASURE")
	if engines == "" {
		t.Skip("set SONDE_SHAPE_MEASURE to measure")
	}
	top := 1 << 17 // sizes up to ~128k repetitions
	if v, err := strconv.Atoi(os.Getenv("SONDE_SHAPE_TOP")); err == nil {
		top = v
	}
	only := os.Getenv("SONDE_SHAPE_ONLY")
	for _, e := range strings.Split(engines, ",") {
		for _, s := range deepShapes {
			if only != "" && !strings.Contains(","+only+",", ","+s.name+",") {
				continue
			}
			probe := func(n int) (string, time.Duration) {
				start := time.Now()
				cmd := exec.Command(os.Args[0], "-test.run=^TestShapeProbe$", "-test.count=1")
				cmd.Env = append(os.Environ(), fmt.Sprintf("SONDE_SHAPE_PROBE=%s %s %d", e, s.name, n))
				out, err := cmd.CombinedOutput()
				d := time.Since(start)
				if i := strings.Index(string(out), "PROBE "); i >= 0 && err == nil {
					line := string(out[i+6:])
					if j := strings.IndexByte(line, '\n'); j >= 0 {
						line = line[:j]
					}
					return line, d
				}
				kind := "exit"
				switch o := string(out); {
				case strings.Contains(o, "SIGSEGV"):
					kind = "SIGSEGV"
				case strings.Contains(o, "stack overflow"):
					kind = "Go stack overflow"
				case strings.Contains(o, "panic:"):
					kind = "panic"
				}
				return "CRASH " + kind + " " + fmt.Sprint(err), d
			}
			// The smallest size that fails, by doubling then bisecting to
			// within 2%; then whether a few larger sizes crash.
			lo, hi, msg := 0, 1, ""
			for ; hi <= top; hi *= 2 {
				if m, _ := probe(hi); m != "ok" {
					msg = m
					break
				}
				lo = hi
			}
			if hi > top {
				t.Logf("MEASURE %-7s %-12s ok up to %d", e, s.name, top)
				continue
			}
			for hi-lo > max(1, lo/50) {
				mid := (lo + hi) / 2
				if m, _ := probe(mid); m != "ok" {
					hi, msg = mid, m
				} else {
					lo = mid
				}
			}
			_, d := probe(lo)
			later := ""
			for _, k := range []int{2, 4, 8} {
				if n := hi * k; n <= top {
					m, _ := probe(n)
					later += fmt.Sprintf(" | %dx: %s", k, trim(m, 40))
				}
			}
			t.Logf("MEASURE %-7s %-12s ok at %d (%v), fails at %d: %s%s",
				e, s.name, lo, d.Round(time.Millisecond), hi, trim(msg, 60), later)
		}
	}
}

func trim(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
