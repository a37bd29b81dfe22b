package mssql

import (
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// A nonclustered Index Scan reads every entry of the index, however few
// columns it covers: a full scan, the index named. The Clustered Index Seek
// on the other side is the index read.
func TestSummarizeShowplanIndexScanIsFullScan(t *testing.T) {
	var sum contracts.PlanSummary
	if err := summarize(fixture(t, "index_scan_seek.xml"), &sum); err != nil {
		t.Fatal(err)
	}
	want := []contracts.RelationAccess{
		{Relation: "dbo.orders", Access: contracts.AccessFullScan, Index: "ix_orders_customer"},
		{Relation: "dbo.customers", Access: contracts.AccessIndex, Index: "PK_customers"},
	}
	if len(sum.Access) != len(want) {
		t.Fatalf("access %+v, want %+v", sum.Access, want)
	}
	for i, a := range sum.Access {
		if w := want[i]; a.Relation != w.Relation || a.Access != w.Access || a.Index != w.Index || a.Rows == nil {
			t.Errorf("access %d: %+v, want %+v with estimated rows", i, a, w)
		}
	}
	if len(sum.Uninterpreted) != 0 || sum.Cost == nil || *sum.Cost != 0.0471 {
		t.Errorf("uninterpreted %v cost %v", sum.Uninterpreted, sum.Cost)
	}
}
