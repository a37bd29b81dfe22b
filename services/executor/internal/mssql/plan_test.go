package mssql

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// A showplan of a seek with a key lookup, a heap scan of the same table in
// another branch, and an operator the summary does not know. Written after
// SQL Server 2022's showplan schema (1.564): the attributes the summary
// reads are the server's.
const seekPlan = `<?xml version="1.0" encoding="utf-16"?>
<ShowPlanXML xmlns="http://schemas.microsoft.com/sqlserver/2004/07/showplan" Version="1.564" Build="16.0.1000.6">
  <BatchSequence><Batch><Statements>
    <StmtSimple StatementText="SELECT ..." StatementId="1" StatementType="SELECT" StatementSubTreeCost="0.0131" StatementEstRows="2">
      <QueryPlan>
        <RelOp NodeId="0" PhysicalOp="Concatenation" LogicalOp="Concatenation" EstimateRows="2" EstimatedTotalSubtreeCost="0.0131">
          <Concat>
            <RelOp NodeId="1" PhysicalOp="Nested Loops" LogicalOp="Inner Join" EstimateRows="1">
              <NestedLoops Optimized="false">
                <RelOp NodeId="2" PhysicalOp="Index Seek" LogicalOp="Index Seek" EstimateRows="1">
                  <IndexScan Ordered="true" ScanDirection="FORWARD">
                    <Object Database="[shop]" Schema="[dbo]" Table="[orders]" Index="[ix_orders_customer]" IndexKind="NonClustered" />
                  </IndexScan>
                </RelOp>
                <RelOp NodeId="3" PhysicalOp="Key Lookup" LogicalOp="Clustered Index Seek" EstimateRows="1">
                  <IndexScan Lookup="true" Ordered="true">
                    <Object Database="[shop]" Schema="[dbo]" Table="[orders]" Index="[PK_orders]" IndexKind="Clustered" />
                  </IndexScan>
                </RelOp>
              </NestedLoops>
            </RelOp>
            <RelOp NodeId="4" PhysicalOp="Table Scan" LogicalOp="Table Scan" EstimateRows="1000">
              <TableScan Ordered="false">
                <Object Database="[shop]" Schema="[dbo]" Table="[events]" />
              </TableScan>
            </RelOp>
            <RelOp NodeId="5" PhysicalOp="Clustered Index Seek" LogicalOp="Clustered Index Seek" EstimateRows="1">
              <IndexScan Ordered="true">
                <Object Database="[shop]" Schema="[dbo]" Table="[customers]" Index="[PK_customers]" IndexKind="Clustered" />
              </IndexScan>
            </RelOp>
            <RelOp NodeId="6" PhysicalOp="Clustered Index Scan" LogicalOp="Clustered Index Scan" EstimateRows="3">
              <IndexScan Ordered="false">
                <Object Database="[shop]" Schema="[dbo]" Table="[customers]" Index="[PK_customers]" IndexKind="Clustered" />
              </IndexScan>
            </RelOp>
            <RelOp NodeId="7" PhysicalOp="Foreign Key References Check" LogicalOp="Foreign Key References Check" EstimateRows="1" />
            <RelOp NodeId="8" PhysicalOp="Foreign Key References Check" LogicalOp="Foreign Key References Check" EstimateRows="1" />
          </Concat>
        </RelOp>
      </QueryPlan>
    </StmtSimple>
  </Statements></Batch></BatchSequence>
</ShowPlanXML>`

func TestSummarizeShowplanJoin(t *testing.T) {
	var sum contracts.PlanSummary
	if err := summarize(fixture(t, "select_join.xml"), &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Cost == nil || *sum.Cost != 0.0065704 || sum.Rows == nil || *sum.Rows != 10 {
		t.Errorf("cost %v rows %v, want 0.0065704 and 10", sum.Cost, sum.Rows)
	}
	if len(sum.Access) != 2 || sum.Access[0].Relation != "dbo.customers" || sum.Access[1].Relation != "dbo.orders" {
		t.Fatalf("access %+v", sum.Access)
	}
	for _, a := range sum.Access {
		// A Clustered Index Scan reads every entry of the clustered index: a
		// full scan, the index named.
		if a.Access != contracts.AccessFullScan || a.Index != "PK_"+strings.TrimPrefix(a.Relation, "dbo.") || a.Rows == nil {
			t.Errorf("%+v, want a full scan of the clustered index with estimated rows", a)
		}
	}
	if len(sum.Uninterpreted) != 0 || sum.Note == "" {
		t.Errorf("uninterpreted %v note %q", sum.Uninterpreted, sum.Note)
	}
}

func TestSummarizeShowplanSeeks(t *testing.T) {
	var sum contracts.PlanSummary
	if err := summarize(seekPlan, &sum); err != nil {
		t.Fatal(err)
	}
	one := func(v float64) *float64 { return &v }
	want := []contracts.RelationAccess{
		{Relation: "dbo.orders", Access: contracts.AccessIndex, Index: "ix_orders_customer", Rows: one(2)},
		{Relation: "dbo.events", Access: contracts.AccessFullScan, Rows: one(1000)},
		{Relation: "dbo.customers", Access: contracts.AccessMixed, Index: "PK_customers", Rows: one(4)},
	}
	if len(sum.Access) != len(want) {
		t.Fatalf("access %+v", sum.Access)
	}
	for i, a := range sum.Access {
		w := want[i]
		if a.Relation != w.Relation || a.Access != w.Access || a.Index != w.Index || a.Rows == nil || *a.Rows != *w.Rows {
			t.Errorf("access %d: %+v (rows %v), want %+v (rows %v)", i, a, a.Rows, w, *w.Rows)
		}
	}
	if !slices.Equal(sum.Uninterpreted, []string{"Foreign Key References Check"}) {
		t.Errorf("uninterpreted %v, want the unknown operator once", sum.Uninterpreted)
	}
	if sum.Cost == nil || *sum.Cost != 0.0131 || sum.Rows == nil || *sum.Rows != 2 {
		t.Errorf("cost %v rows %v", sum.Cost, sum.Rows)
	}
}

// A table-valued function's step names no stored relation: listed, not
// read as access.
func TestSummarizeShowplanUninterpreted(t *testing.T) {
	var sum contracts.PlanSummary
	if err := summarize(fixture(t, "string_split.xml"), &sum); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(sum.Uninterpreted, "Table-valued function") {
		t.Errorf("uninterpreted %v", sum.Uninterpreted)
	}
	for _, bad := range []string{"<html/>", "<ShowPlanXML><unclosed>"} {
		if err := summarize(bad, &sum); err == nil {
			t.Errorf("%q was read as a showplan", bad)
		}
	}
}

func TestShowplanSQL(t *testing.T) {
	got := showplanSQL("SELECT 1")
	if got != "SET SHOWPLAN_XML ON\nSELECT 1\nSET SHOWPLAN_XML OFF" {
		t.Errorf("%q", got)
	}
	plan, err := ParsePlan(fixture(t, "select_join.xml"))
	if err != nil || len(plan.Docs) != 1 {
		t.Fatalf("docs %v %v", plan, err)
	}
}

// Against a live server (skipped without one): a seek on the primary key,
// a scan, a write refused by the guard, a division by zero that plans
// without running, and the table unchanged.
func TestLivePlan(t *testing.T) {
	db, dsn := live(t)
	ctx := context.Background()
	e, err := Open(ctx, Config{DSN: dsn, Readable: []string{"sonde_test.*"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	before := checksum(t, db)
	req := func(q string) engine.Request {
		return engine.Request{SQL: q, Limits: rowset.Limits{MaxRows: 100, MaxBytes: 1 << 20}, Timeout: 10 * time.Second}
	}
	res, sum, err := e.Plan(ctx, req("SELECT total FROM sonde_test.orders WHERE id = 2"))
	if err != nil {
		t.Fatal(err)
	}
	if res.Statements != 1 || res.Rows == nil || len(res.Rows.Rows) != 1 || res.Rows.Columns[0].Name != "showplan" || res.Fingerprint == "" {
		t.Errorf("result %+v", res)
	}
	if len(sum.Access) != 1 || sum.Access[0].Access != contracts.AccessIndex || sum.Cost == nil {
		t.Errorf("summary %+v", sum)
	}
	if _, sum, err = e.Plan(ctx, req("SELECT SUM(total) FROM sonde_test.orders")); err != nil ||
		len(sum.Access) != 1 || sum.Access[0].Access != contracts.AccessFullScan {
		t.Errorf("scan: %+v %v", sum, err)
	}
	if _, _, err := e.Plan(ctx, req("SELECT id / 0 FROM sonde_test.orders")); err != nil {
		t.Errorf("a division by zero was run, not planned: %v", err)
	}
	var ref *contracts.Refusal
	if res, _, err := e.Plan(ctx, req("DELETE FROM sonde_test.orders")); !errors.As(err, &ref) || res.Statements != 0 {
		t.Errorf("a write: %v", err)
	}
	if after := checksum(t, db); after != before {
		t.Fatalf("the table changed: %s -> %s", before, after)
	}
}
