package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	pgguard "github.com/sondehq/sonde/pkg/guard/postgres"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// The composed statement of a relation with a hostile name is one SELECT,
// as PostgreSQL's own parser reads it, that reads that relation and no
// other: the name is quoted one segment at a time.
func TestProfileComposedIsOneSelect(t *testing.T) {
	for _, name := range []string{`a"b`, `"; DROP TABLE victim; --`, "line\nbreak", `x.y`, `back\slash`, `ünï`} {
		rel := contracts.Relation{Schema: `s"; DELETE FROM t; --`, Name: name}
		p := engine.ProfileRequest{Relation: rel, Depth: contracts.DepthPattern,
			Columns: []contracts.RelationColumn{{Name: `c"; DROP TABLE t; --`, Type: "text"}, {Name: "j", Type: "json"}, {Name: "pts", Type: "point[]"}}}
		for _, sample := range []int64{0, engine.ProfileSampleRows} {
			plan := engine.ComposeProfile(Dialect, p, sample)
			st, ref := pgguard.Reader{}.Read(plan.SQL)
			if ref != nil {
				t.Fatalf("%q: %v\n%s", name, ref, plan.SQL)
			}
			var tables []string
			for _, sc := range st.Scopes {
				for _, tb := range sc.Tables {
					tables = append(tables, tb.Schema+"."+tb.Name)
				}
			}
			if len(tables) != 1 || tables[0] != rel.Schema+"."+name {
				t.Errorf("%q: reads %q\n%s", name, tables, plan.SQL)
			}
			if strings.Contains(plan.SQL, "count(DISTINCT \"j\")") || strings.Contains(plan.SQL, "count(DISTINCT \"pts\")") ||
				!strings.Contains(plan.SQL, `pg_catalog.count(DISTINCT "c""; DROP TABLE t; --")`) {
				t.Errorf("distinct counts:\n%s", plan.SQL)
			}
			if sample > 0 && !strings.Contains(plan.SQL, " LIMIT 100000) AS sampled") {
				t.Errorf("no sample:\n%s", plan.SQL)
			}
		}
	}
}

// The read-only transaction alone holds a composed statement that would
// write: no guard, a read-write session default, a superuser.
func TestProfileLayerReadOnlyTransaction(t *testing.T) {
	s := testServer(t)
	before := s.state(t)
	e := readWriteEngine(t, s.ownerDSN)
	writing := Dialect
	writing.DigitRun = func(col string) string { return "pg_catalog.nextval('public.orders_id_seq') > 0" }
	plan := engine.ComposeProfile(writing, engine.ProfileRequest{
		Relation: contracts.Relation{Schema: "public", Name: "customers"}, Depth: contracts.DepthPattern,
		Columns: []contracts.RelationColumn{{Name: "name", Type: "text"}}}, 0)
	_, err := plan.Read(e.run(context.Background(), plan.SQL, nil, catalogRequest(engine.Request{Timeout: 5 * time.Second})))
	var dbErr *contracts.DBError
	if !errors.As(err, &dbErr) || dbErr.Class != contracts.DBPermission || !strings.Contains(dbErr.Message, "read-only") {
		t.Fatalf("a writing profile statement: %v", err)
	}
	if s.state(t) != before {
		t.Fatal("the database changed")
	}
}

// Profile on the fixture as the agent role: counts, and the large-table
// rule's sample.
func TestProfileFixture(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	req := engine.Request{Timeout: 5 * time.Second}
	cat, err := e.Describe(ctx, req, []contracts.Relation{{Schema: "public", Name: "events"}, {Schema: "public", Name: "customers"}})
	if err != nil || len(cat.Relations) != 2 {
		t.Fatalf("describe: %v", err)
	}
	events, customers := cat.Relations[0], cat.Relations[1]
	res, err := e.Profile(ctx, req, engine.ProfileRequest{Relation: events, Columns: events.Columns, Depth: contracts.DepthPattern})
	if err != nil {
		t.Fatal(err)
	}
	// events is large under the corpus policy: a sample (of all 1000 rows).
	if !res.Sampled || res.Rows != 1000 || len(res.Columns) != 4 || res.Statements != 1 {
		t.Fatalf("events %+v", res)
	}
	if d := res.Columns[2].Distinct; d == nil || *d != 2 || res.Columns[2].EmailLike == nil || res.Columns[3].EmailLike != nil {
		t.Errorf("kind, data: %+v %+v", res.Columns[2], res.Columns[3])
	}
	res, err = e.Profile(ctx, req, engine.ProfileRequest{Relation: customers, Columns: customers.Columns, Depth: contracts.DepthBasic})
	if err != nil || res.Sampled || res.Rows != 20 || res.Columns[1].Present != 20 || res.Columns[1].Distinct != nil {
		t.Fatalf("customers %+v %v", res, err)
	}
}
