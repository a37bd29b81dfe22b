package verdict

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/policy"
)

// genreRows is revenue per genre as the model reads it.
func genreRows(cid string) string {
	return `Result of the read on connection chinook: 3 rows, 2 columns. Cite it as {"source":"artifact","correlationId":"` + cid + `"}.` + "\n" +
		fence.Wrap("rows read from connection chinook", "genre | revenue\nRock | 826.65\nLatin | 382.14\nMetal | 261.36\n") +
		"\n[turn 2/36 · 1/30 statements · 3 repairs left · 440 s left]"
}

// schemaText is a snapshot's text: structure only.
var schemaText = fence.Wrap("schema of connection chinook", `"main"."genres" — table
  "genre_id" INTEGER not null
  "name" TEXT
"main"."invoice_items" — table
  "invoice_id" INTEGER not null
  "unit_price" NUMERIC(10,2) not null
  foreign key ("invoice_id") → "main"."invoices" ("invoice_id")
"main"."invoices" — table
  "invoice_id" INTEGER not null
  "customer_id" INTEGER not null`)

// headed opens an agent run of workflow w asking objective.
func headed(t *testing.T, w contracts.WorkflowType, objective string) contracts.Entry {
	return entry(t, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent, WorkflowType: w, Objective: objective})
}

// snapshotEntry is the run's schema snapshot, citable as "schema".
func snapshotEntry(t *testing.T) contracts.Entry {
	return entry(t, contracts.KindContextCaptured, contracts.ContextCaptured{Fingerprint: "f", CorrelationID: "schema", Text: schemaText})
}

// readAt is a step of tool asked in turn with args that produced cid,
// showing content: its invocation and its completion.
func readAt(t *testing.T, turn int, tool, cid, args, content string, rows int) []contracts.Entry {
	tc := contracts.ToolCall{Turn: turn, Tool: tool, Arguments: json.RawMessage(args)}
	return []contracts.Entry{
		entry(t, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: tc, StepID: "s_" + cid, CorrelationID: cid}),
		entry(t, contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: tc, StepID: "s_" + cid, Outcome: contracts.OutcomeOK,
			Artifact: &contracts.ArtifactSummary{CorrelationID: cid, Rows: rows}, Content: content}),
	}
}

// genresRead is run_read_query of revenue per genre in turn, as r1.
func genresRead(t *testing.T, turn int) []contracts.Entry {
	return readAt(t, turn, policy.ToolRunReadQuery, "r1", `{"sql":"SELECT genre, sum(total) AS revenue FROM sales WHERE year = 2013 GROUP BY 1 ORDER BY 2 DESC LIMIT 3"}`, genreRows("r1"), 3)
}

// failedRead is run_read_query in turn that failed at the database.
func failedRead(t *testing.T, turn int) []contracts.Entry {
	tc := contracts.ToolCall{Turn: turn, Tool: policy.ToolRunReadQuery, Arguments: json.RawMessage(`{"sql":"SELECT revenue FROM nowhere"}`)}
	return []contracts.Entry{
		entry(t, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: tc, StepID: "s_x", CorrelationID: "r9"}),
		entry(t, contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: tc, StepID: "s_x", Outcome: contracts.OutcomeError,
			DBError: &contracts.DBError{Class: contracts.DBMissingObject}, Content: "The database failed the statement."}),
	}
}

// refusedRead is run_read_query in turn refused before it ran.
func refusedRead(t *testing.T, turn int) contracts.Entry {
	return entry(t, contracts.KindToolRefused, contracts.ToolRefused{ToolCall: contracts.ToolCall{Turn: turn, Tool: policy.ToolRunReadQuery},
		Code: "repair_budget", Reason: "the run's repairs are spent"})
}

type claimText struct {
	text string
	refs []contracts.EvidenceRef
}

func said(text string, refs ...contracts.EvidenceRef) claimText { return claimText{text, refs} }

// reportAt is the report composed in turn.
func reportAt(t *testing.T, turn int, claims ...claimText) contracts.Entry {
	var cs []contracts.Claim
	for _, c := range claims {
		cs = append(cs, contracts.Claim{Text: c.text, Evidence: c.refs})
	}
	return entry(t, contracts.KindReportComposed, contracts.ReportComposed{ToolCall: contracts.ToolCall{Turn: turn, Tool: policy.ToolComposeReport}, Claims: cs})
}

func ledger(parts ...any) []contracts.Entry {
	var out []contracts.Entry
	for _, p := range parts {
		switch p := p.(type) {
		case contracts.Entry:
			out = append(out, p)
		case []contracts.Entry:
			out = append(out, p...)
		}
	}
	return out
}

// want checks a verdict's outcome and shortfall codes.
func want(t *testing.T, name string, v contracts.GoalVerdict, outcome contracts.VerdictOutcome, unmet ...string) {
	t.Helper()
	if v.Outcome != outcome || !slices.Equal(v.Unmet, append([]string{}, unmet...)) {
		t.Errorf("%s: %s %v, want %s %v (claims %+v)", name, v.Outcome, v.Unmet, outcome, unmet, v.Claims)
	}
}

// figuresOf lists a verdict's figure checks as text:status@source[how].
func figuresOf(v contracts.GoalVerdict) string {
	var out []string
	for _, c := range v.Claims {
		for _, f := range c.Figures {
			s := f.Text + ":" + string(f.Status)
			if f.Source != "" {
				s += "@" + f.Source
			}
			if f.How != "" {
				s += "[" + f.How + "]"
			}
			out = append(out, s)
		}
	}
	return strings.Join(out, " ")
}

// Item 2: a claim's figures are checked against what it cites, as shown.
func TestFiguresAreCheckedAgainstTheCitedResults(t *testing.T) {
	inv := contracts.WorkflowInvestigation
	obj := "Which genres sold best in 2013? Give the top 3."
	cases := []struct {
		name, text string
		outcome    contracts.VerdictOutcome
		unmet      []string
		figures    string
	}{
		{"the liar", "Rock sells best, with 999.99 in revenue", contracts.VerdictUnanswered, []string{UnmetFigureUnverified}, "999.99:figure-unverified"},
		{"the figure shown", "Rock sells best, with 826.65 in revenue", contracts.VerdictAnswered, nil, "826.65:found@r1"},
		{"rounded at the claim's precision", "Rock sells best, with 826.7, then Latin with 382", contracts.VerdictAnswered, nil, "826.7:found@r1 382:found@r1"},
		{"about, rounded to tens", "Rock sells best, with about 830", contracts.VerdictAnswered, nil, "830:found@r1"},
		{"a bare whole number is exact", "Rock sells best, with 830", contracts.VerdictUnanswered, []string{UnmetFigureUnverified}, "830:figure-unverified"},
		{"a difference", "Rock leads Latin by 444.51", contracts.VerdictAnswered, nil, "444.51:derived@r1[826.65 - 382.14]"},
		{"a sum", "Rock and Latin together took 1208.79", contracts.VerdictAnswered, nil, "1208.79:derived@r1[826.65 + 382.14]"},
		{"a ratio", "Rock took 2.2 times what Latin did", contracts.VerdictAnswered, nil, "2.2:derived@r1[826.65 / 382.14]"},
		{"a share", "Rock took 56% of the revenue", contracts.VerdictAnswered, nil, "56%:derived@r1[826.65 / the total of column revenue in r1 (3 rows shown) * 100]"},
		{"a percentage change", "Rock took 116% more than Latin", contracts.VerdictAnswered, nil, "116%:derived@r1[(826.65 - 382.14) / 382.14 * 100]"},
		{"the year from the statement, the count from the objective", "In 2013 the top 3 were Rock, Latin and Metal; 3 genres", contracts.VerdictAnswered, nil,
			"2013:found@r1[in the statement of r1] 3:found@r1"},
		{"identifiers and ids are no figures", "r1 (Q1, utf8, order_items2) ranks Rock first", contracts.VerdictAnswered, nil, ""},
		{"one liar among honest figures", "Rock 826.65, Latin 382.14, Metal 300.00", contracts.VerdictUnanswered, []string{UnmetFigureUnverified},
			"826.65:found@r1 382.14:found@r1 300.00:figure-unverified"},
	}
	for _, c := range cases {
		v := Verify(ledger(headed(t, inv, obj), snapshotEntry(t), genresRead(t, 1), reportAt(t, 2, said(c.text, art("r1")))), false)
		want(t, c.name, v, c.outcome, c.unmet...)
		if got := figuresOf(v); got != c.figures {
			t.Errorf("%s: figures %q, want %q", c.name, got, c.figures)
		}
		if c.figures == "" && v.Claims != nil {
			t.Errorf("%s: a claim with no figure has no check: %+v", c.name, v.Claims)
		}
	}
	// The claim is checked against its own evidence only: a figure another
	// claim's result shows does not count for it.
	r2 := readAt(t, 1, policy.ToolRunReadQuery, "r2", `{"sql":"SELECT 1"}`, fence.Wrap("rows", "n\n999.99\n"), 1)
	v := Verify(ledger(headed(t, inv, obj), genresRead(t, 1), r2,
		reportAt(t, 2, said("Rock sells best with 999.99", art("r1")), said("the other reading", art("r2")))), false)
	want(t, "a figure of another claim's evidence", v, contracts.VerdictUnanswered, UnmetFigureUnverified)
	if len(v.Claims) != 1 || v.Claims[0].Claim != 1 {
		t.Errorf("one check, for claim 1: %+v", v.Claims)
	}
	// The objective's figures count for every claim.
	v = Verify(ledger(headed(t, inv, "Which genres sold more than 500 in 2013?"), genresRead(t, 1), reportAt(t, 2, said("Only Rock sold more than 500", art("r1")))), false)
	want(t, "a figure of the objective", v, contracts.VerdictAnswered)
	if got := figuresOf(v); got != "500:found@objective[in the run's objective]" {
		t.Errorf("objective: %q", got)
	}
}

// answeringLedgers are, per workflow, a ledger its own rule answers once a
// report citing r1 (revenue per genre, read in turn 1) follows.
func answeringLedgers(t *testing.T) map[contracts.WorkflowType][]contracts.Entry {
	rows := genreRows("r1")
	return map[contracts.WorkflowType][]contracts.Entry{
		contracts.WorkflowInvestigation: ledger(genresRead(t, 1)),
		contracts.WorkflowQueryOptimization: ledger(
			readAt(t, 1, policy.ToolInspectPlan, "p1", `{"sql":"SELECT 1"}`, "Estimating plan.", 0),
			readAt(t, 1, policy.ToolInspectPlan, "p2", `{"sql":"SELECT 2"}`, "Estimating plan.", 0),
			entry(t, contracts.KindPlanComparison, contracts.PlanComparison{Before: "p1", After: "p2"}),
			readAt(t, 1, policy.ToolRunReadQuery, "r1", `{"sql":"SELECT genre"}`, rows, 3)),
		contracts.WorkflowDatabaseAssessment: ledger(readAt(t, 1, policy.ToolProfileTable, "r1", `{"table":"sales"}`, rows, 3),
			entry(t, contracts.KindTableProfiled, contracts.TableProfiled{Table: "sales", CorrelationID: "r1"})),
		contracts.WorkflowOperations: ledger(readAt(t, 1, policy.ToolInspectOperations, "r1", `{"kind":"table-stats"}`, rows, 3)),
		contracts.WorkflowDataAnalysis: ledger(genresRead(t, 1),
			entry(t, contracts.KindAnswerComposed, contracts.AnswerComposed{CorrelationID: "r1", Presentation: contracts.Presentation{Kind: contracts.PresentTable}})),
	}
}

// The integrity rules hold under every agent rule.
func TestEveryAgentRuleChecksIntegrity(t *testing.T) {
	for w, base := range answeringLedgers(t) {
		run := func(turn int, text string) contracts.GoalVerdict {
			return Verify(ledger(headed(t, w, "revenue per genre"), snapshotEntry(t), base, reportAt(t, turn, said(text, art("r1")))), false)
		}
		want(t, string(w)+": honest", run(2, "Rock sells best with 826.65"), contracts.VerdictAnswered)
		want(t, string(w)+": the liar", run(2, "Rock sells best with 999.99"), contracts.VerdictUnanswered, UnmetFigureUnverified)
		want(t, string(w)+": same turn", run(1, "Rock sells best"), contracts.VerdictUnanswered, UnmetUnseenEvidence)
		v := Verify(ledger(headed(t, w, "revenue per genre"), snapshotEntry(t), base,
			reportAt(t, 2, said("Rock sells best with 826.65", art("r1")), said("Rock is the best-selling genre", art("schema")))), false)
		want(t, string(w)+": a data claim on the schema", v, contracts.VerdictUnanswered, UnmetSchemaOnly)
	}
}

// Item 1, the verifier's side: a claim may rest only on what the model had
// been shown when it wrote it.
func TestACitationOfAResultNotYetShownIsUnseen(t *testing.T) {
	inv := contracts.WorkflowInvestigation
	h := headed(t, inv, "revenue per genre")
	// The turn: the read and the report in one turn.
	v := Verify(ledger(h, genresRead(t, 1), reportAt(t, 1, said("Rock sells best, with 999.99 in revenue", art("r1")))), false)
	want(t, "same turn", v, contracts.VerdictUnanswered, UnmetUnseenEvidence, UnmetFigureUnverified)
	// Even an honest figure is unchecked against rows the model never saw.
	v = Verify(ledger(h, genresRead(t, 1), reportAt(t, 1, said("Rock sells best, with 826.65", art("r1")))), false)
	want(t, "same turn, right figure", v, contracts.VerdictUnanswered, UnmetUnseenEvidence, UnmetFigureUnverified)
	// A result produced after the report's turn (a ledger out of order).
	v = Verify(ledger(h, genresRead(t, 3), reportAt(t, 2, said("Rock sells best", art("r1")))), false)
	want(t, "later turn", v, contracts.VerdictUnanswered, UnmetUnseenEvidence)
	// The turn after: shown.
	v = Verify(ledger(h, genresRead(t, 1), reportAt(t, 2, said("Rock sells best, with 826.65", art("r1")))), false)
	want(t, "next turn", v, contracts.VerdictAnswered)
	// A replay in the report's turn shows nothing new: the result was
	// shown when first produced.
	replayed := genresRead(t, 3)[1]
	v = Verify(ledger(h, genresRead(t, 1), replayed, reportAt(t, 3, said("Rock sells best, with 826.65", art("r1")))), false)
	want(t, "replayed in the report's turn", v, contracts.VerdictAnswered)
	// The snapshot is captured before the first turn: always shown.
	v = Verify(ledger(h, snapshotEntry(t), reportAt(t, 1, said("invoice_items references invoices through invoice_id", art("schema")))), false)
	want(t, "the snapshot in turn 1", v, contracts.VerdictAnswered)
	// A ledger from before turns were recorded is not judged by them.
	v = Verify(ledger(h, genresRead(t, 0), reportAt(t, 0, said("Rock sells best, with 826.65", art("r1")))), false)
	want(t, "no turns recorded", v, contracts.VerdictAnswered)
	// One unseen citation beside a seen one is still unseen evidence.
	r2 := readAt(t, 2, policy.ToolRunReadQuery, "r2", `{"sql":"SELECT 2"}`, fence.Wrap("rows", "n\n5\n"), 1)
	v = Verify(ledger(h, genresRead(t, 1), r2, reportAt(t, 2, said("Rock sells best", art("r1"), art("r2")))), false)
	want(t, "one of two unseen", v, contracts.VerdictUnanswered, UnmetUnseenEvidence)
}

// Item 3: the schema shows structure; a claim about data needs a reading.
func TestDataClaimsNeedAReadingOfTheData(t *testing.T) {
	inv := contracts.WorkflowInvestigation
	h := headed(t, inv, "Which genre sells best?")
	schema := art("schema")
	snap := snapshotEntry(t)
	cases := []struct {
		name, text string
		unmet      []string
	}{
		{"the issue's claim", "Rock is the best-selling genre with 826.65", []string{UnmetFigureUnverified, UnmetSchemaOnly}},
		{"data vocabulary", "Rock is the best-selling genre", []string{UnmetSchemaOnly}},
		{"a value named mid-sentence", "The best genre is Rock", []string{UnmetSchemaOnly}},
		{"a quoted value", `genres.name holds "Rock" most often`, []string{UnmetSchemaOnly}},
		{"a quoted value, no vocabulary", `genres.name holds 'Rock'`, []string{UnmetSchemaOnly}},
		{"a quoted value in lower case", `genres.name holds 'jazz fusion'`, []string{UnmetSchemaOnly}},
		{"a quoted name the schema holds", `genres has a column "name"`, nil},
		{"a figure the schema does not show", "genres holds 25 rows", []string{UnmetFigureUnverified, UnmetSchemaOnly}},
		// Structure claims still answer.
		{"a reference", "invoice_items references invoices through invoice_id", nil},
		{"names the schema holds, capitalised", "Table Invoice_items references Invoices through the column Invoice_id", nil},
		{"a figure the schema shows", "unit_price is NUMERIC(10,2)", nil},
		{"technical words", "The schema, read from SQLite, declares no index on genres", nil},
	}
	for _, c := range cases {
		v := Verify(ledger(h, snap, reportAt(t, 1, said(c.text, schema))), false)
		if c.unmet == nil {
			want(t, c.name, v, contracts.VerdictAnswered)
		} else {
			want(t, c.name, v, contracts.VerdictUnanswered, c.unmet...)
		}
	}
	// The snapshot cited by fingerprint is the same evidence.
	v := Verify(ledger(h, snap, reportAt(t, 1, said("Rock is the best-selling genre", contracts.EvidenceRef{Source: contracts.EvidenceContextSnapshot, Fingerprint: "f"}))), false)
	want(t, "by fingerprint", v, contracts.VerdictUnanswered, UnmetSchemaOnly)
	// An inspect_schema result is structure evidence too.
	desc := readAt(t, 1, policy.ToolInspectSchema, "r1", `{"table":"genres"}`, schemaText, 1)
	v = Verify(ledger(h, desc, reportAt(t, 2, said("Rock is the best-selling genre", art("r1")))), false)
	want(t, "inspect_schema", v, contracts.VerdictUnanswered, UnmetSchemaOnly)
	// A data claim citing a reading beside the schema rests on the reading.
	v = Verify(ledger(h, snap, genresRead(t, 1), reportAt(t, 2, said("Rock is the best-selling genre with 826.65", art("r1"), schema))), false)
	want(t, "reading and schema", v, contracts.VerdictAnswered)
	// Each data claim needs its reading: another claim's does not lend it.
	v = Verify(ledger(h, snap, genresRead(t, 1), reportAt(t, 2, said("Rock has 826.65", art("r1")), said("Rock is the best-selling genre", schema))), false)
	want(t, "a second claim on the schema", v, contracts.VerdictUnanswered, UnmetSchemaOnly)
}

// Item 3: a run that tried to read data and read none has not answered;
// the honest report says so and ends data-unread, not answered.
func TestAReportAfterEveryReadFailedIsDataUnread(t *testing.T) {
	h := headed(t, contracts.WorkflowInvestigation, "Which genre sells best?")
	snap, schema := snapshotEntry(t), art("schema")
	honest := said("Revenue could not be read: every query failed", schema)
	v := Verify(ledger(h, snap, failedRead(t, 1), failedRead(t, 2), reportAt(t, 3, honest)), false)
	want(t, "failed at the database", v, contracts.VerdictUnanswered, UnmetDataUnread)
	v = Verify(ledger(h, snap, failedRead(t, 1), refusedRead(t, 2), reportAt(t, 3, honest)), false)
	want(t, "failed, then refused", v, contracts.VerdictUnanswered, UnmetDataUnread)
	v = Verify(ledger(h, snap, refusedRead(t, 1), reportAt(t, 2, honest)), false)
	want(t, "refused", v, contracts.VerdictUnanswered, UnmetDataUnread)
	// Worded as structure, it still read no data it set out to read.
	v = Verify(ledger(h, snap, failedRead(t, 1), reportAt(t, 2, said("the invoices table could not be queried", schema))), false)
	want(t, "worded as structure", v, contracts.VerdictUnanswered, UnmetDataUnread)
	// A run that never tried to read data is schema-only, not data-unread.
	v = Verify(ledger(h, snap, reportAt(t, 1, honest)), false)
	want(t, "never tried", v, contracts.VerdictUnanswered, UnmetSchemaOnly)
	// Reading the schema is no data read.
	desc := readAt(t, 1, policy.ToolInspectSchema, "r1", `{"table":"genres"}`, schemaText, 1)
	v = Verify(ledger(h, snap, desc, failedRead(t, 2), reportAt(t, 3, honest)), false)
	want(t, "schema read, data failed", v, contracts.VerdictUnanswered, UnmetDataUnread)
	// A read that completed: a structure report after it answers.
	v = Verify(ledger(h, snap, failedRead(t, 1), genresRead(t, 2), reportAt(t, 3, said("invoice_items references invoices through invoice_id", schema))), false)
	want(t, "one read completed", v, contracts.VerdictAnswered)
}

// Explain has one sentence for every shortfall code, old and new.
func TestExplainSaysWhatEveryCodeLacks(t *testing.T) {
	codes := []string{UnmetNoReport, UnmetEmptyEvidence, UnmetNoPlan, UnmetNoStatement, UnmetFigureUnverified, UnmetSchemaOnly,
		UnmetDataUnread, UnmetUnseenEvidence, UnmetQuestion, UnmetPlanRefused, UnmetUnknownNames, UnmetNoPlanComparison,
		UnmetNoPlanEvidence, UnmetNoTableProfile, UnmetNoReading, UnmetNoAnswer, UnmetAnswerUncited}
	seen := map[string]bool{}
	for _, c := range codes {
		s := Explain(c)
		if s == "" || !strings.HasSuffix(s, ".") || strings.Count(s, ". ") > 0 || !strings.Contains(s, ":") {
			t.Errorf("Explain(%q) = %q: want one sentence saying what is missing: and what fixes it", c, s)
		}
		if seen[s] {
			t.Errorf("Explain(%q) repeats another code's sentence", c)
		}
		seen[s] = true
	}
	if len(explanations) != len(codes) {
		t.Errorf("%d codes explained, %d listed here: list the new code", len(explanations), len(codes))
	}
	if Explain("no-such-code") != "" {
		t.Error("an unknown code explains nothing")
	}
}
