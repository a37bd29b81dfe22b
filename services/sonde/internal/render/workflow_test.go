package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
)

func f64(v float64) *float64 { return &v }
func i64(v int64) *int64     { return &v }

func args(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// artifacts serves stored results by correlation id, as the gateway would.
func artifacts(arts ...contracts.Artifact) Source {
	return func(id string) (contracts.Artifact, error) {
		for _, a := range arts {
			if a.CorrelationID == id {
				return a, nil
			}
		}
		return contracts.Artifact{}, errors.New("sonde api: 404 artifact_not_found: artifact " + id + " expired")
	}
}

func printed(r contracts.Record, fetch Source) string {
	var b bytes.Buffer
	Workflow(&b, r, fetch)
	return b.String()
}

func wantAll(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestPrintWorkflowPlansComparisonsRecommendations(t *testing.T) {
	before := &contracts.PlanSummary{Engine: contracts.EnginePostgres,
		Access: []contracts.RelationAccess{{Relation: "public.invoice", Access: contracts.AccessFullScan, Rows: f64(412)}},
		Cost:   f64(23.5), Rows: f64(12), Uninterpreted: []string{"Hash Join", "Sort"}}
	after := &contracts.PlanSummary{Engine: contracts.EnginePostgres,
		Access: []contracts.RelationAccess{{Relation: "public.invoice", Access: contracts.AccessIndex, Index: "<hypothetical>invoice_customer_idx", Rows: f64(7)}},
		Cost:   f64(8.25), Rows: f64(12),
		HypotheticalIndex: "CREATE INDEX ON public.invoice (customer_id)"}
	lite := &contracts.PlanSummary{Engine: contracts.EngineSQLite,
		Access: []contracts.RelationAccess{{Relation: "Track", Access: contracts.AccessMixed}},
		Note:   "SQLite's plans estimate no costs or rows"}
	r := contracts.Record{RunID: "run-1", WorkflowType: contracts.WorkflowQueryOptimization, Steps: []contracts.Step{
		{Turn: 1, Tool: toolInspectPlan, Status: contracts.StepCompleted, Arguments: args(t, map[string]string{"sql": "SELECT *\n  FROM invoice WHERE customer_id = 7"}),
			Artifact: &contracts.ArtifactSummary{CorrelationID: "c-1"}, Plan: before},
		{Turn: 2, Tool: toolInspectPlan, Status: contracts.StepCompleted, Arguments: args(t, map[string]string{"sql": "SELECT * FROM invoice WHERE customer_id = 7"}),
			Artifact: &contracts.ArtifactSummary{CorrelationID: "c-2"}, Plan: after},
		{Turn: 3, Tool: toolInspectPlan, Status: contracts.StepCompleted, Arguments: args(t, map[string]string{"sql": "SELECT * FROM Track"}),
			CorrelationID: "c-3", Plan: lite},
	},
		Comparisons: []contracts.PlanComparison{{Before: "c-1", After: "c-2",
			BeforeSQL: "SELECT * FROM invoice WHERE customer_id = 7", AfterSQL: "SELECT * FROM invoice WHERE customer_id = 7",
			BeforePlan: before, AfterPlan: after, Summary: "public.invoice: full scan → index; cost 23.5 → 8.25 (estimates)."}},
		Recommendations: []contracts.Recommendation{{Kind: contracts.RecommendIndex,
			Statement: "CREATE INDEX invoice_customer_idx ON invoice (customer_id)", Rationale: "the plan scans invoice in full",
			Evidence:  []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c-1"}, {Source: contracts.EvidenceContextSnapshot, Fingerprint: "fp-9"}},
			Diagnosed: []string{"c-1"}}},
	}
	out := printed(r, nil)
	wantAll(t, out,
		"Plans read (estimates only: described, never executed)",
		" 1. plan c-1 (PostgreSQL, turn 1)",
		"SELECT * FROM invoice WHERE customer_id = 7", // on one line
		"public.invoice  full scan",
		"~412 rows",
		"estimates: cost 23.5, ~12 rows",
		"not interpreted by the summary: Hash Join, Sort",
		"as if this index existed (hypothetical, nothing was created): CREATE INDEX ON public.invoice (customer_id)",
		"index <hypothetical>invoice_customer_idx",
		" 3. plan c-3 (SQLite, turn 3)",
		"no estimates (SQLite): SQLite's plans estimate no costs or rows",
		"Plan comparisons",
		" 1. before c-1 → after c-2",
		"public.invoice full scan · cost 23.5",
		"public.invoice index <hypothetical>invoice_customer_idx · cost 8.25 · with hypothetical index",
		"server: public.invoice: full scan → index; cost 23.5 → 8.25 (estimates).",
		"Estimates only: these plans were described, not executed.",
		"Recommendations (recorded, never executed)",
		" 1. index: recorded, never executed",
		"CREATE INDEX invoice_customer_idx ON invoice (customer_id)",
		"why: the plan scans invoice in full",
		"cites artifact c-1 (the plan it diagnosed), schema snapshot fp-9",
	)
	if strings.Contains(out, "Answer") || strings.Contains(out, "Operational readings") || strings.Contains(out, "Table profiles") {
		t.Errorf("sections the record does not hold were printed:\n%s", out)
	}
	if got := printed(contracts.Record{Steps: []contracts.Step{{Tool: "run_read_query"}}}, nil); got != "" {
		t.Errorf("an investigation without plans printed %q", got)
	}
}

func TestPrintWorkflowProfile(t *testing.T) {
	r := contracts.Record{Profiles: []contracts.TableProfiled{{
		Table: "customer", Depth: "pattern", CorrelationID: "c-4",
		Profile: &contracts.TableProfile{
			Table: contracts.NameRef{Schema: "public", Name: "customer"}, Depth: contracts.DepthPattern,
			Rows: 200, Sampled: true, SampleRows: 200,
			Columns: []contracts.ColumnProfile{
				{Name: "customer_id", Type: "integer", Present: 200, Distinct: i64(200)},
				{Name: "email", Type: "text", Present: 150, Distinct: i64(149), EmailLike: i64(148), DigitRun: i64(0)},
				{Name: "doc", Type: "json", Present: 2, NoDistinct: "json has no equality"},
			},
			Uncovered: 3, NextColumn: "phone",
			Findings: []contracts.Finding{
				{Code: contracts.FindingSuspectedPII, Column: "email", Detail: "148 of 150 values look like email addresses (over 50 %)"},
				{Code: contracts.FindingHighNull, Column: "doc", Detail: "99.0 % null (over 50 %)"},
			},
		},
	}, {Table: "ghost", Depth: "basic", CorrelationID: "c-5"}}}
	out := printed(r, nil)
	wantAll(t, out,
		"Table profiles (counts and shapes, never a value)",
		` 1. public.customer (asked as "customer"), depth pattern, 200 rows, artifact c-4`,
		"sampled: the counts are over the first 200 rows of a large table",
		"column       type     present  distinct  email-like  digit-run",
		"customer_id  integer   100.0%       200           -          -",
		"email        text       75.0%       149         148          0",
		"doc          json        1.0%       n/a           -          -",
		"distinct n/a for doc: json has no equality",
		"findings:",
		"suspected_pii email: 148 of 150 values look like email addresses (over 50 %)",
		"high_null doc: 99.0 % null (over 50 %)",
		`3 more columns not profiled; profile them with profile_table fromColumn "phone"`,
		" 2. ghost (basic): no profile recorded, artifact c-5",
	)
	// A basic profile shows neither distinct nor pattern columns.
	basic := printed(contracts.Record{Profiles: []contracts.TableProfiled{{Table: "t", Profile: &contracts.TableProfile{
		Table: contracts.NameRef{Name: "t"}, Depth: contracts.DepthBasic, Rows: 0,
		Columns: []contracts.ColumnProfile{{Name: "a", Present: 0}}}}}}, nil)
	wantAll(t, basic, " 1. t, depth basic, 0 rows", "column  type  present", "findings: none")
	if strings.Contains(basic, "distinct") || strings.Contains(basic, "email-like") {
		t.Errorf("basic profile printed columns it did not measure:\n%s", basic)
	}
}

func TestPrintWorkflowReadings(t *testing.T) {
	cols := contracts.OperationsColumns[contracts.OpsSessions]
	r := contracts.Record{RunID: "run-2", Steps: []contracts.Step{
		{Tool: toolInspectOperations, Status: contracts.StepCompleted, Arguments: args(t, map[string]any{"kind": "sessions", "limit": 10}),
			Artifact: &contracts.ArtifactSummary{CorrelationID: "c-6", Columns: cols, Rows: 2}},
		{Tool: toolInspectOperations, Status: contracts.StepCompleted, Arguments: args(t, map[string]any{"kind": "slow-queries"}),
			Artifact: &contracts.ArtifactSummary{CorrelationID: "c-7", Columns: contracts.OperationsColumns[contracts.OpsSlowQueries], Rows: 0}},
		{Tool: toolInspectOperations, Status: contracts.StepCompleted, Arguments: args(t, map[string]any{"kind": "health", "schema": "main"}),
			Artifact: &contracts.ArtifactSummary{CorrelationID: "c-8", Columns: contracts.OperationsColumns[contracts.OpsHealth], Rows: 1}},
		{Tool: toolInspectOperations, Status: contracts.StepRefused, Arguments: args(t, map[string]any{"kind": "storage"})},
	}}
	fetch := artifacts(contracts.Artifact{ArtifactSummary: contracts.ArtifactSummary{CorrelationID: "c-6", Columns: cols, Rows: 2},
		Data: [][]any{
			{"4242", "app", "active", "SELECT pg_sleep(5)", float64(5012), "Lock:relation", "4243"},
			{"4243", "report", "idle in transaction", nil, float64(120000), nil, nil},
		}})
	out := printed(r, fetch)
	wantAll(t, out,
		"Operational readings (each a moment, not a history)",
		" 1. sessions, artifact c-6, 2 rows: a moment, not a history",
		"running_ms",
		"session  user    state                query               running_ms  waiting_on     blocked_by",
		"4242     app     active               SELECT pg_sleep(5)        5012  Lock:relation  4243",
		"SELECT pg_sleep(5)",
		"5012",
		"idle in transaction",
		"NULL",
		" 2. slow-queries, artifact c-7, 0 rows: a moment, not a history",
		"no rows: nothing to report of this kind (columns query, calls, total_ms, mean_ms, rows)",
		" 3. health in schema main, artifact c-8, 1 rows",
		"rows not available: sonde api: 404 artifact_not_found: artifact c-8 expired",
	)
	if strings.Contains(out, "storage") {
		t.Errorf("a refused reading was printed as one:\n%s", out)
	}
	wantAll(t, printed(r, nil), "rows not fetched (columns session, user, state, query, running_ms, waiting_on, blocked_by)")
}

func TestPrintWorkflowAnswer(t *testing.T) {
	art := contracts.Artifact{
		ArtifactSummary: contracts.ArtifactSummary{CorrelationID: "c-9", Rows: 4,
			Columns: []contracts.Column{{Name: "country", Type: "text"}, {Name: "revenue", Type: "numeric"}, {Name: "invoices", Type: "integer"}}},
		SQL: "SELECT country, sum(total) AS revenue, count(*) AS invoices FROM invoice GROUP BY 1",
		Data: [][]any{
			{"USA", "523.06", float64(91)},
			{"Canada", "303.96", float64(56)},
			{"France", float64(195.1), float64(35)},
			{"Chile", nil, float64(7)},
		},
	}
	chart := contracts.Record{RunID: "run-3",
		Steps: []contracts.Step{{Tool: "run_read_query", Artifact: &art.ArtifactSummary}},
		Answer: &contracts.AnswerComposed{CorrelationID: "c-9", SQL: art.SQL,
			Presentation: contracts.Presentation{Kind: contracts.PresentChart, Chart: &contracts.ChartSpec{
				Type: "bar", X: "country", Y: []string{"revenue"}, Caption: "Revenue by country"}},
			Handover: contracts.HandoverAutoExecuted}}
	out := printed(chart, artifacts(art))
	wantAll(t, out,
		"Answer: a bar chart of artifact c-9",
		`    "Revenue by country"`,
		"x: country · y: revenue",
		art.SQL,
		"USA       523.06  "+strings.Repeat("█", chartBarWidth),
		"Chile       NULL",
		"Handover: auto-executed: replay it as the editor does with: sonde handover run-3",
	)
	// Canada's bar is 303.96/523.06 of the full width: 18.6 cells.
	if !strings.Contains(out, "Canada    303.96  "+strings.Repeat("█", 18)+"▋\n") {
		t.Errorf("Canada's bar is not to scale:\n%s", out)
	}
	// A run recorded before decisions were kept says so, and is drawn by
	// the server's own rule: Chile's NULL is the point not drawn.
	wantAll(t, out, "the run recorded no chart decision: drawn by the server's rule (chart.1) now",
		"not drawn (1 point): Chile: revenue is NULL")

	// A recorded decision is drawn as recorded, whatever the rows would
	// decide now: here it leaves out USA's revenue, so Canada's bar is the
	// full width and USA has none.
	chart.Answer.Chart = &contracts.ChartDecision{Rule: "chart.1", Series: []string{"revenue"}, Rows: 4,
		Dropped: []contracts.ChartDrop{{Row: 0, Column: "revenue", Why: contracts.ChartDropNotANumber}}}
	out = printed(chart, artifacts(art))
	wantAll(t, out, "USA       523.06\n", "Canada    303.96  "+strings.Repeat("█", chartBarWidth)+"\n",
		"not drawn (1 point): USA: revenue is not a number")
	if strings.Contains(out, "recorded no chart decision") || strings.Contains(out, "Chile: revenue") {
		t.Errorf("a recorded decision is decided again:\n%s", out)
	}
	chart.Answer.Chart = nil

	// Two series share the bar width; a pie shows each share.
	chart.Answer.Presentation.Chart = &contracts.ChartSpec{Type: "pie", X: "country", Y: []string{"invoices"}, Caption: "Invoices"}
	wantAll(t, printed(chart, artifacts(art)), "Answer: a pie chart", "country    invoices", "USA      91 (48.1%)  "+strings.Repeat("█", chartBarWidth), "Chile      7 (3.7%)  ██▌")
	chart.Answer.Presentation.Chart = &contracts.ChartSpec{Type: "stacked-bar", X: "country", Y: []string{"revenue", "invoices"}, Caption: "Both"}
	two := printed(chart, artifacts(art))
	wantAll(t, two, "country  revenue", "invoices", "USA       523.06  "+strings.Repeat("█", chartBarWidth/2)+"  ")

	// A table answer prints its rows; an applied handover its warning.
	table := chart
	table.Answer = &contracts.AnswerComposed{CorrelationID: "c-9", SQL: art.SQL,
		Presentation: contracts.Presentation{Kind: contracts.PresentTable},
		Handover:     contracts.HandoverApplied, HandoverWarning: "the statement ran in 2300 ms, over the 2 s the gate allows"}
	out = printed(table, artifacts(art))
	wantAll(t, out,
		"Answer: a table, artifact c-9",
		"country  revenue  invoices",
		"USA       523.06        91",
		"France     195.1        35",
		"Handover: applied: the statement is offered to the editor, not run",
		"warning: the statement ran in 2300 ms, over the 2 s the gate allows",
	)
	table.Answer.Handover = contracts.HandoverNone
	table.Answer.HandoverWarning = ""
	out = printed(table, nil)
	wantAll(t, out, "rows not fetched: read them with GET /api/agent/runs/run-3/artifacts/c-9",
		"Handover: none (the run was not started with --auto-execute)")
	out = printed(table, artifacts())
	wantAll(t, out, "rows not available: sonde api: 404 artifact_not_found")
}

// hostile is attacker text: line breaks that forge output, an ANSI escape
// that recolours the terminal, a carriage return that overwrites a line, a
// right-to-left override, a C1 control and a byte that is not UTF-8.
const hostile = "evil\nVerdict: answered (forged)\x1b[31mRED\x1b[0m\rover\u202eREVERSED\u0085c1\xff"

func TestPrintWorkflowEscapesHostileText(t *testing.T) {
	plan := &contracts.PlanSummary{Engine: contracts.Engine(hostile),
		Access:        []contracts.RelationAccess{{Relation: hostile, Access: contracts.AccessKind(hostile), Index: hostile}},
		Uninterpreted: []string{hostile}, Note: hostile, HypotheticalIndex: hostile}
	cols := []contracts.Column{{Name: hostile}, {Name: "n"}}
	art := contracts.Artifact{ArtifactSummary: contracts.ArtifactSummary{CorrelationID: "c-1", Columns: cols, Rows: 2},
		Data: [][]any{{hostile, float64(1)}, {hostile + "2", float64(2)}}}
	r := contracts.Record{RunID: "run-h", Steps: []contracts.Step{
		{Tool: toolInspectPlan, Arguments: args(t, map[string]string{"sql": hostile}), Artifact: &contracts.ArtifactSummary{CorrelationID: hostile}, Plan: plan},
		{Tool: toolInspectOperations, Arguments: args(t, map[string]string{"kind": hostile, "schema": hostile}), Artifact: &art.ArtifactSummary},
	},
		Comparisons:     []contracts.PlanComparison{{Before: hostile, After: hostile, BeforeSQL: hostile, AfterSQL: hostile, BeforePlan: plan, AfterPlan: plan, Summary: hostile}},
		Recommendations: []contracts.Recommendation{{Kind: hostile, Statement: hostile, Rationale: hostile, Evidence: []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: hostile}}}},
		Profiles: []contracts.TableProfiled{{Table: hostile, Depth: hostile, CorrelationID: hostile, Profile: &contracts.TableProfile{
			Table: contracts.NameRef{Schema: hostile, Name: hostile}, Depth: contracts.ProfileDepth(hostile), Rows: 2,
			Columns:   []contracts.ColumnProfile{{Name: hostile, Type: hostile, Present: 1, NoDistinct: hostile}},
			Findings:  []contracts.Finding{{Code: contracts.FindingCode(hostile), Column: hostile, Detail: hostile}},
			Uncovered: 1, NextColumn: hostile}}},
		Answer: &contracts.AnswerComposed{CorrelationID: "c-1", SQL: hostile,
			Presentation: contracts.Presentation{Kind: contracts.PresentChart, Chart: &contracts.ChartSpec{Type: hostile, X: hostile, Y: []string{"n"}, Caption: hostile}},
			Chart:        &contracts.ChartDecision{Rule: "chart.1", Series: []string{"n"}, Rows: 2},
			Handover:     contracts.Handover(hostile), HandoverWarning: hostile},
	}
	out := printed(r, artifacts(art))
	// The chart's x column is the hostile name: it must be found and drawn.
	// On one line the breaks become spaces; in a table cell they show escaped.
	wantAll(t, out, `evil Verdict: answered (forged)\x1b[31mRED\x1b[0m over\u202eREVERSED c1\xff`,
		`evil\nVerdict: answered (forged)\x1b[31`, "█")
	for i := 0; i < len(out); {
		c, size := utf8.DecodeRuneInString(out[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			t.Fatalf("output holds a byte that is not UTF-8 at %d:\n%s", i, out)
		case c < 0x20 && c != '\n', c == 0x7f, c >= 0x80 && c < 0xa0, c == 0x202e:
			t.Fatalf("output holds raw control %U at %d:\n%q", c, i, out)
		}
		i += size
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "Verdict:") {
			t.Errorf("hostile text forged a line: %q", line)
		}
	}
}

func TestPrintWorkflowBoundedWidth(t *testing.T) {
	long := strings.Repeat("wide", 5000)
	var cols []contracts.Column
	var row []any
	for i := 0; i < 50; i++ {
		cols = append(cols, contracts.Column{Name: strings.Repeat("head", 5000)})
		row = append(row, strings.Repeat("cell", 5000))
	}
	var data [][]any
	for i := 0; i < 500; i++ {
		data = append(data, row)
	}
	art := contracts.Artifact{ArtifactSummary: contracts.ArtifactSummary{CorrelationID: "c-1", Columns: cols, Rows: 500,
		Truncated: true, TruncatedBy: []string{"rows"}}, Data: data}
	plan := &contracts.PlanSummary{Engine: contracts.EngineDuckDB}
	for i := 0; i < 40; i++ {
		plan.Access = append(plan.Access, contracts.RelationAccess{Relation: long, Access: contracts.AccessFullScan, Index: long, Rows: f64(1e300)})
		plan.Uninterpreted = append(plan.Uninterpreted, long)
	}
	r := contracts.Record{RunID: "run-w", Steps: []contracts.Step{
		{Tool: toolInspectPlan, Arguments: args(t, map[string]string{"sql": long}), Artifact: &contracts.ArtifactSummary{CorrelationID: "c-0"}, Plan: plan},
		{Tool: toolInspectOperations, Arguments: args(t, map[string]string{"kind": "table-stats"}), Artifact: &art.ArtifactSummary},
	},
		Comparisons:     []contracts.PlanComparison{{Before: long, After: long, BeforeSQL: long, AfterSQL: long, BeforePlan: plan, AfterPlan: plan, Summary: long}},
		Recommendations: []contracts.Recommendation{{Kind: long, Statement: long, Rationale: long}},
		Answer: &contracts.AnswerComposed{CorrelationID: "c-1", SQL: long,
			Presentation: contracts.Presentation{Kind: contracts.PresentTable}, HandoverWarning: long},
	}
	out := printed(r, artifacts(art))
	const limit = 2*maxTextRunes + 40
	for _, line := range strings.Split(out, "\n") {
		if n := utf8.RuneCountInString(line); n > limit {
			t.Fatalf("a line of %d runes (limit %d): %.200s…", n, limit, line)
		}
	}
	if n := strings.Count(out, "\n"); n > 200 {
		t.Errorf("%d lines printed for one bounded record", n)
	}
	wantAll(t, out, "…", "… 480 more rows not shown", "… 42 more columns not shown", "the result was truncated when it was read (rows)",
		"… 32 more", "1e+300")
	// A table line fits the table width whatever its cells hold.
	for _, line := range strings.Split(out, "\n") {
		if (strings.HasPrefix(line, "    head") || strings.HasPrefix(line, "    cell")) && utf8.RuneCountInString(line) > 4+tableWidth {
			t.Errorf("a table line of %d runes (table width %d)", utf8.RuneCountInString(line), tableWidth)
		}
	}
}
