package contracts_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sondehq/sonde/contracts"
)

var update = flag.Bool("update", false, "rewrite schema/*.json from the Go types")

// messages lists every message type that crosses a boundary, by schema name.
func messages() map[string]any {
	m := map[string]any{
		"start-run":           contracts.StartRun{},
		"start-run-reply":     contracts.StartRunReply{},
		"cancel-run":          contracts.CancelRun{},
		"cancel-run-reply":    contracts.CancelRunReply{},
		"run-health":          contracts.RunHealth{},
		"model-turn-request":  contracts.ModelTurnRequest{},
		"model-turn-reply":    contracts.ModelTurnReply{},
		"model-delta":         contracts.ModelDelta{},
		"model-probe-request": contracts.ModelProbeRequest{},
		"model-probe-reply":   contracts.ModelProbeReply{},
		"exec-request":        contracts.ExecRequest{},
		"exec-reply":          contracts.ExecReply{},
		"exec-cancel":         contracts.ExecCancel{},
		"artifact":            contracts.Artifact{},
		"connection":          contracts.ConnectionDescriptor{},
		"ledger-entry":        contracts.Entry{},
		"run-record":          contracts.Record{},
	}
	for kind, mk := range contracts.EventKinds {
		m["event-"+string(kind)] = reflect.ValueOf(mk()).Elem().Interface()
	}
	return m
}

func generate(t *testing.T, v any) []byte {
	t.Helper()
	// Readers accept fields they do not know: contracts only ever add fields.
	r := &jsonschema.Reflector{AllowAdditionalProperties: true}
	s := r.Reflect(v)
	s.Version = "https://json-schema.org/draft/2020-12/schema"
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestSchemas proves schema/*.json is exactly what the Go types generate, and
// that no stale schema file lingers. Run `make schemas` after changing a type.
func TestSchemas(t *testing.T) {
	dir := "schema"
	want := map[string]bool{}
	for name, v := range messages() {
		file := filepath.Join(dir, name+".json")
		want[file] = true
		got := generate(t, v)
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		have, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: %v (run `make schemas`)", file, err)
			continue
		}
		if !bytes.Equal(have, got) {
			t.Errorf("%s is stale: the Go type changed; run `make schemas`", file)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	sort.Strings(files)
	for _, f := range files {
		if !want[f] && !*update {
			t.Errorf("%s has no Go type any more; delete it", f)
		}
		if !want[f] && *update {
			_ = os.Remove(f)
		}
	}
}

// TestEventsValidateAgainstSchemas encodes a populated payload of every event
// kind and validates it against its committed schema, so a schema that cannot
// describe the wire is caught.
func TestEventsValidateAgainstSchemas(t *testing.T) {
	args := json.RawMessage(`{"sql":"select 1"}`)
	call := contracts.ToolCall{Turn: 1, CallID: "c1", Tool: "run_read_query", Arguments: args}
	ref := []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c_1"}}
	samples := map[contracts.EventKind]any{
		contracts.KindRunStarted: contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation,
			Objective: "o", ConnectionID: "demo", Actor: contracts.Actor{ID: "a", Role: contracts.RoleAdmin}, Tools: []string{"x"}},
		contracts.KindDriverResolved:       contracts.DriverResolved{Provider: "demo", Model: "m", Drive: 1},
		contracts.KindContextCaptured:      contracts.ContextCaptured{Fingerprint: "f", Text: "t"},
		contracts.KindContextUnavailable:   contracts.ContextUnavailable{Code: "x"},
		contracts.KindStatementDrafted:     contracts.StatementDrafted{StepID: "s", SQL: "select 1", Fingerprint: "f"},
		contracts.KindPlanStatementDrafted: contracts.PlanStatementDrafted{SQL: "select 1"},
		contracts.KindToolInvoked:          contracts.ToolInvoked{ToolCall: call, StepID: "s", CorrelationID: "c_1"},
		contracts.KindToolCompleted: contracts.ToolCompleted{ToolCall: call, StepID: "s", Outcome: contracts.OutcomeOK,
			Artifact: &contracts.ArtifactSummary{CorrelationID: "c_1", Columns: []contracts.Column{{Name: "a"}}, Rows: 1}},
		contracts.KindToolRefused:      contracts.ToolRefused{ToolCall: call, Code: "x", Reason: "r", Content: "c"},
		contracts.KindReportComposed:   contracts.ReportComposed{ToolCall: call, Claims: []contracts.Claim{{Text: "t", Evidence: ref}}},
		contracts.KindClosingStatement: contracts.ClosingStatement{Turn: 1, Text: "t"},
		contracts.KindPlanComparison:   contracts.PlanComparison{ToolCall: call, Before: "a", After: "b"},
		contracts.KindRecommendation:   contracts.Recommendation{ToolCall: call, Kind: "index", Statement: "s", Evidence: ref},
		contracts.KindTableProfiled:    contracts.TableProfiled{ToolCall: call, Table: "t", Depth: "basic", CorrelationID: "c_1"},
		contracts.KindAnswerComposed:   contracts.AnswerComposed{ToolCall: call, CorrelationID: "c_1", Presentation: contracts.Presentation{Kind: contracts.PresentTable}},
		contracts.KindRunFinished: contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed,
			GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictAnswered, Rule: "r", Unmet: []string{}}},
	}
	if len(samples) != len(contracts.EventKinds) {
		t.Fatalf("%d samples for %d event kinds: add the new kind here", len(samples), len(contracts.EventKinds))
	}
	c := validator.NewCompiler()
	for kind, payload := range samples {
		file := "schema/event-" + string(kind) + ".json"
		abs, _ := filepath.Abs(file)
		sch, err := c.Compile(abs)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		e, err := contracts.NewEntry("r1", kind, time.Unix(0, 0), payload)
		if err != nil {
			t.Fatal(err)
		}
		inst, err := validator.UnmarshalJSON(strings.NewReader(string(e.Data)))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(inst); err != nil {
			t.Errorf("%s payload does not validate: %v", kind, err)
		}
		// And it decodes back into its kind's type.
		if _, err := e.Decode(); err != nil {
			t.Errorf("%s: %v", kind, err)
		}
	}
}
