package orchestrator

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/policy"
)

// lastUser is the last user message of a turn's request.
func lastUser(req contracts.ModelTurnRequest) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == contracts.RoleUser {
			return req.Messages[i].Content
		}
	}
	return ""
}

// TestTurnNoticesAreTrue: the report is asked for on the turns the reserve
// covers, each notice says how many turns are truly left, and "last turn"
// is said once, on the last.
func TestTurnNoticesAreTrue(t *testing.T) {
	h := newHarness(t, Config{})
	var mu sync.Mutex
	told := map[int]string{}
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		mu.Lock()
		told[n+1] = lastUser(req)
		mu.Unlock()
		return reads(fmt.Sprintf("SELECT %d", n))(0, req)
	}
	_, rec, err := h.drive(t, "notices", func(b *contracts.Budget) { b.MaxTurns = 5 })
	if err != nil {
		t.Fatal(err)
	}
	if rec.StopReason != contracts.StopTurnLimit {
		t.Fatalf("stop %s", rec.StopReason)
	}
	last := 0
	for turn := 1; turn <= 5; turn++ {
		msg := told[turn]
		switch turn {
		case 4:
			if !strings.Contains(msg, "You have 2 model turns left, this one included") {
				t.Fatalf("turn 4 was told %q", msg)
			}
		case 5:
			if !strings.Contains(msg, "This is your last model turn") {
				t.Fatalf("turn 5 was told %q", msg)
			}
		default:
			if strings.Contains(msg, "compose_report now") {
				t.Fatalf("turn %d was asked for the report early: %q", turn, msg)
			}
		}
		if strings.Contains(msg, "last model turn") {
			last++
		}
	}
	if last != 1 {
		t.Fatalf("the last-turn notice was said %d times", last)
	}
}

// TestReportReserveGrowsWithSlowTurns: a model that took a minute for a turn
// is asked for its report when twice that is left, not at the 20 s reserve a
// fast model gets; a fast model is asked at 20 s.
func TestReportReserveGrowsWithSlowTurns(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	header := agentHeader("slow")
	header.Budget, _ = policy.Budget(contracts.WorkflowInvestigation) // 450 s
	at := func(offset time.Duration, modelMs int64) string {
		e, err := contracts.NewEntry("r", contracts.KindRunStarted, t0, header)
		if err != nil {
			t.Fatal(err)
		}
		call := contracts.ToolCall{Turn: 1, CallID: "a", Tool: policy.ToolRunReadQuery, ModelMs: modelMs}
		entries := []contracts.Entry{e, mustEntry(t, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: call, StepID: "s1"})}
		s := &Service{cfg: Config{Now: func() time.Time { return t0.Add(offset) }}}
		d := &drive{s: s, runID: "r", entries: entries, header: header}
		return d.reportNotice(d.record())
	}
	slow := int64(60_000)
	if n := at(300*time.Second, slow); n != "" {
		t.Fatalf("asked with 150 s left of a slow run: %q", n)
	}
	if n := at(360*time.Second, slow); !strings.Contains(n, "About 90 s of the run's time are left") {
		t.Fatalf("not asked with 90 s left of a run whose turns take 60 s: %q", n)
	}
	if n := at(360*time.Second, 2_000); n != "" {
		t.Fatalf("a fast run was asked with 90 s left: %q", n)
	}
	if n := at(435*time.Second, 2_000); !strings.Contains(n, "About 15 s") {
		t.Fatalf("a fast run was not asked inside the 20 s reserve: %q", n)
	}
}

// TestEveryToolResultEndsWithTheRunsStatus: a result, a failure and a
// refusal each end with the line that says where the run stands.
func TestEveryToolResultEndsWithTheRunsStatus(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		switch n {
		case 0, 1:
			return reads(fmt.Sprintf("SELECT %d", n))(0, req)
		case 2:
			return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: "x", Name: "drop_table", Arguments: "{}"}}}
		}
		return contracts.ModelTurnReply{}
	}
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		if n == 1 {
			return failReply(3), nil
		}
		return okReply(req, 3), nil
	}
	entries, _, err := h.drive(t, "status", nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		v, _ := e.Decode()
		switch p := v.(type) {
		case *contracts.ToolCompleted:
			got = append(got, p.Content[strings.LastIndex(p.Content, "\n")+1:])
		case *contracts.ToolRefused:
			got = append(got, p.Content[strings.LastIndex(p.Content, "\n")+1:])
		}
	}
	// The capture is the run's first statement.
	want := []string{`[turn 1/36 · 2/30 statements · 3 repairs left · `, `[turn 2/36 · 3/30 statements · 3 repairs left · `, `[turn 3/36 · 3/30 statements · 3 repairs left · `}
	if len(got) != len(want) {
		t.Fatalf("results %q", got)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) || !strings.HasSuffix(got[i], " s left]") {
			t.Fatalf("result %d ends %q, want %q… s left]", i+1, got[i], want[i])
		}
	}
}

// TestRefusedCitationListsWhatIsCitable: a model that miscopies an id is
// told which ids this run can cite and what each holds, and can finish with
// one of them.
func TestRefusedCitationListsWhatIsCitable(t *testing.T) {
	h := newHarness(t, Config{})
	listed := regexp.MustCompile(`Citable in this run: (r[0-9]+) \(run_read_query, 1 row\), schema \(the schema snapshot`)
	report := func(id string) contracts.ModelTurnReply {
		args, _ := json.Marshal(map[string]any{"claims": []contracts.Claim{{Text: "one row", Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: id}}}}})
		return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: fmt.Sprint("rep", len(id)), Name: policy.ToolComposeReport, Arguments: string(args)}}}
	}
	h.model.script = func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		switch n {
		case 0:
			return reads("SELECT 1")(0, req)
		case 1:
			return report("rl") // a look-alike slip
		}
		last := req.Messages[len(req.Messages)-1].Content
		if m := listed.FindStringSubmatch(last); m != nil {
			return report(m[1])
		}
		return contracts.ModelTurnReply{Text: "no list in " + last}
	}
	_, rec, err := h.drive(t, "cite-list", nil)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != contracts.StatusSucceeded || len(rec.Report) != 1 || rec.Report[0].Evidence[0].CorrelationID != "r1" {
		t.Fatalf("status %s report %+v refusals %v", rec.Status, rec.Report, refusals(rec))
	}
}

// TestRulesSayTheTrueLimitsAndTheEngine: the rules name the engine with its
// dialect hints, and the turn limit they state is the tuned one the drive
// enforces, not the workflow's.
func TestRulesSayTheTrueLimitsAndTheEngine(t *testing.T) {
	for _, s := range enginespec.All() {
		if n := len(s.DialectHints); n < 3 || n > 5 {
			t.Errorf("engine %s has %d dialect hints, not 3 to 5", s.Name, n)
		}
		if rules := dialectRules(s.Name); !strings.Contains(rules, s.Dialect) || !strings.Contains(rules, s.DialectHints[0]) {
			t.Errorf("engine %s: the rules do not say its dialect and hints:\n%s", s.Name, rules)
		}
	}
	header := agentHeader("x")
	header.Budget, _ = policy.Budget(contracts.WorkflowInvestigation)
	header.Engine = contracts.EngineMSSQL
	entries := []contracts.Entry{
		mustEntry(t, contracts.KindRunStarted, header),
		mustEntry(t, contracts.KindDriverResolved, contracts.DriverResolved{Provider: "p", Model: "m", Settings: &contracts.ModelSettings{TurnLimit: 6}}),
	}
	rules := transcript(entries, "")[0].Content
	for _, want := range []string{"SQL Server (T-SQL)", "TOP (n)", "6 model turns", "uses one of the 3 repairs", "Once 4 statements have failed", "450 s for the whole run", "90 s of database time"} {
		if !strings.Contains(rules, want) {
			t.Errorf("the rules do not say %q:\n%s", want, rules)
		}
	}
	if strings.Contains(rules, "36 model turns") {
		t.Error("the rules state the workflow's 36 turns while the tuned limit of 6 applies")
	}
	// The rules name the run's fence mark, and the fences carry it.
	entries = append(entries, mustEntry(t, contracts.KindContextCaptured, contracts.ContextCaptured{CorrelationID: "schema", Text: fence.Wrap("schema", "t")}))
	msgs := transcript(entries, "")
	mark := runMark("r1")
	if !strings.Contains(msgs[0].Content, `mark="`+mark+`"`) || !strings.Contains(msgs[2].Content, `source="schema" mark="`+mark+`">>>`) {
		t.Errorf("the run's mark %s is not named by the rules or not carried by its fences:\n%s\n%s", mark, msgs[0].Content, msgs[2].Content)
	}
}

// TestARefusalCostsNoStatementButATooLargeResultDoes: what the guard refused
// never reached the database and is given back; a result refused for its
// size ran, and counts.
func TestARefusalCostsNoStatementButATooLargeResultDoes(t *testing.T) {
	h := newHarness(t, Config{})
	h.model.script = reads("DELETE FROM t", "SELECT * FROM big", "SELECT * FROM bigger")
	h.exec.answer = func(n int, req contracts.ExecRequest) (contracts.ExecReply, error) {
		code := contracts.RefuseNotASelect
		switch n {
		case 1:
			code = contracts.RefuseResultTooLarge
		case 2:
			code = contracts.RefuseReadingOverBudget // an operational reading refused for its size ran too
		}
		return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: &contracts.Refusal{Code: code, Message: "r", Fix: "f"}}, nil
	}
	_, rec, err := h.drive(t, "refund", nil)
	if err != nil {
		t.Fatal(err)
	}
	// The capture, then the two results refused for their size; the
	// refused write is given back.
	if rec.Spent.Statements != 3 {
		t.Fatalf("statements spent %d, want 3", rec.Spent.Statements)
	}
}

func TestASyntaxErrorRepeatsTheDialect(t *testing.T) {
	got := errorContent(&contracts.DBError{Class: contracts.DBSyntax, Message: `near "5": syntax error`}, "", 2, contracts.EngineSQLite, nil)
	if !strings.Contains(got, "SQLite syntax: LIMIT n, not TOP") {
		t.Fatalf("%s", got)
	}
	if got := errorContent(&contracts.DBError{Class: contracts.DBMissingObject, Message: "no such table"}, "", 2, contracts.EngineSQLite, nil); strings.Contains(got, "syntax:") {
		t.Fatalf("a missing table is not a dialect problem: %s", got)
	}
}
