package ledger_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
)

// Recorded ledgers: entries written by the code of one contract version,
// checked in under testdata/ledgers/v<N>/ and never rewritten. Every later
// version must still fold them to the same record; the recordings of the
// current version must also decode strictly — every field they hold is a
// field of today's types — so renaming a field or changing an event's shape
// fails here unless contracts.Version moves on (and a new recording is made
// for the new version).
//
// `go test ./pkg/ledger -run TestRecordLedgerFixtures -record` writes the
// hand-built recordings of the current version that do not exist yet; the
// demo run's is written by services/sonde/internal/stacktest's
// TestRecordDemoLedger -record. Neither ever overwrites a recording.
var record = flag.Bool("record", false, "write the missing recorded-ledger fixtures of the current contract version")

const fixturesDir = "testdata/ledgers"

// step is a folded step's shape, as a recording expects it.
type step struct {
	Tool   string
	Status contracts.StepStatus
	Code   string // the refusal's code, or the database error's class
}

// folded is what a recording must fold to.
type folded struct {
	Status       contracts.RunStatus
	StopReason   contracts.StopReason
	Reason       contracts.FailureReason
	Mode         contracts.Mode
	WorkflowType contracts.WorkflowType
	Drives       int
	Demo         bool
	Context      bool // a context fingerprint was captured
	Spent        *contracts.BudgetSpent
	Usage        *contracts.Usage
	Steps        []step
	// MinReads is, when Steps is nil, the least number of completed
	// run_read_query steps (a recorded model run's exact steps are its own).
	MinReads int
	Claims   int // -1: any number above zero
	Verdict  contracts.VerdictOutcome
}

// recordings lists every recording by version and name with what it folds to.
// A new recording needs an entry here.
var recordings = map[int]map[string]folded{
	1: {
		"hand-agent-resumed": {
			Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed,
			Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation, Drives: 2, Context: true,
			// Statements: the context's 2, then c_1, c_2, c_4 (c_3 met a busy
			// executor and is given back). DB time: 12 + 30 + 0. One repair.
			Spent: &contracts.BudgetSpent{Turns: 6, Statements: 5, DBTimeMs: 42, Repairs: 1},
			Usage: &contracts.Usage{InputTokens: 600, OutputTokens: 60, CachedTokens: 100},
			Steps: []step{
				{"run_read_query", contracts.StepCompleted, ""},
				{"run_read_query", contracts.StepFailed, string(contracts.DBMissingObject)},
				{"run_read_query", contracts.StepRefused, string(contracts.RefuseExecutorBusy)},
				{"drop_table", contracts.StepRefused, "unknown_tool"},
				{"run_read_query", contracts.StepIndeterminate, ""},
				{"compose_report", contracts.StepCompleted, ""},
			},
			Claims: 2, Verdict: contracts.VerdictAnswered,
		},
		"hand-planning-failed": {
			Status: contracts.StatusFailed, StopReason: contracts.StopFailed, Reason: contracts.ReasonModelUnavailable,
			Mode: contracts.ModePlanning, WorkflowType: contracts.WorkflowQueryOptimization, Drives: 1,
			// explain_query reached the database; a comparison, a
			// recommendation and an answer are calls the model made that
			// reached none, each a step of its own too. A profile is a
			// record beside its (here absent) step.
			Spent: &contracts.BudgetSpent{Turns: 5, Statements: 1, DBTimeMs: 7}, // the recorded calls are turns too
			Usage: &contracts.Usage{InputTokens: 50, OutputTokens: 5},
			Steps: []step{{"explain_query", contracts.StepCompleted, ""}, {"compare_plans", contracts.StepCompleted, ""},
				{"recommend", contracts.StepCompleted, ""}, {"compose_answer", contracts.StepCompleted, ""}},
			Verdict: contracts.VerdictUnanswered,
		},
		"demo-investigation": {
			Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed,
			Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation, Drives: 1, Demo: true, Context: true,
			// The context's statement and the three steps that name an
			// artifact; the turns' usage summed once each.
			Spent: &contracts.BudgetSpent{Turns: 4, Statements: 4, DBTimeMs: 2},
			Usage: &contracts.Usage{InputTokens: 1220 + 1492 + 1822 + 2177, OutputTokens: 51 + 122 + 112 + 358, CachedTokens: 1024 + 1280 + 1536},
			Steps: []step{
				{"inspect_schema", contracts.StepCompleted, ""},
				{"run_read_query", contracts.StepCompleted, ""},
				{"run_read_query", contracts.StepCompleted, ""},
				{"compose_report", contracts.StepCompleted, ""},
			},
			MinReads: 2, Claims: 4, Verdict: contracts.VerdictAnswered,
		},
	},
}

// TestRecordedLedgersFold decodes every recording and folds it.
func TestRecordedLedgersFold(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(fixturesDir, "v*"))
	if err != nil {
		t.Fatal(err)
	}
	seenVersion := map[int]bool{}
	for _, dir := range dirs {
		v, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "v"))
		if err != nil {
			t.Fatalf("%s: not a version directory (v<N>)", dir)
		}
		if v > contracts.Version {
			t.Fatalf("%s records version %d, newer than contracts.Version %d", dir, v, contracts.Version)
		}
		seenVersion[v] = true
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		kinds := map[contracts.EventKind]bool{}
		for _, file := range files {
			name := strings.TrimSuffix(filepath.Base(file), ".jsonl")
			want, ok := recordings[v][name]
			if !ok {
				t.Errorf("%s has no expectation in recordings[%d][%q]", file, v, name)
				continue
			}
			for _, k := range kindsIn(t, file) {
				kinds[k] = true
			}
			t.Run(fmt.Sprintf("v%d/%s", v, name), func(t *testing.T) {
				checkFold(t, readRecording(t, file, v, v == contracts.Version), want)
			})
		}
		for name := range recordings[v] {
			if _, err := os.Stat(filepath.Join(dir, name+".jsonl")); err != nil {
				t.Errorf("recording %s of version %d is missing: %v", name, v, err)
			}
		}
		if v == contracts.Version {
			// Every kind of today is in some recording of today.
			for kind := range contracts.EventKinds {
				if !kinds[kind] {
					t.Errorf("no recording of version %d holds a %s entry; add one", v, kind)
				}
			}
		}
	}
	if !seenVersion[contracts.Version] {
		t.Fatalf("no recordings of contracts.Version %d under %s: a new version needs its own (run with -record)",
			contracts.Version, fixturesDir)
	}
}

// readRecording reads a recording's entries. Every line must decode into
// the entry envelope with no field unknown, at the directory's version.
// strict (the current version): each payload must decode into its kind's
// type with no field unknown, and encode back to every field it held, with
// the same values.
func readRecording(t *testing.T, file string, v int, strict bool) []contracts.Entry {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var entries []contracts.Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for line := 1; sc.Scan(); line++ {
		var e contracts.Entry
		if err := strictDecode(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s:%d: the entry envelope does not decode strictly: %v", file, line, err)
		}
		if e.V != v {
			t.Fatalf("%s:%d: entry of version %d in the directory of version %d", file, line, e.V, v)
		}
		if strict {
			mk, ok := contracts.EventKinds[e.Kind]
			if !ok {
				t.Fatalf("%s:%d: kind %q is not a kind of version %d any more; bump contracts.Version", file, line, e.Kind, v)
			}
			p := mk()
			if err := strictDecode(e.Data, p); err != nil {
				t.Fatalf("%s:%d: %s does not decode strictly into today's type (a field renamed, removed or retyped?): %v; bump contracts.Version",
					file, line, e.Kind, err)
			}
			again, err := json.Marshal(p)
			if err != nil {
				t.Fatal(err)
			}
			if path, ok := subset(e.Data, again); !ok {
				t.Fatalf("%s:%d: %s does not encode back to what was recorded at %s:\n recorded %s\n encoded  %s",
					file, line, e.Kind, path, e.Data, again)
			}
		}
		entries = append(entries, e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatalf("%s holds no entries", file)
	}
	return entries
}

// kindsIn lists the kinds of a recording's entries, read leniently.
func kindsIn(t *testing.T, file string) []contracts.EventKind {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []contracts.EventKind
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var e struct {
			Kind contracts.EventKind `json:"kind"`
		}
		if json.Unmarshal(line, &e) == nil {
			out = append(out, e.Kind)
		}
	}
	return out
}

func strictDecode(b []byte, v any) error {
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// subset reports whether every field of the JSON value a is in b with the
// same value (b may hold more fields: contracts only ever add), and where
// they first differ.
func subset(a, b []byte) (string, bool) {
	var va, vb any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	if da.Decode(&va) != nil || db.Decode(&vb) != nil {
		return "(top)", false
	}
	return subsetValue("$", va, vb)
}

func subsetValue(path string, a, b any) (string, bool) {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return path, false
		}
		for k, x := range av {
			y, ok := bv[k]
			if !ok {
				return path + "." + k, false
			}
			if p, ok := subsetValue(path+"."+k, x, y); !ok {
				return p, false
			}
		}
		return "", true
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return path, false
		}
		for i := range av {
			if p, ok := subsetValue(fmt.Sprintf("%s[%d]", path, i), av[i], bv[i]); !ok {
				return p, false
			}
		}
		return "", true
	}
	return path, reflect.DeepEqual(a, b)
}

// checkFold folds entries and holds the record to want.
func checkFold(t *testing.T, entries []contracts.Entry, want folded) {
	t.Helper()
	runID := entries[0].RunID
	r := ledger.Fold(runID, entries)
	if r.RunID != runID || r.Entries != len(entries) || r.LastSeq != entries[len(entries)-1].StreamSeq {
		t.Errorf("run %q, %d entries, last seq %d; want %q, %d, %d", r.RunID, r.Entries, r.LastSeq,
			runID, len(entries), entries[len(entries)-1].StreamSeq)
	}
	if r.Status != want.Status || r.StopReason != want.StopReason || r.Reason != want.Reason {
		t.Errorf("status %s, stop %s, reason %q; want %s, %s, %q", r.Status, r.StopReason, r.Reason, want.Status, want.StopReason, want.Reason)
	}
	if r.Mode != want.Mode || r.WorkflowType != want.WorkflowType || r.Drives != want.Drives || r.Demo != want.Demo {
		t.Errorf("mode %s, workflow %s, drives %d, demo %v; want %s, %s, %d, %v", r.Mode, r.WorkflowType, r.Drives, r.Demo,
			want.Mode, want.WorkflowType, want.Drives, want.Demo)
	}
	if r.Objective == "" || r.ConnectionID == "" || r.Actor.ID == "" || len(r.Tools) == 0 || r.Budget.PolicyVersion == "" || r.StartedAt.IsZero() {
		t.Errorf("the header did not fold: objective %q, connection %q, actor %+v, tools %v, budget %+v, started %v",
			r.Objective, r.ConnectionID, r.Actor, r.Tools, r.Budget, r.StartedAt)
	}
	if r.Provider == "" || r.Model == "" {
		t.Errorf("the driver did not fold: provider %q, model %q", r.Provider, r.Model)
	}
	if (r.ContextFingerprint != "") != want.Context {
		t.Errorf("context fingerprint %q, want one: %v", r.ContextFingerprint, want.Context)
	}
	if want.Spent != nil && r.Spent != *want.Spent {
		t.Errorf("spent %+v, want %+v", r.Spent, *want.Spent)
	}
	if want.Usage != nil && r.Usage != *want.Usage {
		t.Errorf("usage %+v, want %+v", r.Usage, *want.Usage)
	}
	var got []step
	reads := 0
	for _, s := range r.Steps {
		code := ""
		switch {
		case s.Refusal != nil:
			code = string(s.Refusal.Code)
		case s.DBError != nil:
			code = string(s.DBError.Class)
		}
		got = append(got, step{s.Tool, s.Status, code})
		if s.Tool == "run_read_query" && s.Status == contracts.StepCompleted {
			reads++
			if s.Artifact == nil || s.CorrelationID == "" || s.Artifact.CorrelationID != s.CorrelationID {
				t.Errorf("completed read %s folded without its artifact: %+v", s.StepID, s)
			}
		}
	}
	if want.Steps != nil && !slices.Equal(got, want.Steps) {
		t.Errorf("steps\n got  %v\n want %v", got, want.Steps)
	}
	if reads < want.MinReads {
		t.Errorf("%d completed reads, want at least %d: %v", reads, want.MinReads, got)
	}
	if want.Claims == -1 && len(r.Report) == 0 || want.Claims >= 0 && len(r.Report) != want.Claims {
		t.Errorf("%d claims, want %d (-1: some)", len(r.Report), want.Claims)
	}
	if want.Verdict == "" && r.GoalVerdict != nil || want.Verdict != "" && (r.GoalVerdict == nil || r.GoalVerdict.Outcome != want.Verdict || r.GoalVerdict.Rule == "") {
		t.Errorf("verdict %+v, want %q", r.GoalVerdict, want.Verdict)
	}
	if want.Status.Terminal() && (r.FinishedAt == nil || r.FinishedAt.Before(r.StartedAt)) {
		t.Errorf("finished at %v, started at %v", r.FinishedAt, r.StartedAt)
	}
}

// TestRecordLedgerFixtures writes, with -record, the hand-built recordings
// of the current version that are missing, through the real ledger writer
// on an embedded JetStream.
func TestRecordLedgerFixtures(t *testing.T) {
	if !*record {
		t.Skip("writes recordings only with -record")
	}
	dir := filepath.Join(fixturesDir, "v"+strconv.Itoa(contracts.Version))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t)
	l := open(t, srv.JetStream())
	for name, build := range handBuilt {
		file := filepath.Join(dir, name+".jsonl")
		if _, err := os.Stat(file); err == nil {
			t.Logf("%s exists: recordings are never rewritten", file)
			continue
		}
		runID := "r" + strings.ReplaceAll(name, "-", "")
		clock := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
		w := l.Writer(runID, 0, func() time.Time { clock = clock.Add(1500 * time.Millisecond); return clock })
		for _, a := range build() {
			if _, err := w.Append(context.Background(), a.kind, a.payload); err != nil {
				t.Fatalf("%s: append %s: %v", name, a.kind, err)
			}
		}
		entries, err := l.Read(context.Background(), runID)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		for _, e := range entries {
			line, err := json.Marshal(e)
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(file, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s (%d entries)", file, len(entries))
	}
}

type appendOp struct {
	kind    contracts.EventKind
	payload any
}

func call(turn int, id, tool, args string, usage *contracts.Usage, text string) contracts.ToolCall {
	return contracts.ToolCall{Turn: turn, CallID: id, Tool: tool, Arguments: json.RawMessage(args), Usage: usage, Text: text}
}

// handBuilt are the hand-built recordings: together with the demo run's
// they hold every event kind, and the fold's harder paths — a failed step
// and its repair, a refusal after invocation, a busy executor's refusal
// given back, a refusal of a step never invoked, a step left open by a
// drive that stopped and settled indeterminate by the next, two drives.
var handBuilt = map[string]func() []appendOp{
	"hand-agent-resumed": func() []appendOp {
		budget := contracts.Budget{PolicyVersion: "agent-read-only.investigation.1", MaxTurns: 12, MaxStatements: 10,
			DeadlineMs: 300000, DBTimeMs: 60000, StatementTimeoutMs: 10000, MaxRows: 200, MaxBytes: 262144,
			ModelTurnTimeoutMs: 60000, MaxRepairs: 2, ReportReserveTurns: 1, ReportReserveMs: 30000}
		yes := true
		q := func(sql string) string { return `{"sql":` + strconv.Quote(sql) + `}` }
		return []appendOp{
			{contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: contracts.WorkflowInvestigation,
				Objective: "Why did orders fall in March?", ConnectionID: "demo", Engine: contracts.EngineSQLite,
				Actor: contracts.Actor{ID: "local", Role: contracts.RoleAdmin}, Budget: budget,
				Tools: []string{"inspect_schema", "run_read_query", "compose_report"}}},
			{contracts.KindDriverResolved, contracts.DriverResolved{Provider: "openai", Model: "gpt-test", SettingsSource: "operator",
				SettingsPath: "/etc/sonde/tuning.json", SettingsDigest: "sha256:00",
				Settings: &contracts.ModelSettings{TurnLimit: 10, ReadingsBeforeReport: 3, AskAgainOnEmptyTurn: &yes},
				Drive:    1, Orchestrator: "orch-a"}},
			{contracts.KindContextCaptured, contracts.ContextCaptured{Fingerprint: "ctx_1", CorrelationID: "c_ctx", Tables: 3, Statements: 2,
				Text: "«tables»orders, customers, events«/tables»"}},
			{contracts.KindStatementDrafted, contracts.StatementDrafted{StepID: "s1", SQL: "select count(*) from orders", Fingerprint: "fp_1", Reason: "count"}},
			{contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call(1, "call_1", "run_read_query", q("select count(*) from orders"),
				&contracts.Usage{InputTokens: 100, OutputTokens: 10, CachedTokens: 50}, "Counting orders first."), StepID: "s1", CorrelationID: "c_1"}},
			{contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: call(1, "call_1", "run_read_query", q("select count(*) from orders"), nil, ""),
				StepID: "s1", Outcome: contracts.OutcomeOK, DurationMs: 12, Fingerprint: "fp_1", Content: "count(*)\n500",
				Artifact: &contracts.ArtifactSummary{CorrelationID: "c_1", Columns: []contracts.Column{{Name: "count(*)", Type: "INTEGER"}}, Rows: 1, Bytes: 14}}},
			{contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call(2, "call_2", "run_read_query", q("select * from order"),
				&contracts.Usage{InputTokens: 100, OutputTokens: 10, CachedTokens: 50}, ""), StepID: "s2", CorrelationID: "c_2"}},
			{contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: call(2, "call_2", "run_read_query", q("select * from order"), nil, ""),
				StepID: "s2", Outcome: contracts.OutcomeError, DurationMs: 30, Fingerprint: "fp_2", Content: "no such table: order",
				DBError: &contracts.DBError{Class: contracts.DBMissingObject, Message: "no such table: order"}}},
			{contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call(3, "call_3", "run_read_query", q("select 1"),
				&contracts.Usage{InputTokens: 100, OutputTokens: 10}, ""), StepID: "s3", CorrelationID: "c_3"}},
			{contracts.KindToolRefused, contracts.ToolRefused{ToolCall: call(3, "call_3", "run_read_query", q("select 1"), nil, ""),
				StepID: "s3", Code: contracts.RefuseExecutorBusy, Reason: "every executor is busy", Fix: "ask again", Content: "busy"}},
			{contracts.KindToolRefused, contracts.ToolRefused{ToolCall: call(3, "call_4", "drop_table", `{"table":"orders"}`, nil, ""),
				Code: "unknown_tool", Reason: "there is no tool drop_table", Fix: "use run_read_query", Content: "unknown tool"}},
			{contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call(4, "call_5", "run_read_query", q("select max(id) from orders"),
				&contracts.Usage{InputTokens: 100, OutputTokens: 10}, ""), StepID: "s4", CorrelationID: "c_4"}},
			// The first drive stops here; the second records s4 as it finds it.
			{contracts.KindDriverResolved, contracts.DriverResolved{Provider: "openai", Model: "gpt-test", SettingsSource: "bundled",
				Drive: 2, Orchestrator: "orch-b"}},
			{contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: call(4, "call_5", "run_read_query", q("select max(id) from orders"), nil, ""),
				StepID: "s4", Outcome: contracts.OutcomeIndeterminate, Content: "the step may or may not have run"}},
			{contracts.KindClosingStatement, contracts.ClosingStatement{Turn: 5, Text: "Orders fell after the price change.",
				Usage: &contracts.Usage{InputTokens: 100, OutputTokens: 10}}},
			{contracts.KindReportComposed, contracts.ReportComposed{ToolCall: call(6, "call_6", "compose_report", `{"claims":[]}`,
				&contracts.Usage{InputTokens: 100, OutputTokens: 10}, ""), Claims: []contracts.Claim{
				{Text: "500 orders in all.", Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c_1"}}},
				{Text: "Three tables hold orders.", Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceContextSnapshot, Fingerprint: "ctx_1"}}},
			}}},
			{contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed,
				GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictAnswered, Rule: "agent-investigation.1", Unmet: []string{}},
				Detail:      "The report cites this run's results."}},
		}
	},
	"hand-planning-failed": func() []appendOp {
		budget := contracts.Budget{PolicyVersion: "planning.query-optimization.1", MaxTurns: 8, MaxStatements: 4,
			DeadlineMs: 120000, DBTimeMs: 30000, StatementTimeoutMs: 5000, MaxRows: 100, MaxBytes: 65536, ModelTurnTimeoutMs: 60000}
		q := `{"sql":"select * from orders where customer_id = 1"}`
		return []appendOp{
			{contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModePlanning, WorkflowType: contracts.WorkflowQueryOptimization,
				Objective: "Make the customer orders query faster", ConnectionID: "shop", Engine: contracts.EnginePostgres,
				Actor: contracts.Actor{ID: "ann", Role: contracts.RoleMember}, PreviousRunID: "rprevious", AutoExecute: true, Budget: budget,
				Tools: []string{"explain_query", "compare_plans", "recommend", "profile_table", "compose_answer"}}},
			{contracts.KindDriverResolved, contracts.DriverResolved{Provider: "ollama", Model: "llama-test", Drive: 1}},
			{contracts.KindContextUnavailable, contracts.ContextUnavailable{Code: "executor-unavailable", Detail: "no executor answered"}},
			{contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call(1, "p1", "explain_query", q, &contracts.Usage{InputTokens: 50, OutputTokens: 5}, ""),
				StepID: "p1", CorrelationID: "c_p1"}},
			{contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: call(1, "p1", "explain_query", q, nil, ""), StepID: "p1",
				Outcome: contracts.OutcomeOK, DurationMs: 7, Content: "Seq Scan on orders",
				Artifact: &contracts.ArtifactSummary{CorrelationID: "c_p1", Columns: []contracts.Column{{Name: "QUERY PLAN", Type: "text"}}, Rows: 3, Bytes: 120,
					Truncated: true, TruncatedBy: []string{"rows"}}}},
			{contracts.KindPlanStatementDrafted, contracts.PlanStatementDrafted{SQL: "create index on orders (customer_id)", Note: "run it yourself"}},
			{contracts.KindPlanComparison, contracts.PlanComparison{ToolCall: call(2, "p2", "compare_plans", `{"before":"c_p1","after":"c_p1"}`, nil, ""),
				Before: "c_p1", After: "c_p1", Summary: "the same plan"}},
			{contracts.KindRecommendation, contracts.Recommendation{ToolCall: call(3, "p3", "recommend", `{}`, nil, ""), Kind: "index",
				Statement: "create index on orders (customer_id)", Rationale: "a sequential scan reads every order",
				Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c_p1"}}}},
			{contracts.KindTableProfiled, contracts.TableProfiled{ToolCall: call(4, "p4", "profile_table", `{"table":"orders"}`, nil, ""),
				Table: "public.orders", Depth: "shallow", CorrelationID: "c_p4"}},
			{contracts.KindAnswerComposed, contracts.AnswerComposed{ToolCall: call(5, "p5", "compose_answer", `{}`, nil, ""),
				CorrelationID: "c_p1", Presentation: contracts.Presentation{Kind: contracts.PresentTable}}},
			{contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusFailed, StopReason: contracts.StopFailed,
				Reason:      contracts.ReasonModelUnavailable,
				GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictUnanswered, Rule: "planning-query-optimization.1", Unmet: []string{"no-report"}},
				Detail:      "The model could not be reached."}},
		}
	},
}
