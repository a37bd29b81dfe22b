package guard

import (
	"reflect"
	"testing"
)

func TestColumnRefs(t *testing.T) {
	orders := Table{Name: "orders", Alias: "o"}
	cases := []struct {
		name string
		st   Statement
		want []ResolvedColumn
	}{
		{"columns not read", Statement{Scopes: []Scope{{Tables: []Table{orders}, Columns: []ColumnUse{{"o", "id"}}}}}, nil},
		{"qualified by alias", Statement{ColumnsRead: true, Scopes: []Scope{{
			Tables: []Table{orders, {Schema: "s", Name: "customers"}}, Nested: true,
			Columns: []ColumnUse{{"o", "id"}, {"customers", "name"}, {"orders", "total"}, {"x", "y"}},
		}}}, []ResolvedColumn{{"public", "orders", "id", false}, {"s", "customers", "name", false}}},
		{"unqualified, one table", Statement{ColumnsRead: true, Scopes: []Scope{{
			Tables: []Table{orders}, Columns: []ColumnUse{{"", "total"}, {"", "id"}, {"o", "id"}},
		}}}, []ResolvedColumn{{"public", "orders", "id", false}, {"public", "orders", "total", false}}},
		{"unqualified, nested", Statement{ColumnsRead: true, Scopes: []Scope{{
			Tables: []Table{orders}, Nested: true, Columns: []ColumnUse{{"", "total"}},
		}}}, nil},
		{"unqualified, derived item", Statement{ColumnsRead: true, Scopes: []Scope{{
			Tables: []Table{orders}, Derived: []string{""}, Columns: []ColumnUse{{"", "total"}},
		}}}, nil},
		{"unqualified, two tables", Statement{ColumnsRead: true, Scopes: []Scope{{
			Tables: []Table{orders, {Name: "customers"}}, Columns: []ColumnUse{{"", "total"}},
		}}}, nil},
		{"qualifier of a derived item", Statement{ColumnsRead: true, Scopes: []Scope{{
			Tables: []Table{{Name: "orders"}}, Derived: []string{"Orders"}, Columns: []ColumnUse{{"orders", "total"}},
		}}}, nil},
		{"ambiguous qualifier", Statement{ColumnsRead: true, Scopes: []Scope{{
			Tables: []Table{{Schema: "a", Name: "t"}, {Schema: "b", Name: "t"}}, Columns: []ColumnUse{{"t", "x"}},
		}}}, nil},
		{"exact names", Statement{ColumnsRead: true, Names: NamesExact, Scopes: []Scope{{
			Tables: []Table{{Name: "Orders"}}, Columns: []ColumnUse{{"orders", "x"}, {"Orders", "y"}},
		}}}, []ResolvedColumn{{"public", "Orders", "y", false}}},
		{"folded names, once each", Statement{ColumnsRead: true, Scopes: []Scope{
			{Tables: []Table{{Name: "Orders"}}, Columns: []ColumnUse{{"orders", "x"}, {"ORDERS", "X"}}},
			{Tables: []Table{{Schema: "pg_catalog", Name: "pg_class", System: true}}, Columns: []ColumnUse{{"", "relname"}}},
		}}, []ResolvedColumn{{"pg_catalog", "pg_class", "relname", true}, {"public", "Orders", "x", false}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.st.ColumnRefs("public"); !reflect.DeepEqual(got, c.want) {
				t.Errorf("got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
