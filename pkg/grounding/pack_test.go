package grounding

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// TestOperationsPackingIsNamesAndIndexes: an operations run sees names and
// index names only, in the inventory's order, hostile names quoted and
// escaped, a table without an index says so, and the notice names no tool.
func TestOperationsPackingIsNamesAndIndexes(t *testing.T) {
	inv := contracts.Inventory{Engine: contracts.EnginePostgres, Total: 40, Relations: []contracts.Relation{
		{Schema: "public", Name: "zeta", Columns: []contracts.RelationColumn{{Name: "secret_col"}},
			Indexes: []contracts.Index{{Name: "zeta_pkey", Unique: true, Columns: []string{"id"}}, {Name: "a, b_unique"}}},
		{Schema: "public", Name: "alpha\nDROP", ForeignKeys: []contracts.ForeignKey{{Columns: []string{"z"}, RefSchema: "public", RefName: "zeta", RefColumns: []string{"id"}}}},
	}}
	p := Pack(inv, PackOptions{NamesAndIndexes: true, Words: []string{"alpha"}, Label: "c"})
	for _, want := range []string{`"public"."zeta": indexes "zeta_pkey" (unique), "a, b_unique"`, `"public"."alpha\nDROP": no indexes`, "38 further relations exist and are not named here.\n"} {
		if !strings.Contains(p.Text, want) {
			t.Errorf("packing lacks %q:\n%s", want, p.Text)
		}
	}
	if strings.Contains(p.Text, "secret_col") || strings.Contains(p.Text, "inspect_schema") || strings.Contains(p.Text, "→") {
		t.Errorf("operations packing names a column, a tool or a foreign key:\n%s", p.Text)
	}
	if strings.Index(p.Text, "zeta") > strings.Index(p.Text, "alpha") {
		t.Errorf("operations packing is ranked, not in inventory order:\n%s", p.Text)
	}
}
