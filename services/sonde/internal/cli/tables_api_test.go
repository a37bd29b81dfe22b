package cli

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// catalogStack is a stack with the demo and "shop", a copy of the demo
// whose readable patterns hide every table but orders and customers.
func catalogStack(t *testing.T) *stacktest.Stack {
	t.Helper()
	db := filepath.Join(t.TempDir(), "shop.sqlite")
	if err := demodb.Ensure(db); err != nil {
		t.Fatal(err)
	}
	return stacktest.Start(t, stacktest.Options{Connections: []connections.Connection{{
		ID: "shop", Engine: contracts.EngineSQLite, Path: db, Readable: []string{"main.orders", "main.customers"},
	}}})
}

func wantAPIError(t *testing.T, err error, status int, code string) *client.APIError {
	t.Helper()
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != status || ae.Code != contracts.Code(code) {
		t.Fatalf("err = %v, want %d %s", err, status, code)
	}
	if ae.Message == "" || ae.Fix == "" {
		t.Fatalf("%s without message or fix: %+v", code, ae)
	}
	return ae
}

func TestTablesDescribeExplainEndpoints(t *testing.T) {
	s := catalogStack(t)
	c := s.Client("")
	ctx := context.Background()

	all, err := c.Tables(ctx, "demo", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if all.ConnectionID != "demo" || all.Total < 5 || len(all.Tables) != all.Total || all.Next != "" || all.Unreadable != 0 {
		t.Fatalf("demo tables = %+v", all)
	}
	var orders *api.TableEntry
	for i, e := range all.Tables {
		if e.Name == "orders" {
			orders = &all.Tables[i]
		}
	}
	if orders == nil || orders.Kind != string(contracts.RelationTable) || orders.Schema != "main" {
		t.Fatalf("no orders table in %+v", all.Tables)
	}

	// Readable patterns: hidden relations are counted, never named.
	shop, err := c.Tables(ctx, "shop", "", "")
	if err != nil {
		t.Fatal(err)
	}
	if shop.Total != 2 || shop.Unreadable == 0 || len(shop.Tables) != 2 {
		t.Fatalf("shop tables = %+v", shop)
	}
	for _, e := range shop.Tables {
		if e.Name != "orders" && e.Name != "customers" {
			t.Fatalf("unreadable relation named: %+v", e)
		}
	}
	// Pattern and paging.
	p, err := c.Tables(ctx, "demo", "order*", "")
	if err != nil || p.Total != 2 {
		t.Fatalf("pattern order*: %+v %v", p, err)
	}
	p, err = c.Tables(ctx, "demo", "order*", "main.order_items")
	if err != nil || len(p.Tables) != 1 || p.Tables[0].Name != "orders" {
		t.Fatalf("after main.order_items: %+v %v", p, err)
	}

	d, err := c.DescribeTable(ctx, "shop", "ORDERS")
	if err != nil {
		t.Fatal(err)
	}
	if d.ConnectionID != "shop" || d.Relation.Name != "orders" || len(d.Relation.Columns) == 0 {
		t.Fatalf("describe = %+v", d)
	}
	if _, err := c.DescribeTable(ctx, "shop", "main.orders"); err != nil {
		t.Fatal(err)
	}
	// A hidden relation answers exactly as a missing one.
	hidden := wantAPIError(t, func() error { _, err := c.DescribeTable(ctx, "shop", "payments"); return err }(), http.StatusNotFound, string(api.CodeTableNotFound))
	missing := wantAPIError(t, func() error { _, err := c.DescribeTable(ctx, "shop", "nosuch"); return err }(), http.StatusNotFound, string(api.CodeTableNotFound))
	if strings.Replace(hidden.Message, "payments", "nosuch", 1) != missing.Message {
		t.Fatalf("hidden and missing differ: %q vs %q", hidden.Message, missing.Message)
	}
	_, err = c.Tables(ctx, "nope", "", "")
	wantAPIError(t, err, http.StatusBadRequest, string(contracts.CodeUnknownConnection))

	ex, err := c.Explain(ctx, api.ExplainRequest{ConnectionID: "demo", SQL: "-- leading comment\nselect * from orders where id = 3"})
	if err != nil {
		t.Fatal(err)
	}
	if ex.ConnectionID != "demo" || ex.Plan.Engine != contracts.EngineSQLite || len(ex.Rows) == 0 || len(ex.Columns) == 0 {
		t.Fatalf("explain = %+v", ex)
	}
	// Guarded exactly like a read.
	_, err = c.Explain(ctx, api.ExplainRequest{ConnectionID: "demo", SQL: "delete from orders"})
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity || ae.Code == "" || ae.Fix == "" {
		t.Fatalf("explain of a delete: %v", err)
	}
	_, err = c.Explain(ctx, api.ExplainRequest{ConnectionID: "shop", SQL: "select * from payments"})
	if !errors.As(err, &ae) || ae.Status != http.StatusUnprocessableEntity {
		t.Fatalf("explain of a hidden table: %v", err)
	}
}
