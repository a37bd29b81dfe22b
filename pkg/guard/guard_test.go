package guard

import (
	"testing"

	"github.com/sondehq/sonde/contracts"
)

func TestApplyReadableAndCatalog(t *testing.T) {
	p := Policy{Readable: []string{"public.*", "sales.orders"}, DefaultSchema: "public", Catalog: "shop"}
	ok := []Table{{Name: "users"}, {Schema: "PUBLIC", Name: "Users"}, {Schema: "sales", Name: "orders"}, {Catalog: "SHOP", Name: "x"}}
	for _, tb := range ok {
		if ref := Apply(&Statement{Scopes: []Scope{{Tables: []Table{tb}}}}, p); ref != nil {
			t.Errorf("%+v refused: %+v", tb, ref)
		}
	}
	bad := []Table{{Schema: "sales", Name: "customers"}, {Schema: "pg_catalog", Name: "pg_authid"}, {Catalog: "other", Schema: "public", Name: "users"}}
	for _, tb := range bad {
		ref := Apply(&Statement{Scopes: []Scope{{}, {Tables: []Table{tb}}}}, p)
		if ref == nil || ref.Code != contracts.RefuseTableNotReadable || ref.Fix == "" {
			t.Errorf("%+v: %+v, want table_not_readable with a fix", tb, ref)
		}
	}
	if ref := Apply(&Statement{Scopes: []Scope{{Tables: []Table{{Schema: "x", Name: "y"}}}}}, Policy{DefaultSchema: "public"}); ref != nil {
		t.Errorf("no patterns means every table: %+v", ref)
	}
}

func TestApplyLargeTableBounds(t *testing.T) {
	p := Policy{DefaultSchema: "raw", LargeTables: map[string]string{"raw.events": "event_date"}}
	events := Table{Schema: "raw", Name: "events", Alias: "e"}
	users := Table{Name: "users", Alias: "u"}
	cases := []struct {
		name  string
		scope Scope
		ok    bool
	}{
		{"unbounded", Scope{Tables: []Table{events}}, false},
		{"bounded unqualified, one table", Scope{Tables: []Table{events}, Bounds: []Bound{{Column: "event_date"}}}, true},
		{"bounded by alias", Scope{Tables: []Table{events}, Bounds: []Bound{{Qualifier: "e", Column: "EVENT_DATE"}}}, true},
		{"another column", Scope{Tables: []Table{events}, Bounds: []Bound{{Column: "id"}}}, false},
		{"two tables, unqualified", Scope{Tables: []Table{events, users}, Bounds: []Bound{{Column: "event_date"}}}, false},
		{"two tables, qualified", Scope{Tables: []Table{events, users}, Bounds: []Bound{{Qualifier: "e", Column: "event_date"}}}, true},
		{"two tables, wrong qualifier", Scope{Tables: []Table{events, users}, Bounds: []Bound{{Qualifier: "u", Column: "event_date"}}}, false},
		{"unaliased, qualified by name", Scope{Tables: []Table{{Schema: "raw", Name: "events"}, users}, Bounds: []Bound{{Qualifier: "events", Column: "event_date"}}}, true},
	}
	for _, c := range cases {
		ref := Apply(&Statement{Scopes: []Scope{c.scope}}, p)
		if c.ok != (ref == nil) || ref != nil && ref.Code != contracts.RefuseLargeTableUnbounded {
			t.Errorf("%s: %+v", c.name, ref)
		}
	}
	// A bound in an outer scope does not bound the inner read.
	st := &Statement{Scopes: []Scope{
		{Tables: nil, Bounds: []Bound{{Column: "event_date"}}},
		{Tables: []Table{events}},
	}}
	if ref := Apply(st, p); ref == nil {
		t.Error("a bound in the outer query counted for the inner read")
	}
}
