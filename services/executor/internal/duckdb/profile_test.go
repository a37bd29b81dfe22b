package duckdb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// Profile on the fixture: counts of every type (nested ones get a distinct
// count), the large-table sample, and the read-only instance alone holding
// a composed statement that would write (nextval on a sequence).
func TestProfileDuckDB(t *testing.T) {
	path := fixture(t)
	before := digest(t, path)
	e := open(t, path, nil, map[string]string{"main.events": "event_date"})
	ctx := context.Background()
	req := engine.Request{Timeout: 5 * time.Second}
	cat, err := e.Describe(ctx, req, []contracts.Relation{{Schema: "main", Name: "kinds"}, {Schema: "main", Name: "events"}, {Schema: "main", Name: "customers"}})
	if err != nil || len(cat.Relations) != 3 {
		t.Fatalf("describe: %v", err)
	}
	kinds, events, customers := cat.Relations[0], cat.Relations[1], cat.Relations[2]
	res, err := e.Profile(ctx, req, engine.ProfileRequest{Relation: kinds, Columns: kinds.Columns, Depth: contracts.DepthDistribution})
	if err != nil || res.Rows != 1 || len(res.Columns) != len(kinds.Columns) {
		t.Fatalf("kinds %+v %v", res, err)
	}
	for i, c := range res.Columns {
		if c.Present != 1 || c.Distinct == nil || *c.Distinct != 1 {
			t.Errorf("%s: %+v", kinds.Columns[i].Name, c)
		}
	}
	res, err = e.Profile(ctx, req, engine.ProfileRequest{Relation: events, Columns: events.Columns, Depth: contracts.DepthPattern})
	if err != nil || !res.Sampled || res.Rows != 1000 || res.Columns[2].EmailLike == nil || *res.Columns[2].DigitRun != 0 {
		t.Fatalf("events %+v %v", res, err)
	}
	un, err := e.Unprofilable(ctx, req)
	if err != nil || len(un.Relations) != 1 || un.Relations[0].Name != "seq" || un.Relations[0].EngineKind != "SEQUENCE" {
		t.Fatalf("unprofilable %+v %v", un, err)
	}

	writing := Dialect
	writing.EmailLike = func(string) string { return "nextval('seq') > 0" }
	plan := engine.ComposeProfile(writing, engine.ProfileRequest{Relation: customers, Columns: customers.Columns, Depth: contracts.DepthPattern}, 0)
	_, err = plan.Read(e.run(ctx, plan.SQL, nil, e.catalogLimits(), time.Second))
	var dbErr *contracts.DBError
	if !errors.As(err, &dbErr) || !strings.Contains(dbErr.Message, "read-only") {
		t.Fatalf("a writing profile statement: %v", err)
	}
	e.Close()
	if digest(t, path) != before {
		t.Fatal("the file changed")
	}
}
