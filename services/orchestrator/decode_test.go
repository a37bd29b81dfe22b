package orchestrator

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
)

// The argument shapes models send around an unambiguous call (issue 18,
// item 9), read by every tool's decoder through the one path, each noted;
// and the ambiguous ones beside them, still refused with a fix.

// shapeIDs are the ids the decoders are told this run produced.
var shapeIDs = []string{"r1", "r2", "schema"}

// decoders reads raw with each tool's decoder; the value is what the tool
// would act on.
var decoders = map[string]func(raw string) (any, []string, error){
	policy.ToolRunReadQuery: func(raw string) (any, []string, error) { return decodeRead(raw) },
	policy.ToolInspectPlan:  func(raw string) (any, []string, error) { return decodePlan(raw) },
	policy.ToolInspectSchema: func(raw string) (any, []string, error) {
		return decodeSchema(raw)
	},
	policy.ToolProfileTable:      func(raw string) (any, []string, error) { return decodeProfile(raw) },
	policy.ToolInspectOperations: func(raw string) (any, []string, error) { return decodeOperations(raw) },
	policy.ToolComposeReport:     func(raw string) (any, []string, error) { return decodeReport(raw, shapeIDs) },
	policy.ToolRecommendChange:   func(raw string) (any, []string, error) { return decodeRecommend(raw, shapeIDs) },
	policy.ToolComparePlans:      func(raw string) (any, []string, error) { return decodeCompare(raw, shapeIDs) },
	policy.ToolPresentAnswer:     func(raw string) (any, []string, error) { return decodeAnswer(raw, shapeIDs) },
}

// declared is each tool's arguments in the declared shape.
var declared = map[string]string{
	policy.ToolRunReadQuery:      `{"sql":"SELECT 1","reason":"one"}`,
	policy.ToolInspectPlan:       `{"sql":"SELECT 1","reason":null,"hypotheticalIndex":null}`,
	policy.ToolInspectSchema:     `{"table":"orders","schema":null,"pattern":null,"after":null}`,
	policy.ToolProfileTable:      `{"table":"orders","depth":"basic","fromColumn":null}`,
	policy.ToolInspectOperations: `{"kind":"sessions","schema":null,"limit":5}`,
	policy.ToolComposeReport:     `{"claims":[{"text":"x","evidence":[{"source":"artifact","correlationId":"r1"}]}]}`,
	policy.ToolRecommendChange:   `{"kind":"index","statement":"CREATE INDEX i ON t (a)","rationale":"why","evidence":[{"source":"artifact","correlationId":"r1"}]}`,
	policy.ToolComparePlans:      `{"before":"r1","after":"r2"}`,
	policy.ToolPresentAnswer:     `{"artifact":"r1","presentation":{"kind":"table","spec":null}}`,
}

// TestEveryDecoderReadsTheCallsEnvelopes: trailing prose, a ```json fence,
// double-encoded JSON and a {"name","parameters"|"arguments"} wrapper of
// the tool's own name are read by every tool's decoder as the declared
// arguments they carry, each with a note saying so.
func TestEveryDecoderReadsTheCallsEnvelopes(t *testing.T) {
	if len(decoders) != len(toolSpecs) {
		t.Fatalf("%d decoders under test for %d tools", len(decoders), len(toolSpecs))
	}
	for tool, decode := range decoders {
		base := declared[tool]
		want, wantNotes, err := decode(base)
		if err != nil || len(wantNotes) != 0 {
			t.Fatalf("%s: the declared shape %s: %v %q", tool, base, err, wantNotes)
		}
		for _, c := range []struct{ name, raw, note string }{
			{"trailing prose", base + "\n\nThis reads what the objective asks.", "prose after the arguments' JSON object left out"},
			{"json fence", "```json\n" + base + "\n```", "arguments sent in a ```json fence"},
			{"bare fence", "```\n" + base + "\n```\n", "arguments sent in a ```json fence"},
			{"fence and prose", "```json\n" + base + "\n```\nThat is the call.", "prose after the arguments' JSON object left out"},
			{"double-encoded", jsonString(base), "arguments sent as a JSON string"},
			{"parameters wrapper", `{"name":"` + tool + `","parameters":` + base + `}`, `arguments sent inside a {"name","parameters"} wrapper`},
			{"arguments wrapper", `{"name":"` + tool + `","arguments":` + jsonString(base) + `}`, `arguments sent inside a {"name","arguments"} wrapper`},
			{"prefixed wrapper", `{"name":"functions.` + strings.ToUpper(tool) + `","parameters":` + base + `}`, `arguments sent inside a {"name","parameters"} wrapper`},
		} {
			got, notes, err := decode(c.raw)
			if err != nil {
				t.Errorf("%s, %s: refused: %v", tool, c.name, err)
				continue
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s, %s: read as %+v, want %+v", tool, c.name, got, want)
			}
			if !slices.Contains(notes, c.note) {
				t.Errorf("%s, %s: notes %q lack %q", tool, c.name, notes, c.note)
			}
		}
	}
}

// TestEveryDecoderRefusesAnAmbiguousEnvelope: a wrapper naming another
// tool, two JSON objects, an object after the prose, two fences: each is
// refused in Sonde's words, saying what to send.
func TestEveryDecoderRefusesAnAmbiguousEnvelope(t *testing.T) {
	for tool, decode := range decoders {
		base := declared[tool]
		other := policy.ToolComposeReport
		if tool == other {
			other = policy.ToolRunReadQuery
		}
		for _, c := range []struct{ name, raw, says string }{
			{"wrapper of another tool", `{"name":"` + other + `","parameters":` + base + `}`, "call " + other + " itself"},
			{"wrapper of another tool, prefixed", `{"name":"functions.` + other + `","arguments":` + base + `}`, "call " + other + " itself"},
			{"two objects", base + " " + base, "more than one JSON value"},
			{"an object in the prose", base + "\nor else " + base, "more than one JSON value"},
			{"two fences", "```json\n" + base + "\n```\n```json\n" + base + "\n```", "more than one JSON value"},
		} {
			_, _, err := decode(c.raw)
			var ae *argError
			if !errors.As(err, &ae) || !strings.Contains(ae.msg, c.says) || strings.Contains(ae.msg, "json:") {
				t.Errorf("%s, %s: %v (want a refusal saying %q)", tool, c.name, err, c.says)
			}
		}
	}
}

// TestStatementsLoseTheirSQLFence: a ```sql (or dialect-tagged) fence
// around a statement is taken off and noted; a fence holding two
// statements, or a fence with more after it, is refused.
func TestStatementsLoseTheirSQLFence(t *testing.T) {
	for _, tag := range []string{"sql", "SQL", "postgresql", "sqlite", "tsql", ""} {
		raw := `{"sql":` + jsonString("```"+tag+"\nSELECT ';' AS x -- one; not two\nFROM t;\n```") + `,"reason":null}`
		a, notes, err := decodeRead(raw)
		if err != nil || a.SQL != "SELECT ';' AS x -- one; not two\nFROM t;" || !slices.Contains(notes, `"sql": the `+"```"+strings.ToLower(tag)+` fence around the statement taken off`) {
			t.Errorf("tag %q: %+v %q %v", tag, a, notes, err)
		}
	}
	p, notes, err := decodePlan(`{"sql":"` + "```sql\\nSELECT 1\\n```" + `","reason":null,"hypotheticalIndex":"` + "```sql\\nCREATE INDEX ON t (a)\\n```" + `"}`)
	if err != nil || p.SQL != "SELECT 1" || p.Hypothetical != "CREATE INDEX ON t (a)" || len(notes) != 2 {
		t.Errorf("plan: %+v %q %v", p, notes, err)
	}
	r, notes, err := decodeRecommend(`{"kind":"index","statement":"`+"```sql\\nCREATE INDEX i ON t (a);\\n```"+`","rationale":"why","evidence":["r1"]}`, shapeIDs)
	if err != nil || r.Statement != "CREATE INDEX i ON t (a);" || !slices.Contains(notes, `"statement": the `+"```sql"+` fence around the statement taken off`) {
		t.Errorf("recommend: %+v %q %v", r, notes, err)
	}
	for _, c := range []struct{ sql, says string }{
		{"```sql\nSELECT 1;\nSELECT 2\n```", "holds 2 statements"},
		{"```sql\nSELECT 1; DELETE FROM t;\n```", "holds 2 statements"},
		{"```sql\nSELECT $$;$$; SELECT 2\n```", "holds 2 statements"},
		{"```sql\nSELECT 1\n```\n```sql\nSELECT 2\n```", "after its fence"},
	} {
		_, _, err := decodeRead(`{"sql":` + jsonString(c.sql) + `}`)
		var ae *argError
		if !errors.As(err, &ae) || !strings.Contains(ae.msg, c.says) || !strings.Contains(ae.msg, "send one statement") {
			t.Errorf("%q: %v (want a refusal saying %q and what to send)", c.sql, err, c.says)
		}
	}
	// One statement with a dollar-quoted or commented semicolon is one.
	for _, sql := range []string{"```sql\nSELECT $x$a;b$x$\n```", "```sql\nSELECT 1 /* ; */\n```", "```sql\nSELECT \"a;b\" FROM t;\n-- done;\n```"} {
		if _, _, err := decodeRead(`{"sql":` + jsonString(sql) + `}`); err != nil {
			t.Errorf("%q refused: %v", sql, err)
		}
	}
}

// TestNullableFieldsReadNullStrings: "null", "None" and "none" where the
// tool declares a nullable field are read as null; where the field is not
// nullable they are the value sent.
func TestNullableFieldsReadNullStrings(t *testing.T) {
	a, notes, err := decodeRead(`{"sql":"SELECT 1","reason":"None"}`)
	if err != nil || a.Reason != "" || !slices.Contains(notes, `"reason": the string "None" read as null`) {
		t.Errorf("read: %+v %q %v", a, notes, err)
	}
	p, notes, err := decodePlan(`{"sql":"SELECT 1","reason":"null","hypotheticalIndex":"none"}`)
	if err != nil || p.Hypothetical != "" || p.Reason != "" || len(notes) != 2 {
		t.Errorf("plan: %+v %q %v", p, notes, err)
	}
	s, notes, err := decodeSchema(`{"table":"None","schema":"null","pattern":"none","after":"None"}`)
	if err != nil || s != (schemaArgs{}) || len(notes) != 4 {
		t.Errorf("schema: %+v %q %v", s, notes, err)
	}
	f, notes, err := decodeProfile(`{"table":"orders","depth":"None","fromColumn":"null"}`)
	if err != nil || f != (profileArgs{Table: "orders"}) || len(notes) != 2 {
		t.Errorf("profile: %+v %q %v", f, notes, err)
	}
	o, notes, err := decodeOperations(`{"kind":"sessions","schema":"None","limit":"None"}`)
	if err != nil || o != (operationsArgs{Kind: "sessions"}) || !slices.Contains(notes, `"limit": the string "None" read as null`) {
		t.Errorf("operations: %+v %q %v", o, notes, err)
	}
	an, notes, err := decodeAnswer(`{"artifact":"r1","presentation":{"kind":"table","spec":"None"}}`, shapeIDs)
	if err != nil || an.Presentation.Kind != contracts.PresentTable || len(notes) != 1 {
		t.Errorf("answer: %+v %q %v", an, notes, err)
	}
	// Not nullable: the string is what was sent.
	if a, _, err := decodeRead(`{"sql":"None"}`); err != nil || a.SQL != "None" {
		t.Errorf("a required sql of \"None\" was not kept: %+v %v", a, err)
	}
	if _, _, err := decodeProfile(`{"table":"None"}`); err != nil {
		t.Errorf("a table named None was refused: %v", err)
	}
}

// TestIDsAndSourcesResolveToTheRunsResults: an id written R1 or "r 1"
// names r1 where r1 is this run's; any source with an id is read as the
// artifact it names; an id of no result is left as sent, for the citation
// check to refuse by its id.
func TestIDsAndSourcesResolveToTheRunsResults(t *testing.T) {
	art := func(id string) []contracts.EvidenceRef {
		return []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: id}}
	}
	for _, c := range []struct {
		ev   string
		want []contracts.EvidenceRef
		note string
	}{
		{`["R1"]`, art("r1"), `evidence 1.1: "R1" read as "r1"`},
		{`[{"source":"artifact","correlationId":"R 1"}]`, art("r1"), `evidence 1.1: "R 1" read as "r1"`},
		{`[{"source":"artifact","correlationId":"Schema"}]`, art("schema"), `evidence 1.1: "Schema" read as "schema"`},
		{`[{"source":"result","correlationId":"r1"}]`, art("r1"), `evidence 1.1: source "result" read as "artifact"`},
		{`[{"source":"query","id":"r2"}]`, art("r2"), `evidence 1.1: source "query" read as "artifact"`},
		{`[{"source":"run_read_query","correlationId":"R2"}]`, art("r2"), `evidence 1.1: source "run_read_query" read as "artifact"`},
		{`[{"source":"context-snapshot","correlationId":"schema"}]`, art("schema"), `evidence 1.1: source "context-snapshot" read as "artifact"`},
		{`"[{\"source\":\"artifact\",\"correlationId\":\"r1\"}]"`, art("r1"), "claim 1: evidence sent as a JSON string"},
		// No result of this run: the id stays as sent and the source is
		// the artifact's, so the refusal can only be about the id.
		{`[{"source":"result","correlationId":"r9"}]`, art("r9"), `evidence 1.1: source "result" read as "artifact"`},
		{`[{"correlationId":"R9"}]`, art("R9"), "evidence 1.1 sent without a source"},
	} {
		a, notes, err := decodeReport(`{"claims":[{"text":"x","evidence":`+c.ev+`}]}`, shapeIDs)
		if err != nil || len(a.Claims) != 1 || !reflect.DeepEqual(a.Claims[0].Evidence, c.want) || !slices.Contains(notes, c.note) {
			t.Errorf("%s: %+v %q %v (want %+v noted %q)", c.ev, a.Claims, notes, err, c.want, c.note)
		}
	}
	// A snapshot cited by its fingerprint is not an artifact.
	a, notes, err := decodeReport(`{"claims":[{"text":"x","evidence":[{"source":"context-snapshot","fingerprint":"f"}]}]}`, shapeIDs)
	if err != nil || a.Claims[0].Evidence[0].Source != contracts.EvidenceContextSnapshot || len(notes) != 0 {
		t.Errorf("snapshot by fingerprint: %+v %q %v", a.Claims, notes, err)
	}
	r, notes, err := decodeRecommend(`{"kind":"index","statement":"CREATE INDEX i ON t (a)","rationale":"why","evidence":[{"source":"plan","correlationId":"R2"}]}`, shapeIDs)
	if err != nil || !reflect.DeepEqual(r.Evidence, art("r2")) || len(notes) != 2 {
		t.Errorf("recommend: %+v %q %v", r, notes, err)
	}
	cmp, notes, err := decodeCompare(`{"before":"R1","after":{"source":"result","correlationId":" r 2 "}}`, shapeIDs)
	if err != nil || cmp != (compareArgs{Before: "r1", After: "r2"}) || !slices.Contains(notes, `"before": "R1" read as "r1"`) || !slices.Contains(notes, `"after": " r 2 " read as "r2"`) {
		t.Errorf("compare: %+v %q %v", cmp, notes, err)
	}
	an, notes, err := decodeAnswer(`{"artifact":"R1","presentation":"{\"kind\":\"table\"}"}`, shapeIDs)
	if err != nil || an.Artifact != "r1" || an.Presentation.Kind != contracts.PresentTable || len(notes) != 2 {
		t.Errorf("answer: %+v %q %v", an, notes, err)
	}
}

// TestToolNamesAreReadInAnyCaseOrPrefix: a call's tool named in another
// case or after a namespace prefix is the run's tool; a tool the run does
// not have, however spelled, is not.
func TestToolNamesAreReadInAnyCaseOrPrefix(t *testing.T) {
	tools := []string{policy.ToolInspectSchema, policy.ToolRunReadQuery, policy.ToolComposeReport}
	for name, want := range map[string]string{
		"run_read_query":           "run_read_query",
		"Run_Read_Query":           "run_read_query",
		"functions.run_read_query": "run_read_query",
		"functions.COMPOSE_REPORT": "compose_report",
		" inspect_schema ":         "inspect_schema",
		"inspect_plan":             "",
		"functions.inspect_plan":   "",
		"runreadquery":             "",
		"a.b.run_read_query":       "",
	} {
		if got, _ := toolNamed(name, tools); got != want {
			t.Errorf("%q read as %q, want %q", name, got, want)
		}
	}
}
