package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"testing"
	"time"
)

// ManyTablesScript is the script ManyTables runs in its fresh database: one
// DO block (PostgreSQL 11 or later) that commits every 250 tables, so that
// no transaction holds the locks of thousands of new relations. Its shape,
// for n tables numbered i = 1…n:
//
//   - table t_NNNNN (i zero-padded to five digits) in schema sales when i
//     is even, public when odd: id bigint PRIMARY KEY, parent_id bigint,
//     code text NOT NULL UNIQUE, amount numeric(12,2),
//     created_at timestamptz NOT NULL. For i > 1, parent_id REFERENCES
//     t_(i/2)(id) (a tree of foreign keys across both schemas);
//   - an index t_NNNNN_created_at (created_at) when i is a multiple of 5;
//   - when i is a multiple of 3: 20 rows (code 'c1'…'c20', parent_id and
//     half the amounts NULL) and ANALYZE; every other table is empty and
//     never analysed;
//   - a view v_NNNNN (id, code, amount of t_NNNNN) in the table's schema
//     when i is a multiple of 10;
//   - one materialized view public.mv_totals (n, total) over t_00001.
//
// ManyTablesRelations(n) counts the relations it creates.
func ManyTablesScript(n int) string {
	return `DO $gen$
DECLARE
  s text; ps text; t text;
BEGIN
  CREATE SCHEMA IF NOT EXISTS sales;
  FOR i IN 1..` + strconv.Itoa(n) + ` LOOP
    s := CASE WHEN i % 2 = 0 THEN 'sales' ELSE 'public' END;
    t := 't_' || lpad(i::text, 5, '0');
    EXECUTE format('CREATE TABLE %I.%I (id bigint PRIMARY KEY, parent_id bigint, code text NOT NULL UNIQUE, '
                   'amount numeric(12,2), created_at timestamptz NOT NULL DEFAULT now())', s, t);
    IF i > 1 THEN
      ps := CASE WHEN (i / 2) % 2 = 0 THEN 'sales' ELSE 'public' END;
      EXECUTE format('ALTER TABLE %I.%I ADD FOREIGN KEY (parent_id) REFERENCES %I.%I (id)',
                     s, t, ps, 't_' || lpad((i / 2)::text, 5, '0'));
    END IF;
    IF i % 5 = 0 THEN
      EXECUTE format('CREATE INDEX %I ON %I.%I (created_at)', t || '_created_at', s, t);
    END IF;
    IF i % 3 = 0 THEN
      EXECUTE format('INSERT INTO %I.%I (id, code, amount) SELECT g, ''c'' || g, '
                     'CASE WHEN g %% 2 = 0 THEN g * 1.5 END FROM generate_series(1, 20) g', s, t);
      EXECUTE format('ANALYZE %I.%I', s, t);
    END IF;
    IF i % 10 = 0 THEN
      EXECUTE format('CREATE VIEW %I.%I AS SELECT id, code, amount FROM %I.%I',
                     s, 'v_' || lpad(i::text, 5, '0'), s, t);
    END IF;
    IF i % 250 = 0 THEN
      COMMIT;
    END IF;
  END LOOP;
  CREATE MATERIALIZED VIEW public.mv_totals AS SELECT count(*) AS n, sum(amount) AS total FROM public.t_00001;
END
$gen$`
}

// ManyTablesRelations is the number of relations ManyTablesScript(n)
// creates: n tables, n/10 views and one materialized view.
func ManyTablesRelations(n int) int { return n + n/10 + 1 }

// ManyTables creates a database of its own on the server baseURL names (a
// postgres:// URL, as SONDE_TEST_PG_URL is), fills it with
// ManyTablesScript(n) and returns its URL; the database is dropped when the
// test ends. It connects through database/sql's "pgx" driver, which the
// calling test registers by importing github.com/jackc/pgx/v5/stdlib (this
// package does not depend on pgx). 2,000 tables take some seconds.
func ManyTables(ctx context.Context, t testing.TB, baseURL string, n int) string {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("pgtest.ManyTables: %q is not a postgres:// URL", baseURL)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	db := fmt.Sprintf("sonde_many_%d_%s", n, hex.EncodeToString(b[:]))
	exec := func(ctx context.Context, dsn, stmt string) error {
		c, err := sql.Open("pgx", dsn)
		if err != nil {
			return fmt.Errorf("%w (import _ \"github.com/jackc/pgx/v5/stdlib\" in the test)", err)
		}
		defer c.Close()
		_, err = c.ExecContext(ctx, stmt)
		return err
	}
	if err := exec(ctx, baseURL, "CREATE DATABASE "+db); err != nil {
		t.Fatalf("pgtest.ManyTables: create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := exec(ctx, baseURL, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
			t.Logf("pgtest.ManyTables: drop database %s: %v", db, err)
		}
	})
	u.Path = "/" + db
	dsn := u.String()
	if err := exec(ctx, dsn, ManyTablesScript(n)); err != nil {
		t.Fatalf("pgtest.ManyTables: generate %d tables: %v", n, err)
	}
	return dsn
}
