package orchestrator

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sondehq/sonde/pkg/policy"
)

// toolSpecsGolden holds the tool declarations the model was shown before
// they were generated from each tool's arguments: the generated ones must
// say the same (as parsed JSON), with the parameters in the same order.
const toolSpecsGolden = "testdata/toolspecs.golden.json"

func TestToolSpecsMatchTheGolden(t *testing.T) {
	type golden struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	var got []golden
	for _, n := range specNamesInOrder() {
		sp := toolSpecs[n]
		got = append(got, golden{Name: sp.Name, Description: sp.Description, Parameters: sp.Parameters})
	}
	if *update {
		b, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.FromSlash(toolSpecsGolden), append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(filepath.FromSlash(toolSpecsGolden))
	if err != nil {
		t.Fatal(err)
	}
	var want []golden
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d tools declared, the golden holds %d", len(got), len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.Name || g.Description != w.Description {
			t.Errorf("tool %d: %q %q, golden %q %q", i, g.Name, g.Description, w.Name, w.Description)
		}
		var gv, wv any
		if json.Unmarshal(g.Parameters, &gv) != nil || json.Unmarshal(w.Parameters, &wv) != nil || !reflect.DeepEqual(gv, wv) {
			t.Errorf("%s: parameters\n  now:    %s\n  golden: %s", w.Name, g.Parameters, compact(w.Parameters))
		}
		// The order of the parameters is model-visible (the rules' shape
		// of a call, the engine goldens): it is kept at every depth.
		if a, b := keyOrder(g.Parameters), keyOrder(w.Parameters); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: properties in the order %v, golden %v", w.Name, a, b)
		}
	}
}

// specNamesInOrder lists the declared tools by the workflow table's order
// of first use, then any no row names.
func specNamesInOrder() []string {
	var out []string
	seen := map[string]bool{}
	add := func(n string) {
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	for _, n := range []string{policy.ToolInspectSchema, policy.ToolRunReadQuery, policy.ToolInspectPlan, policy.ToolComposeReport,
		policy.ToolComparePlans, policy.ToolRecommendChange, policy.ToolProfileTable, policy.ToolInspectOperations, policy.ToolPresentAnswer} {
		add(n)
	}
	for n := range toolSpecs {
		add(n)
	}
	return out
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	_ = json.Compact(&b, raw)
	return b.String()
}

// keyOrder lists the names under every "properties" object of a schema,
// depth first, in the order they are written.
func keyOrder(raw json.RawMessage) []string {
	var out []string
	var walk func(raw json.RawMessage, path string)
	walk = func(raw json.RawMessage, path string) {
		dec := json.NewDecoder(bytes.NewReader(raw))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
			return
		}
		for dec.More() {
			k, _ := dec.Token()
			var v json.RawMessage
			if dec.Decode(&v) != nil {
				return
			}
			key, _ := k.(string)
			switch key {
			case "properties":
				pd := json.NewDecoder(bytes.NewReader(v))
				_, _ = pd.Token()
				for pd.More() {
					pk, _ := pd.Token()
					var pv json.RawMessage
					if pd.Decode(&pv) != nil {
						return
					}
					name, _ := pk.(string)
					out = append(out, path+name)
					walk(pv, path+name+".")
				}
			case "items":
				walk(v, path+"[].")
			}
		}
	}
	walk(raw, "")
	return out
}

// TestStepKeysAreStable pins the step ids of fixed calls of every tool that
// reaches the database, as they were before the tools were declared one per
// file: recorded ledgers are replayed by these ids, so none may change.
func TestStepKeysAreStable(t *testing.T) {
	for _, c := range []struct {
		tool string
		args stepArgs
		want string
	}{
		{policy.ToolRunReadQuery, readArgs{SQL: " SELECT 1;\n", Reason: "prose"}, "bb120c57f6984c8fe742"},
		{policy.ToolInspectPlan, planArgs{SQL: "SELECT a FROM t"}, "e653ab45d1cdeca9e31b"},
		{policy.ToolInspectPlan, planArgs{SQL: "SELECT a FROM t", Hypothetical: "CREATE INDEX i ON t (a);"}, "ea0c884de23639f36a1b"},
		{policy.ToolInspectSchema, schemaArgs{}, "6bb612b6cb1e0059e1db"},
		{policy.ToolInspectSchema, schemaArgs{Schema: "public", Table: "orders"}, "e6c4a146105b7ff83a27"},
		{policy.ToolInspectSchema, schemaArgs{Pattern: "*ord*", After: "b"}, "2c9d9148a56f6c6ee4c4"},
		{policy.ToolProfileTable, profileArgs{Table: "orders", Depth: "distribution", FromColumn: "c"}, "30f9a495763e0ce946c8"},
		{policy.ToolProfileTable, profileArgs{Table: "orders"}, "588dbb037d840869ba94"},
		{policy.ToolInspectOperations, operationsArgs{Kind: "sessions", Schema: "s", Limit: 5}, "49cfbebf6462fb2652f0"},
		{policy.ToolInspectOperations, operationsArgs{Kind: "health"}, "ac0af5455a679cb32ca0"},
	} {
		if got := stepKey(c.tool, c.args); got != c.want {
			t.Errorf("%s %+v: step key %s, recorded ledgers hold %s", c.tool, c.args, got, c.want)
		}
	}
	// The same through the decoders, as the loop check reads a call: the
	// lenient spellings make the same step as the declared ones.
	for _, c := range []struct{ tool, raw, want string }{
		{policy.ToolRunReadQuery, "{\"query\":\"```sql\\nSELECT 1\\n```\",\"reason\":\"None\"}", "s_bb120c57f6984c8fe742"},
		{policy.ToolInspectPlan, `{"sql":"SELECT a FROM t","index":"CREATE INDEX i ON t (a)"}`, "s_ea0c884de23639f36a1b"},
		{policy.ToolInspectSchema, `{"table_name":"orders","schema":"null"}`, "s_27fa069ed9d557e425c9"},
		{policy.ToolProfileTable, `{"name":"orders","depth":"pattern","column":"c"}`, "s_a73f07080adad2cc1878"},
		{policy.ToolInspectOperations, `{"reading":"storage","limit":"7"}`, "s_593e11acb12fbceb4d81"},
	} {
		if got := callKey(c.tool, c.raw); got != c.want {
			t.Errorf("%s %s: call key %s, before %s", c.tool, c.raw, got, c.want)
		}
	}
}

// TestEveryToolIsWhole: each listed tool has every part a tool needs, a
// tool that reaches the database makes a step from a call written from its
// own schema, and the workflow table names only listed tools.
func TestEveryToolIsWhole(t *testing.T) {
	// unoffered are tools deliberately named by no workflow row.
	unoffered := map[string]bool{}
	offered := map[string]bool{}
	for w, row := range policy.Workflows {
		for _, n := range row.AgentTools {
			offered[n] = true
			if _, ok := toolTable[n]; !ok {
				t.Errorf("workflow %s names %s, which is not in toolList", w, n)
			}
		}
	}
	keys := map[string]string{}
	for i, tl := range toolList {
		n := tl.spec.Name
		switch {
		case n == "":
			t.Errorf("tool %d has no name", i)
		case toolTable[n].spec.Name != n || len(toolTable) != len(toolList):
			t.Errorf("%s is listed twice", n)
		case tl.spec.Description == "" || tl.brief == "" || tl.call == nil:
			t.Errorf("%s lacks a description, a brief or a handler", n)
		case (tl.op != "") != (tl.step != nil):
			t.Errorf("%s: an executor operation (%q) and a step go together", n, tl.op)
		case tl.repairBound && tl.step == nil:
			t.Errorf("%s is refused once repairs are spent but reaches no database", n)
		case !offered[n] && !unoffered[n]:
			t.Errorf("%s is named by no workflow row (list it as unoffered if that is meant)", n)
		}
		var schema map[string]any
		if err := json.Unmarshal(tl.spec.Parameters, &schema); err != nil {
			t.Errorf("%s: parameters are not JSON: %v", n, err)
			continue
		}
		if tl.step == nil {
			continue
		}
		call := exampleCall(schema)
		a, err := tl.step(call)
		if err != nil {
			t.Errorf("%s: a call written from its own schema, %s, is refused: %v", n, call, err)
			continue
		}
		key := stepKey(n, a)
		if other, ok := keys[key]; ok {
			t.Errorf("%s and %s make the same step", n, other)
		}
		keys[key] = n
	}
}

// exampleCall writes arguments from a tool's schema alone: null where null
// is allowed, else the first value an enum allows, else "x" or 1.
func exampleCall(schema map[string]any) string {
	props, _ := schema["properties"].(map[string]any)
	args := map[string]any{}
	for name, p := range props {
		pm, _ := p.(map[string]any)
		if types, ok := pm["type"].([]any); ok && len(types) == 2 && types[1] == "null" {
			args[name] = nil
			continue
		}
		if enum, ok := pm["enum"].([]any); ok && len(enum) > 0 {
			args[name] = enum[0]
			continue
		}
		switch pm["type"] {
		case "integer":
			args[name] = 1
		default:
			args[name] = "x"
		}
	}
	b, _ := json.Marshal(args)
	return string(b)
}
