package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/pkg/verdict"
	"github.com/sondehq/sonde/services/gateway/api"
)

// Bounds of the tools' arguments and answers.
const (
	// MaxWaitSeconds bounds how long get_run waits for a run to finish.
	MaxWaitSeconds = 120
	// DefaultCitedRows and MaxCitedRows bound the rows get_run shows of each
	// cited result.
	DefaultCitedRows = 5
	MaxCitedRows     = 50
	// MaxCitations bounds the cited results get_run reads back; further
	// citations are listed without their rows.
	MaxCitations = 20
)

type connectionIn struct {
	ConnectionID string `json:"connection_id" jsonschema:"a connection id from list_connections, e.g. demo"`
}

type listTablesIn struct {
	connectionIn
	Pattern string `json:"pattern,omitempty" jsonschema:"only relations whose name matches: * any run of characters, ? one character, case-insensitive; leave out for all"`
	After   string `json:"after,omitempty" jsonschema:"continue a listing: the next value of the previous page; leave out for the first page"`
}

type describeTableIn struct {
	connectionIn
	Table string `json:"table" jsonschema:"the relation, as name or schema.name, from list_tables"`
}

type runQueryIn struct {
	connectionIn
	SQL       string `json:"sql" jsonschema:"one read-only SELECT (or WITH … SELECT) statement; anything that could write or change the session is refused"`
	Limit     int    `json:"limit,omitempty" jsonschema:"rows to return, 1 to 1000; 200 when left out. Further rows are cut and the answer says truncated_by rows"`
	TimeoutMs int64  `json:"timeout_ms,omitempty" jsonschema:"statement timeout in milliseconds, 1 to 10000; 5000 when left out"`
	Params    []any  `json:"params,omitempty" jsonschema:"values bound to the statement's placeholders (?, ?NNN on SQLite; $1… on PostgreSQL), never spliced into it: null, booleans, numbers, strings"`
}

type explainIn struct {
	connectionIn
	SQL string `json:"sql" jsonschema:"the statement to plan; it is guarded like run_query and never executed"`
}

type startIn struct {
	connectionIn
	Objective     string `json:"objective" jsonschema:"what you want to know about the data, in a sentence or two"`
	Workflow      string `json:"workflow,omitempty"` // described from the workflow table (workflowDescription)
	Mode          string `json:"mode,omitempty" jsonschema:"agent (default: the model reads the database) or planning (the model drafts a statement without running it)"`
	PreviousRunID string `json:"previous_run_id,omitempty" jsonschema:"continue the conversation of an earlier run of yours"`
}

type getRunIn struct {
	RunID       string `json:"run_id" jsonschema:"the run_id start_investigation returned"`
	WaitSeconds int    `json:"wait_seconds,omitempty" jsonschema:"wait up to this many seconds (0 to 120) for the run to finish before answering; 0 answers at once"`
	CitedRows   *int   `json:"cited_rows,omitempty" jsonschema:"rows to show of each cited result, 0 to 50; 5 when left out"`
}

// workflowDescription describes start_investigation's workflow argument
// from the workflow table (pkg/policy), never a copy of it.
func workflowDescription(s *jsonschema.Schema) {
	if p, ok := s.Properties["workflow"]; ok {
		p.Description = policy.List(func(w contracts.WorkflowType) string {
			if w == contracts.WorkflowInvestigation {
				return string(w) + " (default)"
			}
			return string(w)
		}, " or ")
	}
}

// bound sets an integer property's inclusive range in a schema.
func bound(prop string, lo, hi float64) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		if p, ok := s.Properties[prop]; ok {
			p.Minimum, p.Maximum = &lo, &hi
		}
	}
}

func all(fs ...func(*jsonschema.Schema)) func(*jsonschema.Schema) {
	return func(s *jsonschema.Schema) {
		for _, f := range fs {
			f(s)
		}
	}
}

func readOnly(title string) *mcp.ToolAnnotations {
	f := false
	return &mcp.ToolAnnotations{Title: title, ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &f, OpenWorldHint: &f}
}

func (t *tools) register(s *mcp.Server) {
	addTool(t, s, &mcp.Tool{
		Name:        "list_connections",
		Description: "List the database connections Sonde serves: id, engine, description, whether the database can be read now (and why not), and the operator's warnings.",
		Annotations: readOnly("List connections"),
	}, nil, func(ctx context.Context, b Backend, _ struct{}) (any, error) {
		conns, err := b.Connections(ctx)
		if err != nil {
			return nil, err
		}
		if conns == nil {
			conns = []contracts.ConnectionDescriptor{}
		}
		return map[string]any{"connections": conns}, nil
	})

	addTool(t, s, &mcp.Tool{
		Name: "list_tables",
		Description: fmt.Sprintf("List one page (at most %d) of a connection's readable relations, in schema and name order, optionally filtered by a name pattern. "+
			"Relations outside the connection's readable patterns are counted in unreadable, never named. When next is set, call again with after=next for the following page."+fencedNote, api.TablesPageSize),
		Annotations: readOnly("List tables"),
	}, nil, func(ctx context.Context, b Backend, in listTablesIn) (any, error) {
		if err := in.check(); err != nil {
			return nil, err
		}
		r, err := b.Tables(ctx, in.ConnectionID, in.Pattern, in.After)
		if err != nil {
			return nil, err
		}
		if r.Tables == nil {
			r.Tables = []api.TableEntry{}
		}
		lead := fmt.Sprintf("%d of %d readable %s of connection %s", len(r.Tables), r.Total, plural(r.Total, "relation"), in.ConnectionID)
		if r.Next != "" {
			lead += "; more follow: call again with after set to next"
		}
		return fencedAnswer("relations listed from connection "+in.ConnectionID, lead+".",
			tablesOut{ConnectionID: r.ConnectionID, Tables: r.Tables, Total: r.Total, Unreadable: r.Unreadable, Next: r.Next, Truncated: r.Truncated}), nil
	})

	addTool(t, s, &mcp.Tool{
		Name:        "describe_table",
		Description: "Describe one readable relation in full: columns with types and nullability, primary key, unique constraints, foreign keys, indexes, the engine's statistics and its definition." + fencedNote,
		Annotations: readOnly("Describe a table"),
	}, nil, func(ctx context.Context, b Backend, in describeTableIn) (any, error) {
		if err := in.check(); err != nil {
			return nil, err
		}
		if strings.TrimSpace(in.Table) == "" {
			return nil, invalid("table is empty", "name a relation from list_tables, as name or schema.name")
		}
		r, err := b.DescribeTable(ctx, in.ConnectionID, in.Table)
		if err != nil {
			return nil, err
		}
		return fencedAnswer("relation described from connection "+in.ConnectionID,
			fmt.Sprintf("Description of a relation of connection %s, %s.", in.ConnectionID, plural(len(r.Relation.Columns), "column")),
			map[string]any{"connection_id": r.ConnectionID, "relation": r.Relation}), nil
	})

	addTool(t, s, &mcp.Tool{
		Name: "run_query",
		Description: "Run one read-only SELECT on a connection under Sonde's inspect profile: the statement is parsed and checked by the guard before it reaches the database, " +
			"runs on a read-only connection, and its answer is bounded (limit rows, at most 1000; 1 MB). A cut answer says truncated: true and truncated_by (rows, answer_characters). " +
			"A statement that could write, change the session or reach outside the readable relations is refused with a code, a reason and a fix." + fencedNote,
		Annotations: readOnly("Run a read-only query"),
	}, all(bound("limit", 1, api.QueryMaxLimit), bound("timeout_ms", 1, api.QueryMaxTimeoutMs)), func(ctx context.Context, b Backend, in runQueryIn) (any, error) {
		if err := in.check(); err != nil {
			return nil, err
		}
		params, err := plainParams(in.Params)
		if err != nil {
			return nil, err
		}
		r, err := b.Query(ctx, api.QueryRequest{ConnectionID: in.ConnectionID, SQL: in.SQL, Limit: in.Limit, TimeoutMs: in.TimeoutMs, Params: params})
		if err != nil {
			return nil, err
		}
		if r.Rows == nil {
			r.Rows = [][]any{}
		}
		lead := fmt.Sprintf("Result of the read on connection %s: %s, %s", in.ConnectionID, plural(r.RowCount, "row"), plural(len(r.Columns), "column"))
		if r.Truncated {
			lead += fmt.Sprintf(" (truncated by %s: the statement returned more)", strings.Join(r.TruncatedBy, ", "))
		}
		return fencedAnswer("rows read from connection "+in.ConnectionID, lead+".",
			queryOut{ConnectionID: in.ConnectionID, Columns: r.Columns, Rows: r.Rows, RowCount: r.RowCount,
				Truncated: r.Truncated, TruncatedBy: r.TruncatedBy, DurationMs: r.DurationMs}), nil
	})

	addTool(t, s, &mcp.Tool{
		Name: "explain_query",
		Description: "Return the estimating plan of a statement without running it (never EXPLAIN ANALYZE): how each relation is read (full scan or index), " +
			"the engine's cost and row estimates where it makes them, and the plan rows as the engine printed them. The statement is guarded exactly like run_query." + fencedNote,
		Annotations: readOnly("Explain a query"),
	}, nil, func(ctx context.Context, b Backend, in explainIn) (any, error) {
		if err := in.check(); err != nil {
			return nil, err
		}
		r, err := b.Explain(ctx, api.ExplainRequest{ConnectionID: in.ConnectionID, SQL: in.SQL})
		if err != nil {
			return nil, err
		}
		return fencedAnswer("plan read from connection "+in.ConnectionID,
			fmt.Sprintf("Estimating plan on connection %s (the statement was not run).", in.ConnectionID),
			map[string]any{"connection_id": r.ConnectionID, "sql": r.SQL, "plan": r.Plan, "columns": r.Columns, "rows": r.Rows}), nil
	})

	f := false
	addTool(t, s, &mcp.Tool{
		Name: "start_investigation",
		Description: "Hand a whole investigation to Sonde: its own model reads the database through the same guard, every step recorded in an audited ledger, " +
			"and its report cites the results each claim rests on. Returns the run_id at once; read the outcome with get_run (wait_seconds waits for it).",
		Annotations: &mcp.ToolAnnotations{Title: "Start an investigation", ReadOnlyHint: false, DestructiveHint: &f, OpenWorldHint: &f},
	}, workflowDescription, func(ctx context.Context, b Backend, in startIn) (any, error) {
		if err := in.check(); err != nil {
			return nil, err
		}
		if strings.TrimSpace(in.Objective) == "" {
			return nil, invalid("objective is empty", "say what you want to know, e.g. \"which customers ordered most last month\"")
		}
		if in.PreviousRunID != "" {
			if err := contracts.CheckID(contracts.IDRun, in.PreviousRunID); err != nil {
				return nil, err
			}
		}
		r, err := b.StartRun(ctx, api.StartRunRequest{Mode: contracts.Mode(in.Mode), WorkflowType: contracts.WorkflowType(in.Workflow),
			Objective: in.Objective, ConnectionID: in.ConnectionID, PreviousRunID: in.PreviousRunID})
		if err != nil {
			return nil, err
		}
		return map[string]any{"run_id": r.RunID, "mode": r.Mode, "workflow": r.WorkflowType,
			"next": fmt.Sprintf("call get_run with run_id %q and wait_seconds up to %d", r.RunID, MaxWaitSeconds)}, nil
	})

	addTool(t, s, &mcp.Tool{
		Name: "get_run",
		Description: "Read a run: its status and why it stopped (stop_reason, in words in stopped), the verifier's verdict (unmet: each shortfall code with its meaning), " +
			"and its report: each claim with its citations and the verifier's check of each figure it states (figures: found in a cited result, derived from cited values, " +
			"or figure-unverified), each citation with the statement that produced the cited result and its first rows. A run that stopped on a question to the user " +
			"(stop_reason question-asked) carries the question and answer_with, the start_investigation call that answers it by continuing the conversation. " +
			"wait_seconds waits (at most 120) for a running run to finish; finished says whether it has." + fencedNote +
			" The report and the question are fenced too: Sonde's model wrote them.",
		Annotations: readOnly("Read a run"),
	}, all(bound("wait_seconds", 0, MaxWaitSeconds), bound("cited_rows", 0, MaxCitedRows)), func(ctx context.Context, b Backend, in getRunIn) (any, error) {
		if strings.TrimSpace(in.RunID) == "" {
			return nil, invalid("run_id is empty", "pass the run_id start_investigation returned")
		}
		if err := contracts.CheckID(contracts.IDRun, in.RunID); err != nil {
			return nil, err
		}
		if in.WaitSeconds < 0 || in.WaitSeconds > MaxWaitSeconds {
			return nil, invalid(fmt.Sprintf("wait_seconds %d is outside 0 to %d", in.WaitSeconds, MaxWaitSeconds),
				fmt.Sprintf("wait at most %d s per call, and call again while finished is false", MaxWaitSeconds))
		}
		rows := DefaultCitedRows
		if in.CitedRows != nil {
			rows = *in.CitedRows
		}
		if rows < 0 || rows > MaxCitedRows {
			return nil, invalid(fmt.Sprintf("cited_rows %d is outside 0 to %d", rows, MaxCitedRows), "ask for fewer rows per citation")
		}
		rec, err := waitRun(ctx, b, in.RunID, time.Duration(in.WaitSeconds)*time.Second)
		if err != nil {
			return nil, err
		}
		out := runReport(ctx, b, rec, rows)
		return fencedAnswer("report of run "+out.RunID+" and the rows it cites", runLead(out), out), nil
	})
}

// runLead is the line get_run's text opens with, in the server's words only:
// the question itself is model text and stays inside the fence.
func runLead(out runOut) string {
	lead := fmt.Sprintf("Run %s: %s, finished %v, %s.", out.RunID, out.Status, out.Finished, plural(len(out.Report), "claim"))
	if out.Verdict != nil {
		lead += fmt.Sprintf(" Verdict: %s.", out.Verdict.Outcome)
	}
	unverified := 0
	for _, c := range out.Report {
		for _, f := range c.Figures {
			if f.Status == contracts.FigureUnverified {
				unverified++
			}
		}
	}
	if unverified > 0 {
		lead += fmt.Sprintf(" %s found in none of the results its claim cites (figure-unverified).", plural(unverified, "figure"))
	}
	if out.StopReason == contracts.StopQuestion {
		lead += fmt.Sprintf(" The run stopped on a question to the user (field question): ask the user it, then call start_investigation with previous_run_id %q and their answer as objective (field answer_with).", out.RunID)
	}
	return lead
}

// check validates the connection id at the edge, by the one rule for ids
// (contracts.CheckID), before it can reach a subject or a key.
func (c connectionIn) check() error {
	if strings.TrimSpace(c.ConnectionID) == "" {
		return invalid("connection_id is empty", "pass an id from list_connections")
	}
	return contracts.CheckID(contracts.IDConnection, c.ConnectionID)
}

// plainParams turns decoded parameters (numbers arrive as json.Number) back
// into the plain JSON values the API takes, refusing arrays and objects.
func plainParams(ps []any) ([]any, error) {
	out := make([]any, 0, len(ps))
	for i, p := range ps {
		switch v := p.(type) {
		case nil, bool, string:
			out = append(out, v)
		case json.Number:
			out = append(out, v) // encoded again as the number it was sent as
		default:
			return nil, invalid(fmt.Sprintf("params[%d] is a JSON %T, not a scalar", i, p), "send null, a boolean, a number or a string for each placeholder")
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, nil
}

type tablesOut struct {
	ConnectionID string           `json:"connection_id"`
	Tables       []api.TableEntry `json:"tables"`
	Total        int              `json:"total"`
	Unreadable   int              `json:"unreadable"`
	Next         string           `json:"next,omitempty"`
	Truncated    bool             `json:"truncated,omitempty"`
}

type queryOut struct {
	ConnectionID string             `json:"connection_id"`
	Columns      []contracts.Column `json:"columns"`
	Rows         [][]any            `json:"rows"`
	RowCount     int                `json:"row_count"`
	// Truncated says rows were left out, TruncatedBy why: rows (the limit)
	// or answer_characters (the 1 MB bound).
	Truncated   bool     `json:"truncated"`
	TruncatedBy []string `json:"truncated_by,omitempty"`
	DurationMs  int64    `json:"duration_ms"`
}

// waitRun reads a run, polling until it has finished or wait has passed.
func waitRun(ctx context.Context, b Backend, id string, wait time.Duration) (contracts.Record, error) {
	deadline := time.Now().Add(wait)
	pause := 200 * time.Millisecond
	for {
		rec, err := b.Run(ctx, id)
		if err != nil || rec.Status.Terminal() || !time.Now().Before(deadline) {
			return rec, err
		}
		d := min(pause, time.Until(deadline))
		select {
		case <-ctx.Done():
			return rec, nil // the caller went away: what we have
		case <-time.After(d):
		}
		pause = min(pause*2, 2*time.Second)
	}
}

type runOut struct {
	RunID        string                 `json:"run_id"`
	Status       contracts.RunStatus    `json:"status"`
	Finished     bool                   `json:"finished"`
	Mode         contracts.Mode         `json:"mode"`
	Workflow     contracts.WorkflowType `json:"workflow"`
	Objective    string                 `json:"objective"`
	ConnectionID string                 `json:"connection_id"`
	StopReason   contracts.StopReason   `json:"stop_reason,omitempty"`
	// Stopped says the stop reason in words.
	Stopped string                  `json:"stopped,omitempty"`
	Reason  contracts.FailureReason `json:"reason,omitempty"`
	Detail  string                  `json:"detail,omitempty"`
	Verdict *contracts.GoalVerdict  `json:"verdict,omitempty"`
	// Unmet is each of the verdict's shortfall codes with what it means.
	Unmet []unmetOut `json:"unmet,omitempty"`
	// Question is what Sonde's model asked the user when the run stopped on
	// a question (stop_reason question-asked), as the model wrote it;
	// AnswerWith is the call that answers it.
	Question   string         `json:"question,omitempty"`
	AnswerWith *answerWithOut `json:"answer_with,omitempty"`
	Report     []claimOut     `json:"report"`
	// Closing is the model's last prose (a planning run's whole answer).
	Closing string                          `json:"closing,omitempty"`
	Plan    *contracts.PlanStatementDrafted `json:"plan,omitempty"`
	Steps   int                             `json:"steps"`
	Spent   contracts.BudgetSpent           `json:"spent"`
	Model   string                          `json:"model,omitempty"`
	Demo    bool                            `json:"demo,omitempty"`
	Started time.Time                       `json:"started_at"`
	Ended   *time.Time                      `json:"finished_at,omitempty"`
}

type claimOut struct {
	Text      string        `json:"text"`
	Citations []citationOut `json:"citations"`
	// Figures is the verifier's check of each figure the claim states
	// (found in a cited result, derived from cited values, or
	// figure-unverified); absent when it states none.
	Figures []contracts.FigureCheck `json:"figures,omitempty"`
}

// unmetOut is one shortfall code of a verdict and what it means.
type unmetOut struct {
	Code    string `json:"code"`
	Meaning string `json:"meaning,omitempty"`
}

// answerWithOut is the tool call that answers a run's question: a run that
// continues its conversation, whose objective is the answer.
type answerWithOut struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
	Note      string         `json:"note"`
}

type citationOut struct {
	Source        contracts.EvidenceSource `json:"source"`
	CorrelationID string                   `json:"correlation_id,omitempty"`
	Fingerprint   string                   `json:"fingerprint,omitempty"`
	// SQL, Columns, RowCount and Rows describe the cited result; Rows holds
	// its first rows only.
	SQL      string             `json:"sql,omitempty"`
	Columns  []contracts.Column `json:"columns,omitempty"`
	RowCount int                `json:"row_count,omitempty"`
	Rows     [][]any            `json:"rows,omitempty"`
	// Unread says why the cited result was not read back.
	Unread string `json:"unread,omitempty"`
}

// runReport shapes a run's record for a caller: the claims with their
// citations, each cited result read back (at most MaxCitations of them,
// rows rows each).
func runReport(ctx context.Context, b Backend, rec contracts.Record, rows int) runOut {
	out := runOut{RunID: rec.RunID, Status: rec.Status, Finished: rec.Status.Terminal(), Mode: rec.Mode, Workflow: rec.WorkflowType,
		Objective: rec.Objective, ConnectionID: rec.ConnectionID, StopReason: rec.StopReason, Stopped: api.StopSentence(rec.StopReason),
		Reason: rec.Reason, Detail: rec.Detail, Verdict: rec.GoalVerdict, Question: rec.Question, Report: []claimOut{}, Closing: rec.Closing,
		Plan: rec.Plan, Steps: len(rec.Steps), Spent: rec.Spent, Model: rec.Model, Demo: rec.Demo, Started: rec.StartedAt, Ended: rec.FinishedAt}
	figures := map[int][]contracts.FigureCheck{}
	if v := rec.GoalVerdict; v != nil {
		for _, code := range v.Unmet {
			out.Unmet = append(out.Unmet, unmetOut{Code: code, Meaning: unmetMeaning(code)})
		}
		for _, c := range v.Claims {
			figures[c.Claim] = append(figures[c.Claim], c.Figures...)
		}
	}
	if rec.StopReason == contracts.StopQuestion {
		out.AnswerWith = answerWith(rec)
	}
	read := map[string]citationOut{}
	for i, c := range rec.Report {
		co := claimOut{Text: c.Text, Citations: []citationOut{}, Figures: figures[i+1]}
		for _, e := range c.Evidence {
			ci := citationOut{Source: e.Source, CorrelationID: e.CorrelationID, Fingerprint: e.Fingerprint}
			if e.Source == contracts.EvidenceArtifact && e.CorrelationID != "" {
				if got, ok := read[e.CorrelationID]; ok {
					ci = got
				} else if len(read) >= MaxCitations {
					ci.Unread = fmt.Sprintf("more than %d results cited: read it with the API (GET %s)", MaxCitations, api.ArtifactPath(rec.RunID, e.CorrelationID))
				} else {
					a, err := b.Artifact(ctx, rec.RunID, e.CorrelationID)
					if err != nil {
						ci.Unread = asError(err).Error()
					} else {
						ci.SQL, ci.Columns, ci.RowCount = a.SQL, a.Columns, a.Rows
						if len(a.Data) > rows {
							a.Data = a.Data[:rows]
						}
						ci.Rows = a.Data
					}
					read[e.CorrelationID] = ci
				}
			}
			co.Citations = append(co.Citations, ci)
		}
		out.Report = append(out.Report, co)
	}
	return out
}

// unmetMeaning says what a shortfall code means, in the verifier's words;
// "" when it has none (the code stands alone).
func unmetMeaning(code string) string { return verdict.Explain(code) }

// answerWith is the start_investigation call that answers the question rec
// stopped on: the same connection, workflow and mode, continuing rec's
// conversation, with the user's answer as the objective.
func answerWith(rec contracts.Record) *answerWithOut {
	args := map[string]any{"connection_id": rec.ConnectionID, "previous_run_id": rec.RunID,
		"objective": "<the user's answer to the question>"}
	if rec.WorkflowType != "" {
		args["workflow"] = string(rec.WorkflowType)
	}
	if rec.Mode != "" {
		args["mode"] = string(rec.Mode)
	}
	return &answerWithOut{Tool: "start_investigation", Arguments: args,
		Note: "ask the user the question and pass their answer as objective; the new run continues this run's conversation"}
}

// plural writes n and word, with an s when n is not 1.
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
