// Package verdict decides whether a run answered: a pure fold over its ledger,
// one versioned rule per mode and workflow.
package verdict

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/figures"
	"github.com/sondehq/sonde/pkg/policy"
)

// Rule ids.
const (
	RuleInvestigation = "agent-investigation.2"
	RulePlanning      = "agent-planning.2"
)

// Shortfall codes.
const (
	UnmetNoReport      = "no-report"
	UnmetEmptyEvidence = "empty-evidence"
	// UnmetNoPlan: a planning run left no closing prose at all.
	UnmetNoPlan = "no-plan"
	// UnmetNoStatement: its prose held neither a drafted statement nor a
	// NO STATEMENT: line.
	UnmetNoStatement = "no-statement"
	// UnmetFigureUnverified: a claim states a figure found in none of the
	// results it cites, nor derived from them (GoalVerdict.Claims says which).
	UnmetFigureUnverified = "figure-unverified"
	// UnmetSchemaOnly: the report's claims about data rest only on the
	// schema snapshot, which shows structure, not data.
	UnmetSchemaOnly = "schema-only"
	// UnmetDataUnread: an honest report that the data could not be read
	// (the run's reads failed or were refused): the objective is unanswered.
	UnmetDataUnread = "data-unread"
	// UnmetUnseenEvidence: a claim cites a result the model had not been
	// shown when it wrote the claim (produced in the same turn).
	UnmetUnseenEvidence = "unseen-evidence"
	// UnmetQuestion: the model asked the user a question instead of
	// answering (StopQuestion).
	UnmetQuestion = "question-asked"
	// UnmetPlanRefused: a planning run's drafted statement is one the guard
	// refuses (a write, two statements, another dialect).
	UnmetPlanRefused = "plan-refused"
	// UnmetUnknownNames: it names tables or columns the schema snapshot
	// does not hold.
	UnmetUnknownNames = "unknown-names"
)

// Produced is the evidence a run produced: the row count of each result it
// read, by correlation id, and its context snapshot (cited by its artifact
// id, or, on ledgers recorded before that, by its fingerprint).
type Produced struct {
	Rows map[string]int
	// Tools names the tool that produced each result, by correlation id.
	Tools map[string]string
	// Turns is the turn each result was first produced in (its
	// ToolCompleted's Turn): the model is shown a result on the turn after.
	// 0 on ledgers recorded before turns were.
	Turns map[string]int
	// Contents is what the model read of each result, as first shown (cut
	// to its show budget when it was: only what was shown counts).
	Contents map[string]string
	// Statements are the arguments each result's step was invoked with,
	// as the model sent them.
	Statements  map[string]string
	Fingerprint string
	// Snapshot is the schema snapshot's citable id; a snapshot is evidence
	// about structure and never empty evidence.
	Snapshot string
	// SnapshotText is the snapshot as the model read it.
	SnapshotText string
}

// ProducedBy folds what entries produced.
func ProducedBy(entries []contracts.Entry) Produced {
	p := Produced{Rows: map[string]int{}, Tools: map[string]string{}, Turns: map[string]int{},
		Contents: map[string]string{}, Statements: map[string]string{}}
	for _, e := range entries {
		v, err := e.Decode()
		if err != nil {
			continue
		}
		switch v := v.(type) {
		case *contracts.ToolInvoked:
			if v.CorrelationID != "" {
				p.Statements[v.CorrelationID] = string(v.Arguments)
			}
		case *contracts.ToolCompleted:
			if v.Outcome != contracts.OutcomeOK || v.Artifact == nil {
				continue
			}
			cid := v.Artifact.CorrelationID
			if _, again := p.Rows[cid]; again {
				continue // a replay shows the model what it was shown first, later
			}
			p.Rows[cid] = v.Artifact.Rows
			p.Tools[cid] = v.Tool
			p.Turns[cid] = v.Turn
			p.Contents[cid] = v.Content
		case *contracts.ContextCaptured:
			p.Fingerprint = v.Fingerprint
			p.Snapshot = v.CorrelationID
			p.SnapshotText = v.Text
		}
	}
	return p
}

// Resolves reports whether ref cites something the run produced.
func (p Produced) Resolves(ref contracts.EvidenceRef) bool {
	switch ref.Source {
	case contracts.EvidenceArtifact:
		if p.Snapshot != "" && ref.CorrelationID == p.Snapshot {
			return true
		}
		_, ok := p.Rows[ref.CorrelationID]
		return ok
	case contracts.EvidenceContextSnapshot:
		return p.Fingerprint != "" && ref.Fingerprint == p.Fingerprint
	}
	return false
}

// Seen reports whether the model had been shown what ref cites when it
// wrote turn: the snapshot (captured before the first turn) always, a
// result produced in an earlier turn. A result produced in turn itself was
// read by the server after the model wrote the claim. turn 0 (a ledger from
// before turns were recorded) sees everything.
func (p Produced) Seen(ref contracts.EvidenceRef, turn int) bool {
	if p.isSnapshot(ref) {
		return true
	}
	t, ok := p.Turns[ref.CorrelationID]
	return ok && (turn == 0 || t < turn)
}

// isSnapshot reports whether ref cites the schema snapshot.
func (p Produced) isSnapshot(ref contracts.EvidenceRef) bool {
	switch ref.Source {
	case contracts.EvidenceArtifact:
		return p.Snapshot != "" && ref.CorrelationID == p.Snapshot
	case contracts.EvidenceContextSnapshot:
		return p.Fingerprint != "" && ref.Fingerprint == p.Fingerprint
	}
	return false
}

// structure reports whether ref cites evidence about structure only: the
// schema snapshot or an inspect_schema result.
func (p Produced) structure(ref contracts.EvidenceRef) bool {
	return p.isSnapshot(ref) || p.Tools[ref.CorrelationID] == policy.ToolInspectSchema
}

// evidence is what the model was shown of ref, for the figure check: the
// result's content (or the snapshot's text) and, as literals, the
// statement that produced it.
func (p Produced) evidence(ref contracts.EvidenceRef) []figures.Evidence {
	if p.isSnapshot(ref) {
		id := p.Snapshot
		if id == "" {
			id = string(contracts.EvidenceContextSnapshot)
		}
		return []figures.Evidence{{ID: id, Text: p.SnapshotText, Rows: -1}}
	}
	cid := ref.CorrelationID
	out := []figures.Evidence{{ID: cid, Text: p.Contents[cid], Rows: p.Rows[cid]}}
	if st := statementText(p.Statements[cid]); st != "" {
		out = append(out, figures.Evidence{ID: cid, Text: st, Rows: -1, Literal: true, How: "in the statement of " + cid})
	}
	return out
}

// statementText is the text of a step's arguments: their string and number
// values, unescaped, so "LIMIT\n5" is read as the model wrote it.
func statementText(raw string) string {
	var v any
	if raw == "" || json.Unmarshal([]byte(raw), &v) != nil {
		return raw
	}
	var b strings.Builder
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case string:
			b.WriteString(v)
			b.WriteByte('\n')
		case float64:
			b.WriteString(strconv.FormatFloat(v, 'f', -1, 64))
			b.WriteByte('\n')
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				walk(v[k])
			}
		}
	}
	walk(v)
	return b.String()
}

// ids are the run's citation ids, which a claim may name and which are
// never figures.
func (p Produced) ids() []string {
	out := []string{p.Snapshot, p.Fingerprint}
	for cid := range p.Rows {
		out = append(out, cid)
	}
	slices.Sort(out)
	return out
}

// Verify judges a run from its entries. A cancelled run is judged cancelled:
// a stop is not a defect of the run.
func Verify(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	var h contracts.RunStarted
	if len(entries) > 0 && entries[0].Kind == contracts.KindRunStarted {
		if p, err := entries[0].Decode(); err == nil {
			h = *p.(*contracts.RunStarted)
		}
	}
	if h.Mode == contracts.ModePlanning {
		return verifyPlan(h, entries, cancelled)
	}
	// The rule is the one the workflow's row names; a header from before
	// workflows (none recorded) is an investigation.
	judge, ok := agentRules[policy.Workflows[h.WorkflowType].AgentRule]
	if !ok {
		judge = verifyInvestigation
	}
	return integrity(h, entries, judge(entries, cancelled))
}

// agentRules are the agent-mode rules by id; every workflow row's AgentRule
// names one (a test holds the table to that).
var agentRules = map[string]func([]contracts.Entry, bool) contracts.GoalVerdict{
	RuleInvestigation:      verifyInvestigation,
	RuleQueryOptimization:  verifyQueryOptimization,
	RuleDatabaseAssessment: verifyDatabaseAssessment,
	RuleOperations:         verifyOperations,
	RuleDataAnalysis:       verifyDataAnalysis,
}

// Known reports whether id names a rule this package judges by.
func Known(id string) bool {
	_, ok := agentRules[id]
	return ok || id == RulePlanning
}

// verifyInvestigation is agent-investigation.2: the run composed at least
// one claim, and its claims do not rest entirely on empty results.
func verifyInvestigation(entries []contracts.Entry, cancelled bool) contracts.GoalVerdict {
	return baseline(RuleInvestigation, entries, cancelled, nil)
}

// baseline judges the investigation rule under the id rule. exempt, when
// set, names results whose row count measures nothing (a plan): citing one
// is neither empty nor full evidence.
func baseline(rule string, entries []contracts.Entry, cancelled bool, exempt func(corr string) bool) contracts.GoalVerdict {
	v := contracts.GoalVerdict{Rule: rule, Unmet: []string{}}
	if cancelled {
		v.Outcome = contracts.VerdictCancelled
		return v
	}
	claims := reportOf(entries)
	if len(claims) == 0 {
		v.Outcome = contracts.VerdictUnanswered
		v.Unmet = append(v.Unmet, UnmetNoReport)
		return v
	}
	// The claims must not rest entirely on empty results. A citation the
	// ledger cannot resolve is skipped rather than assumed empty; the
	// context snapshot is never empty evidence.
	produced := ProducedBy(entries)
	cited, empty := 0, 0
	for _, c := range claims {
		for _, ref := range c.Evidence {
			if !produced.Resolves(ref) {
				continue
			}
			if ref.Source == contracts.EvidenceArtifact && exempt != nil && exempt(ref.CorrelationID) {
				continue
			}
			cited++
			if ref.Source == contracts.EvidenceArtifact && ref.CorrelationID != produced.Snapshot && produced.Rows[ref.CorrelationID] == 0 {
				empty++
			}
		}
	}
	if cited > 0 && cited == empty {
		v.Outcome = contracts.VerdictUnanswered
		v.Unmet = append(v.Unmet, UnmetEmptyEvidence)
		return v
	}
	v.Outcome = contracts.VerdictAnswered
	return v
}

// reportOf returns the claims of the run's report, if it composed one.
func reportOf(entries []contracts.Entry) []contracts.Claim {
	r, _ := lastReport(entries)
	return r.Claims
}

// lastReport returns the run's report and whether it composed one.
func lastReport(entries []contracts.Entry) (contracts.ReportComposed, bool) {
	var r contracts.ReportComposed
	ok := false
	for _, e := range entries {
		if e.Kind != contracts.KindReportComposed {
			continue
		}
		if p, err := e.Decode(); err == nil {
			r, ok = *p.(*contracts.ReportComposed), true
		}
	}
	return r, ok
}

// dataTools are the tools whose results are readings of the data (or of
// the engine): every tool that produces a result but inspect_schema.
var dataTools = []string{policy.ToolRunReadQuery, policy.ToolInspectPlan, policy.ToolProfileTable, policy.ToolInspectOperations}

// integrity applies the answer-integrity rules every agent rule shares, on
// top of the rule's own verdict: each claim rests on what the model had
// been shown (unseen-evidence), its figures are in that evidence or derived
// from it (figure-unverified), and a claim about the data rests on a
// reading of the data, not on structure alone (schema-only, or data-unread
// when the run tried to read data and read none). It also records the
// figure check of every claim that states figures, whatever the outcome.
func integrity(h contracts.RunStarted, entries []contracts.Entry, v contracts.GoalVerdict) contracts.GoalVerdict {
	if v.Outcome == contracts.VerdictCancelled {
		return v
	}
	rep, ok := lastReport(entries)
	if !ok || len(rep.Claims) == 0 {
		return v
	}
	p := ProducedBy(entries)
	skip := p.ids()
	objective := figures.Evidence{ID: "objective", Text: h.Objective, Rows: -1, Literal: true, How: "in the run's objective"}
	unseen, unverified, dataOnStructure := false, false, false
	anyCited, allStructure := false, true
	for i, c := range rep.Claims {
		var ev []figures.Evidence
		var structText []string
		cited, structureOnly := 0, true
		for _, ref := range c.Evidence {
			if !p.Resolves(ref) {
				continue
			}
			if !p.Seen(ref, rep.Turn) {
				unseen = true // and what it holds is no evidence for this claim
				continue
			}
			cited++
			shown := p.evidence(ref)
			ev = append(ev, shown...)
			if p.structure(ref) {
				structText = append(structText, shown[0].Text)
			} else {
				structureOnly = false
			}
		}
		ev = append(ev, objective)
		checks := figures.Check(c.Text, ev, skip)
		claimUnverified := false
		for _, f := range checks {
			claimUnverified = claimUnverified || f.Status == contracts.FigureUnverified
		}
		unverified = unverified || claimUnverified
		if len(checks) > 0 {
			v.Claims = append(v.Claims, contracts.ClaimCheck{Claim: i + 1, Figures: checks})
		}
		if cited == 0 {
			continue
		}
		anyCited = true
		if !structureOnly {
			allStructure = false
			continue
		}
		dataOnStructure = dataOnStructure || claimUnverified || aboutData(c.Text, strings.Join(structText, "\n")+"\n"+h.Objective)
	}
	add := func(code string) {
		if !slices.Contains(v.Unmet, code) {
			v.Outcome, v.Unmet = contracts.VerdictUnanswered, append(v.Unmet, code)
		}
	}
	if unseen {
		add(UnmetUnseenEvidence)
	}
	if unverified {
		add(UnmetFigureUnverified)
	}
	attempted, read := readAttempts(entries)
	switch {
	case attempted && !read && (dataOnStructure || anyCited && allStructure):
		// The run judged the objective to need data, and read none: an
		// honest "could not be read" is not an answer.
		add(UnmetDataUnread)
	case dataOnStructure && !slices.Contains(v.Unmet, UnmetNoReading):
		// (no-reading already says an operations report read nothing.)
		add(UnmetSchemaOnly)
	}
	return v
}

// readAttempts reports whether the run tried to read data (called a data
// tool, whatever became of the call) and whether any such read completed
// with a result.
func readAttempts(entries []contracts.Entry) (attempted, read bool) {
	for _, e := range entries {
		switch e.Kind {
		case contracts.KindToolInvoked, contracts.KindToolRefused, contracts.KindToolCompleted:
		default:
			continue
		}
		var tc struct {
			Tool     string                     `json:"tool"`
			Outcome  contracts.StepOutcome      `json:"outcome"`
			Artifact *contracts.ArtifactSummary `json:"artifact"`
		}
		if json.Unmarshal(e.Data, &tc) != nil {
			continue
		}
		attempted = attempted || slices.Contains(dataTools, tc.Tool)
		if e.Kind == contracts.KindToolCompleted && tc.Outcome == contracts.OutcomeOK && tc.Artifact != nil && tc.Tool != policy.ToolInspectSchema {
			read = true
		}
	}
	return attempted, read
}

// dataWords are words that speak of the data's contents, not its shape.
var dataWords = []string{"sell", "sells", "sold", "selling", "sale", "sales", "best-selling", "bestselling", "top-selling",
	"revenue", "revenues", "most", "top", "total", "totals", "average", "averages", "fell", "rose", "increased",
	"decreased", "grew", "declined", "trend", "trends"}

// technical are capitalised words a claim about structure uses that no
// schema needs to hold.
var technical = []string{"sql", "sqlite", "postgresql", "postgres", "duckdb", "mysql", "server", "microsoft", "null",
	"id", "ids", "pk", "fk", "utc", "iso", "json", "csv", "i", "a", "an", "the", "it", "this", "each", "every", "no", "one"}

// aboutData reports whether a claim citing only structure evidence speaks
// of the data: it uses data vocabulary, or names a value (a quoted string,
// or a capitalised word not at a sentence's start) that names nothing in
// known (the structure evidence and the objective). A claim stating a
// figure that evidence does not hold is caught before this, by its check.
func aboutData(text, known string) bool {
	known = strings.ToLower(known)
	names := func(w string) bool {
		w = strings.ToLower(strings.Trim(w, ".,;:!?()[]{}\"'`’“”"))
		if w == "" || slices.Contains(technical, w) || strings.Contains(known, w) {
			return true
		}
		for _, suffix := range []string{"es", "s", "'s", "’s"} {
			if stem, ok := strings.CutSuffix(w, suffix); ok && stem != "" && strings.Contains(known, stem) {
				return true
			}
		}
		return false
	}
	for _, q := range quoted(text) {
		if !names(q) {
			return true
		}
	}
	start := true
	for _, w := range strings.Fields(text) {
		bare := strings.ToLower(strings.Trim(w, ".,;:!?()[]{}\"'`’“”"))
		if slices.Contains(dataWords, bare) {
			return true
		}
		r := []rune(strings.TrimLeft(w, "(\"'`“‘["))
		if !start && len(r) > 0 && r[0] >= 'A' && r[0] <= 'Z' && !names(w) {
			return true
		}
		start = strings.ContainsAny(w[len(w)-1:], ".!?:")
	}
	return false
}

// quoted returns the quoted strings of text: "…", '…', “…”, `…`. A single
// quote inside a word (an apostrophe) opens nothing.
func quoted(text string) []string {
	var out []string
	rs := []rune(text)
	for i := 0; i < len(rs); i++ {
		closer, ok := map[rune]rune{'"': '"', '\'': '\'', '“': '”', '`': '`', '‘': '’'}[rs[i]]
		if !ok || i > 0 && isLetter(rs[i-1]) {
			continue
		}
		for j := i + 1; j < len(rs); j++ {
			if rs[j] == closer && (j+1 == len(rs) || !isLetter(rs[j+1])) {
				out = append(out, string(rs[i+1:j]))
				i = j
				break
			}
		}
	}
	return out
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// Explain says, in one sentence, what a shortfall code means is missing
// and what supplies it: the words a refusal or a surface shows beside the
// code. An unknown code explains nothing ("").
func Explain(code string) string {
	return explanations[code]
}

var explanations = map[string]string{
	UnmetNoReport:      "The run composed no report: call compose_report with claims that cite the results the run read.",
	UnmetEmptyEvidence: "Every claim rests on results that returned no rows: read something that holds the answer, or say plainly that nothing matched, citing a result that shows it.",
	UnmetNoPlan:        "The planning run left no plan: write the plan as the closing text.",
	UnmetNoStatement:   "The plan holds neither a drafted statement nor a NO STATEMENT: line: draft the statement in one fenced sql block, or say NO STATEMENT: and why.",
	UnmetFigureUnverified: "A claim states a figure found in none of the results it cites, nor derived from them: " +
		"state the figure as the cited result shows it (or round it), or cite the result that shows it.",
	UnmetSchemaOnly: "A claim about the data cites only the schema, which shows structure, not data: " +
		"read the data with a query and cite that result.",
	UnmetDataUnread: "The run tried to read the data and every read failed or was refused, so the question is not answered: " +
		"fix the statement and read again, or the report stands as saying the data could not be read.",
	UnmetUnseenEvidence: "A claim cites a result produced in the same turn as the report, which the model had not yet seen: " +
		"read the result first, then compose the report in a later turn.",
	UnmetQuestion: "The model asked a question instead of answering: answer it by continuing the conversation.",
	UnmetPlanRefused: "The drafted statement is one the guard refuses (a write, two statements, another dialect): " +
		"draft a single read-only statement for this engine.",
	UnmetUnknownNames: "The drafted statement names tables or columns the schema does not hold: use the names the schema shows.",
	UnmetNoPlanComparison: "The optimization compared no plans and recommended no index: compare the plans before and after a change, " +
		"recommend an index citing the plan it fixes, or report that the plan needs no change, citing the plan read.",
	UnmetNoPlanEvidence: "An index is recommended without citing a plan the run read: read the statement's plan with inspect_plan and cite it.",
	UnmetNoTableProfile: "The assessment profiled no table: profile the tables it speaks of with profile_table.",
	UnmetNoReading:      "The operations report cites no reading the run took: take a reading with inspect_operations and cite it.",
	UnmetNoAnswer:       "The analysis presented no answer: present the result that answers with present_answer.",
	UnmetAnswerUncited:  "The report cites nothing of the presented result: cite the presented result in at least one claim.",
}
