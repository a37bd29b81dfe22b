package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // pgtest.ManyTables opens database/sql's "pgx"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// On PostgreSQL: a listing of hundreds of relations comes in bounded pages
// that --all follows, readable patterns hide what they do not name, row
// estimates come from the catalog, and a name in two schemas is ambiguous.
func TestTablesOnPostgres(t *testing.T) {
	base := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const n = 450
	dsn := pgtest.ManyTables(ctx, t, base, n)
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"CREATE TABLE public.dup (id int)", "CREATE TABLE sales.dup (id int)"} {
		if _, err := c.Exec(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	c.Close(ctx)
	// The views of schema sales are left out of the readable patterns.
	s := stacktest.Start(t, stacktest.Options{Connections: []connections.Connection{{
		ID: "many", Engine: contracts.EnginePostgres, DSN: dsn, Readable: []string{"public.*", "sales.t_*", "sales.dup"},
	}}})
	srv := []string{"--server", s.URL}

	out, errOut, code := sonde(t, "", append([]string{"tables", "many", "--all", "--json"}, srv...)...)
	if code != ExitOK {
		t.Fatalf("tables --all: %d %s", code, errOut)
	}
	pages := strings.Split(strings.TrimSpace(out), "\n")
	readable := n + 1 + 2 // the tables, the materialized view, the two dup
	if len(pages) != (readable+api.TablesPageSize-1)/api.TablesPageSize {
		t.Fatalf("%d pages for %d relations", len(pages), readable)
	}
	seen, estimated := map[string]bool{}, 0
	for i, line := range pages {
		var p api.TablesResponse
		if err := json.Unmarshal([]byte(line), &p); err != nil {
			t.Fatal(err)
		}
		if p.Total != readable || p.Unreadable < n/10 || len(p.Tables) > api.TablesPageSize || (p.Next == "") != (i == len(pages)-1) {
			t.Fatalf("page %d: total %d, unreadable %d, %d tables, next %q", i, p.Total, p.Unreadable, len(p.Tables), p.Next)
		}
		for _, e := range p.Tables {
			q := e.Schema + "." + e.Name
			if seen[q] || strings.HasPrefix(q, "sales.v_") {
				t.Fatalf("%s listed twice, or a hidden view named", q)
			}
			seen[q] = true
			if e.Rows != nil && *e.Rows == 20 {
				estimated++
			}
		}
	}
	if len(seen) != readable || estimated < n/3/2 {
		t.Fatalf("%d relations listed, %d with the analysed estimate of 20 rows", len(seen), estimated)
	}
	// The human form says how to go on.
	out, _, _ = sonde(t, "", append([]string{"tables", "many"}, srv...)...)
	if !strings.Contains(out, "More: sonde tables many --after") || !strings.Contains(out, "outside the readable patterns are not listed") {
		t.Fatalf("tables, first page:\n%s", out)
	}

	_, errOut, code = sonde(t, "", append([]string{"describe", "many", "dup"}, srv...)...)
	if code != ExitRefused || !strings.Contains(errOut, string(api.CodeAmbiguousTable)) || !strings.Contains(errOut, "public.dup") || !strings.Contains(errOut, "sales.dup") {
		t.Fatalf("describe of a name in two schemas: %d %s", code, errOut)
	}
	out, _, code = sonde(t, "", append([]string{"describe", "many", "sales.t_00004", "--json"}, srv...)...)
	var d api.DescribeResponse
	if code != ExitOK || json.Unmarshal([]byte(out), &d) != nil || d.Relation.Schema != "sales" || len(d.Relation.ForeignKeys) != 1 {
		t.Fatalf("describe sales.t_00004: %d %s", code, out)
	}
	_, errOut, code = sonde(t, "", append([]string{"describe", "many", "sales.v_00010"}, srv...)...)
	if code != ExitRefused || !strings.Contains(errOut, string(api.CodeTableNotFound)) {
		t.Fatalf("describe of a hidden view: %d %s", code, errOut)
	}
	out, _, code = sonde(t, "", append([]string{"explain", "many", "select * from public.t_00003 where id = 4"}, srv...)...)
	if code != ExitOK || !strings.Contains(out, "cost") {
		t.Fatalf("explain on PostgreSQL: %d %s", code, out)
	}
}
