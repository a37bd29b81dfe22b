package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"

	msqlite "modernc.org/sqlite"
)

func TestZZProbe(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "p.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, s := range []string{"CREATE TABLE c(a)", "CREATE TABLE t(a)", "CREATE VIEW v AS SELECT count(*) n FROM t", "CREATE VIEW w AS SELECT 1 FROM t"} {
		if _, err := db.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	conn, _ := db.Conn(ctx)
	defer conn.Close()
	for _, q := range []string{
		"WITH c AS (SELECT 1 x) SELECT count(*) FROM c",
		"SELECT count(*) FROM c",
		"SELECT count(*) FROM main.c",
		"SELECT count(*) FROM MAIN.c",
		"SELECT count(*) FROM temp.sqlite_master",
		"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM r WHERE x<5) SELECT count(*) FROM r",
		"WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL SELECT 1 FROM r LIMIT 5) SELECT count(*) FROM r",
		"SELECT 1 FROM c, (WITH c AS (SELECT 1) SELECT 1 FROM c)",
		"SELECT 1 FROM c, (WITH c AS (SELECT 1) SELECT * FROM c)",
		"SELECT count(*) FROM v",
		"SELECT 1 FROM w",
		"WITH v AS (SELECT 1) SELECT 1 FROM v",
		"WITH d AS (SELECT 1 FROM c) SELECT 1 FROM d",
		"WITH d AS (SELECT count(*) FROM c) SELECT * FROM d",
		"WITH d AS MATERIALIZED (SELECT 1 FROM c) SELECT 1 FROM d",
		"WITH d AS (WITH e AS (SELECT 1) SELECT 1 FROM e) SELECT 1 FROM d",
		"SELECT (WITH c AS (SELECT 1) SELECT count(*) FROM c) FROM c",
		"SELECT 1 FROM (SELECT 1) AS c",
		"SELECT 1 FROM (SELECT 1 FROM t) AS s",
	} {
		fmt.Println("==", q)
		conn.Raw(func(dc any) error {
			dc.(msqlite.AuthorizerRegisterer).RegisterAuthorizer(func(a msqlite.AuthorizerActionCode, a1, a2, dbn, via string) msqlite.AuthorizerReturnCode {
				if a == msqlite.AuthRead {
					fmt.Printf("   READ tbl=%q col=%q db=%q via=%q\n", a1, a2, dbn, via)
				}
				return msqlite.AuthorizerOK
			})
			_, err := dc.(interface {
				ColumnInfo(string) ([]msqlite.ColumnInfo, error)
			}).ColumnInfo(q)
			if err != nil {
				fmt.Println("   err", err)
			}
			return nil
		})
	}
}
