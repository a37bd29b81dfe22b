package executor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// pgChinook creates a database of its own on the SONDE_TEST_PG_URL server,
// loads Chinook into it (the shared dataset's script after its \c) and
// then extra, and returns its DSN and an owner connection to it.
func pgChinook(t *testing.T, extra ...string) (string, *pgx.Conn) {
	t.Helper()
	base := pgtest.URL(t)
	script, err := os.ReadFile(filepath.Join("..", "..", "..", "shared", "datasets", "chinook", "chinook_postgres.sql"))
	if err != nil {
		t.Skipf("chinook not present: %v", err)
	}
	body := string(script)
	if i := strings.Index(body, `\c chinook;`); i >= 0 {
		body = body[i+len(`\c chinook;`):]
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	root, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer root.Close(ctx)
	var b [4]byte
	_, _ = rand.Read(b[:])
	db := "sonde_profile_" + hex.EncodeToString(b[:])
	if _, err := root.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if c, err := pgx.Connect(ctx, base); err == nil {
			_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			c.Close(ctx)
		}
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + db
	dsn := u.String()
	owner, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { owner.Close(context.Background()) })
	// Trusted setup scripts: the simple protocol runs them whole.
	for _, s := range append([]string{body}, extra...) {
		if _, err := owner.Exec(ctx, s); err != nil {
			t.Fatalf("setup %.60q: %v", s, err)
		}
	}
	return dsn, owner
}

// pgSnapshot is what must not change: every user table's row count.
func pgSnapshot(t *testing.T, c *pgx.Conn) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	rows, err := c.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind = 'r' AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname !~ '^pg_'`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) ([2]string, error) {
		var n [2]string
		return n, r.Scan(&n[0], &n[1])
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, n := range names {
		var count int64
		q := pgx.Identifier{n[0], n[1]}.Sanitize()
		if err := c.QueryRow(ctx, "SELECT count(*) FROM "+q).Scan(&count); err != nil {
			t.Fatalf("count %s: %v", q, err)
		}
		out[q] = count
	}
	return out
}

func TestProfileChinookPostgres(t *testing.T) {
	setup := []string{
		`CREATE SCHEMA s2; CREATE TABLE s2.customer (id int); CREATE SCHEMA hidden; CREATE TABLE hidden.keys (k text)`,
		`CREATE TABLE public.docs (id int PRIMARY KEY, body json, tags jsonb, spot point, note text);
		 INSERT INTO public.docs SELECT i, json_build_object('i', i), jsonb_build_object('k', i % 2), point(i, i), CASE WHEN i % 10 = 0 THEN 'n' END
		   FROM generate_series(1, 100) i`,
		`CREATE SEQUENCE public.ticket_seq`,
		`CREATE DOMAIN public.jdoc AS json; CREATE TABLE public.wrapped (id int, doc public.jdoc, at timestamp(3));
		 INSERT INTO public.wrapped SELECT i, json_build_object('i', i), TIMESTAMP '2025-01-01' FROM generate_series(1, 20) i`,
		`CREATE TABLE public.child (id int PRIMARY KEY, parent_id int REFERENCES public.docs (id), contact_email text);
		 INSERT INTO public.child SELECT i, 1 + i % 100, 'someone' || i || '@example.org' FROM generate_series(1, 50) i`,
		`CREATE TABLE public.events (id int, at date); INSERT INTO public.events SELECT i, DATE '2025-01-01' FROM generate_series(1, 100010) i`,
		`CREATE TABLE public.victim (id int); INSERT INTO public.victim VALUES (1), (2), (3)`,
	}
	for i, name := range HostileTableNames {
		q := pgx.Identifier{"public", name}.Sanitize()
		setup = append(setup, "CREATE TABLE "+q+" (v text); INSERT INTO "+q+" VALUES ('"+strings.Repeat("x", i+1)+"')")
	}
	dsn, owner := pgChinook(t, setup...)
	before := pgSnapshot(t, owner)
	store := memStore{}
	s := newService(t, Config{Engine: contracts.EnginePostgres, Artifacts: store, Connections: []connections.Connection{{
		ID: "pg", Engine: contracts.EnginePostgres, DSN: dsn, Readable: []string{"public.*", "s2.*"},
		LargeTables: map[string]string{"public.events": "at"}}}})
	ctx := context.Background()

	tp := wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "public.customer", contracts.DepthPattern, "")))
	if tp.Rows != 59 || len(tp.Columns) != 13 || tp.Table.Schema != "public" {
		t.Fatalf("customer %+v", tp)
	}
	if c := column(tp, "email"); c == nil || c.EmailLike == nil || *c.EmailLike != 59 {
		t.Errorf("email %+v", c)
	}
	if !hasFinding(tp, contracts.FindingHighNull, "company") || !hasFinding(tp, contracts.FindingSuspectedPII, "email") ||
		hasFinding(tp, contracts.FindingFKUnindexed, "support_rep_id") {
		t.Errorf("findings %+v", tp.Findings)
	}

	// Two schemas hold a customer: the bare spelling is refused, naming both.
	r := s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "customer", "", ""))
	wantRefusal(t, r, string(contracts.RefuseTableSpellingAmbiguous))
	if !strings.Contains(r.Refusal.Message, `"public"."customer"`) || !strings.Contains(r.Refusal.Message, `"s2"."customer"`) {
		t.Errorf("the refusal does not name the candidates: %+v", r.Refusal)
	}
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "s2.customer", "", "")))
	if tp.Table.Schema != "s2" || tp.Rows != 0 {
		t.Errorf("s2.customer %+v", tp)
	}

	// json and point have no equality: no distinct count, the rest counted.
	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "docs", contracts.DepthDistribution, "")))
	for _, name := range []string{"body", "spot"} {
		if c := column(tp, name); c == nil || c.Distinct != nil || c.NoDistinct == "" || c.Present != 100 {
			t.Errorf("%s %+v", name, c)
		}
	}
	if c := column(tp, "tags"); c == nil || c.Distinct == nil || *c.Distinct != 2 {
		t.Errorf("tags %+v", c)
	}
	if c := column(tp, "note"); c == nil || *c.Distinct != 1 || !hasFinding(tp, contracts.FindingHighNull, "note") || !hasFinding(tp, contracts.FindingConstant, "note") {
		t.Errorf("note %+v, findings %+v", c, tp.Findings)
	}

	// A domain over json is not on the list: the aggregate fails once, and
	// the profile is read again with distinct counts of known types only.
	reply := s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "wrapped", contracts.DepthDistribution, ""))
	tp = wantProfile(t, reply)
	if reply.Statements != 4 { // the listing, the description, the aggregate twice
		t.Errorf("%d statements", reply.Statements)
	}
	if c := column(tp, "doc"); c == nil || c.Distinct != nil || c.NoDistinct == "" || c.Present != 20 {
		t.Errorf("doc %+v", c)
	}
	if c := column(tp, "at"); c == nil || c.Distinct == nil || *c.Distinct != 1 {
		t.Errorf("at %+v", c)
	}
	if c := column(tp, "id"); c == nil || c.Distinct == nil || *c.Distinct != 20 {
		t.Errorf("id %+v", c)
	}

	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "child", contracts.DepthPattern, "")))
	if !hasFinding(tp, contracts.FindingFKUnindexed, "parent_id") || !hasFinding(tp, contracts.FindingSuspectedPII, "contact_email") {
		t.Errorf("findings %+v", tp.Findings)
	}

	tp = wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "events", "", "")))
	if !tp.Sampled || tp.Rows != engine.ProfileSampleRows {
		t.Errorf("events %+v", tp)
	}

	r = s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "ticket_seq", "", ""))
	wantRefusal(t, r, string(contracts.RefuseObjectNotProfilable))
	if !strings.Contains(r.Refusal.Message, "sequence") {
		t.Errorf("refusal %+v", r.Refusal)
	}
	hidden := s.shownExec(ctx, contracts.OpProfile, profileReq("pg", "hidden.keys", "", ""))
	wantRefusal(t, hidden, string(contracts.RefuseTableNotInventoried))
	if strings.Contains(hidden.Refusal.Fix, "hidden") {
		t.Errorf("an unreadable table was offered: %+v", hidden.Refusal)
	}

	for i, name := range HostileTableNames {
		name = pgName(name)
		tp := wantProfile(t, s.shownExec(ctx, contracts.OpProfile, profileReq("pg", name, contracts.DepthPattern, "")))
		if tp.Table.Name != name || tp.Rows != 1 || tp.Columns[0].Present != 1 {
			t.Errorf("%d %q: %+v", i, name, tp)
		}
	}
	for _, spelling := range HostileSpellings {
		r := s.shownExec(ctx, contracts.OpProfile, profileReq("pg", spelling, "", ""))
		if r.Status != contracts.ExecRefused || r.Error != nil {
			t.Errorf("%q: %s %+v %+v", spelling, r.Status, r.Refusal, r.Error)
		}
	}
	after := pgSnapshot(t, owner)
	if len(after) != len(before) {
		t.Fatalf("tables %d before, %d after", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: %d rows before, %d after", k, v, after[k])
		}
	}
}

// pgName is name as PostgreSQL stores it: clipped to 63 bytes at a
// character boundary.
func pgName(name string) string {
	for len(name) > 63 {
		_, size := utf8.DecodeLastRuneInString(name)
		name = name[:len(name)-size]
	}
	return name
}
