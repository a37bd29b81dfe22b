package orchestrator

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/policy"
)

// The exact text a model reads, per engine, kept as golden files so every
// change to a prompt, a tool spec, a status line or a refusal is reviewed in
// the diff. A scripted investigation of the Chinook sample database runs
// through the real drive (the real ledger on embedded NATS, the real
// transcript, refusals and status lines); only the model and the executors
// are scripted, the executors answering with the executor's data (rows as
// cells, a schema page, errors and refusals), which the orchestrator renders
// (pkg/exectext), from inventories captured once from the real Chinook files
// (testdata/visible/chinook-*.json).
//
// Regenerate: go test ./services/orchestrator/ -run TestModelVisibleText -update

var update = flag.Bool("update", false, "rewrite the golden files of TestModelVisibleText")

const (
	visibleDir       = "testdata/visible"
	visibleObjective = "Which genres sell best by revenue?"
	visibleConn      = "chinook"
	// tokenBound is the bound on the turn-1 request on Chinook, in
	// estimated tokens (characters / 4).
	tokenBound = 4000
)

// chinookCase is one engine's Chinook: its inventory and the statements and
// database texts the script uses, in that engine's dialect and names.
type chinookCase struct {
	engine contracts.Engine
	// fixture is the inventory file; for SQL Server the PostgreSQL one is
	// reused (no SQL Server is available to capture from), relabelled.
	fixture string
	// statements is how many statements the executor reported for the
	// inventory read when the fixture was captured.
	statements int
	// read is the revenue query; describe the table inspect_schema reads.
	read, describe, next string
	// guardReason and guardFix are the engine guard's not_a_select words
	// for a DELETE (pkg/guard/<engine>).
	guardReason, guardFix string
	// bad are four failing statements and the engine's error text for each.
	bad [4]struct {
		sql, msg string
		class    contracts.DBErrorClass
	}
}

type badStmt = struct {
	sql, msg string
	class    contracts.DBErrorClass
}

var chinookCases = []chinookCase{
	{
		engine: contracts.EnginePostgres, fixture: "chinook-postgres.json", statements: 2,
		read: "SELECT g.name AS genre, ROUND(SUM(il.unit_price * il.quantity), 2) AS revenue FROM invoice_line il " +
			"JOIN track t ON t.track_id = il.track_id JOIN genre g ON g.genre_id = t.genre_id GROUP BY g.name ORDER BY revenue DESC LIMIT 5",
		describe: "genre", next: "invoice_line",
		guardReason: "the statement is a DELETE, not a SELECT",
		guardFix:    "send a SELECT; inspect_schema shows the tables and their columns",
		bad: [4]badStmt{
			{"SELECT g.genre_name, SUM(il.unit_price) FROM invoice_line il JOIN track t USING (track_id) JOIN genre g USING (genre_id) GROUP BY 1",
				`column g.genre_name does not exist`, contracts.DBMissingObject},
			{"SELECT g.name, SUM(il.unit_price * il.quantity) revenue FROM invoice_line il JOIN track t ON t.track_id = il.track_id JOIN genre g ON g.genre_id = t.genre_id GROUP g.name",
				`syntax error at or near "g"`, contracts.DBSyntax},
			{"SELECT g.name, COUNT(*) FROM invoice_line il, track t, genre g GROUP BY g.name",
				`canceling statement due to statement timeout`, contracts.DBTimeout},
			{"SELECT name, SUM(total) FROM invoices GROUP BY name",
				`relation "invoices" does not exist`, contracts.DBMissingObject},
		},
	},
	{
		engine: contracts.EngineSQLite, fixture: "chinook-sqlite.json", statements: 4,
		read: "SELECT g.Name AS genre, ROUND(SUM(il.UnitPrice * il.Quantity), 2) AS revenue FROM InvoiceLine il " +
			"JOIN Track t ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId GROUP BY g.Name ORDER BY revenue DESC LIMIT 5",
		describe: "Genre", next: "InvoiceLine",
		guardReason: "only a SELECT (or WITH … SELECT, VALUES, or a metadata PRAGMA) may run; this statement begins with DELETE",
		guardFix:    "rewrite it as a single SELECT (or WITH … SELECT) that reads what you need; nothing may change the database",
		bad: [4]badStmt{
			{"SELECT g.GenreName, SUM(il.UnitPrice) FROM InvoiceLine il JOIN Track t USING (TrackId) JOIN Genre g USING (GenreId) GROUP BY 1",
				`SQL logic error: no such column: g.GenreName (1)`, contracts.DBMissingObject},
			{"SELECT TOP 5 g.Name, SUM(il.UnitPrice * il.Quantity) AS revenue FROM InvoiceLine il JOIN Track t ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId GROUP BY g.Name",
				`SQL logic error: near "5": syntax error (1)`, contracts.DBSyntax},
			{"SELECT g.Name, COUNT(*) FROM InvoiceLine il, Track t, Genre g GROUP BY g.Name",
				`interrupted (9)`, contracts.DBTimeout},
			{"SELECT Name, SUM(Total) FROM Invoices GROUP BY Name",
				`SQL logic error: no such table: Invoices (1)`, contracts.DBMissingObject},
		},
	},
	{
		engine: contracts.EngineDuckDB, fixture: "chinook-duckdb.json", statements: 3,
		read: "SELECT g.Name AS genre, ROUND(SUM(il.UnitPrice * il.Quantity), 2) AS revenue FROM InvoiceLine il " +
			"JOIN Track t ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId GROUP BY g.Name ORDER BY revenue DESC LIMIT 5",
		describe: "Genre", next: "InvoiceLine",
		guardReason: "DELETE is not a SELECT; only reads run here",
		guardFix:    "send one SELECT (WITH, UNION, joins and subqueries are fine); to see a table's columns use inspect_schema",
		bad: [4]badStmt{
			{"SELECT g.GenreName, SUM(il.UnitPrice) FROM InvoiceLine il JOIN Track t USING (TrackId) JOIN Genre g USING (GenreId) GROUP BY 1",
				`Binder Error: Table "g" does not have a column named "GenreName"`, contracts.DBMissingObject},
			{"SELECT TOP 5 g.Name, SUM(il.UnitPrice * il.Quantity) AS revenue FROM InvoiceLine il JOIN Track t ON t.TrackId = il.TrackId JOIN Genre g ON g.GenreId = t.GenreId GROUP BY g.Name",
				`Parser Error: syntax error at or near "5"`, contracts.DBSyntax},
			{"SELECT g.Name, COUNT(*) FROM InvoiceLine il, Track t, Genre g GROUP BY g.Name",
				`INTERRUPT Error: Interrupted!`, contracts.DBTimeout},
			{"SELECT Name, SUM(Total) FROM Invoices GROUP BY Name",
				`Catalog Error: Table with name Invoices does not exist!`, contracts.DBMissingObject},
		},
	},
	{
		engine: contracts.EngineMSSQL, fixture: "chinook-postgres.json", statements: 2,
		read: "SELECT TOP (5) g.name AS genre, ROUND(SUM(il.unit_price * il.quantity), 2) AS revenue FROM invoice_line il " +
			"JOIN track t ON t.track_id = il.track_id JOIN genre g ON g.genre_id = t.genre_id GROUP BY g.name ORDER BY revenue DESC",
		describe: "genre", next: "invoice_line",
		guardReason: "only a SELECT can run here; a DELETE statement is not one",
		guardFix:    "write one SELECT (or WITH … SELECT); to see a table's columns use inspect_schema",
		bad: [4]badStmt{
			{"SELECT g.genre_name, SUM(il.unit_price) FROM invoice_line il JOIN track t ON t.track_id = il.track_id JOIN genre g ON g.genre_id = t.genre_id GROUP BY g.genre_name",
				`mssql: Invalid column name 'genre_name'.`, contracts.DBMissingObject},
			{"SELECT g.name, SUM(il.unit_price * il.quantity) AS revenue FROM invoice_line il JOIN track t ON t.track_id = il.track_id JOIN genre g ON g.genre_id = t.genre_id GROUP BY g.name LIMIT 5",
				`mssql: Incorrect syntax near 'LIMIT'.`, contracts.DBSyntax},
			{"SELECT g.name, COUNT(*) FROM invoice_line il, track t, genre g GROUP BY g.name",
				`mssql: Query timeout expired`, contracts.DBTimeout},
			{"SELECT name, SUM(total) FROM invoices GROUP BY name",
				`mssql: Invalid object name 'invoices'.`, contracts.DBMissingObject},
		},
	},
}

// loadChinook reads c's inventory fixture; for SQL Server it relabels the
// PostgreSQL capture: engine mssql, schema dbo, SQL Server's statistics.
func loadChinook(t *testing.T, c chinookCase) *contracts.Inventory {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(visibleDir, c.fixture))
	if err != nil {
		t.Fatal(err)
	}
	var inv contracts.Inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		t.Fatal(err)
	}
	if c.engine == contracts.EngineMSSQL {
		inv.Engine, inv.StatisticsSource = contracts.EngineMSSQL, "sys.partitions row counts"
		for i := range inv.Relations {
			r := &inv.Relations[i]
			r.Schema = "dbo"
			for j := range r.ForeignKeys {
				r.ForeignKeys[j].RefSchema = "dbo"
			}
		}
	}
	if inv.Engine != c.engine || len(inv.Relations) != 11 {
		t.Fatalf("%s: fixture holds %s with %d relations, want Chinook's 11", c.fixture, inv.Engine, len(inv.Relations))
	}
	return &inv
}

// visibleExecutors answers as an engine's executor would on Chinook: the
// inventory, one table described, the revenue result, the guard's refusal
// of a DELETE and the database's errors, each as the executor's data (the
// orchestrator renders what the model reads of it).
type visibleExecutors struct {
	c   chinookCase
	inv *contracts.Inventory
}

func (x *visibleExecutors) Exec(_ context.Context, _ contracts.Engine, op contracts.ExecOp, req contracts.ExecRequest) (contracts.ExecReply, error) {
	switch op {
	case contracts.OpInventory:
		return contracts.ExecReply{Status: contracts.ExecOK, Inventory: x.inv, Statements: x.c.statements, DurationMs: 12,
			Artifact: &contracts.ArtifactSummary{CorrelationID: req.CorrelationID, Rows: len(x.inv.Relations)}}, nil
	case contracts.OpCheck:
		return contracts.ExecReply{Status: contracts.ExecOK, Check: &contracts.StatementCheck{ReadOnly: true}}, nil
	case contracts.OpSchema:
		for _, r := range x.inv.Relations {
			if r.Name != req.Table {
				continue
			}
			return contracts.ExecReply{Status: contracts.ExecOK, DurationMs: 3,
				Schema: &contracts.SchemaPage{Matched: 1, Described: true, Relations: []contracts.Relation{r}},
				Artifact: &contracts.ArtifactSummary{CorrelationID: req.CorrelationID, Rows: 1,
					Columns: []contracts.Column{{Name: "schema"}, {Name: "name"}, {Name: "kind"}, {Name: "columns"}}}}, nil
		}
		return contracts.ExecReply{}, fmt.Errorf("no table %q in the fixture", req.Table)
	}
	switch sql := req.SQL; {
	case sql == x.c.read:
		cells := [][]string{{"Rock", "826.65"}, {"Latin", "382.14"}, {"Metal", "261.36"}, {"Alternative & Punk", "241.56"}, {"TV Shows", "93.53"}}
		return contracts.ExecReply{Status: contracts.ExecOK, Cells: cells, DurationMs: 9, Fingerprint: "fp-read",
			Artifact: &contracts.ArtifactSummary{CorrelationID: req.CorrelationID, Rows: 5, Bytes: 120,
				Columns: []contracts.Column{{Name: "genre"}, {Name: "revenue"}}}}, nil
	case strings.HasPrefix(sql, "DELETE"):
		r := &contracts.Refusal{Code: contracts.RefuseNotASelect, Message: x.c.guardReason, Fix: x.c.guardFix}
		return contracts.ExecReply{Status: contracts.ExecRefused, Refusal: r}, nil
	}
	for i, b := range x.c.bad {
		if req.SQL == b.sql {
			e := &contracts.DBError{Class: b.class, Message: b.msg}
			return contracts.ExecReply{Status: contracts.ExecError, Error: e, DurationMs: int64(4 + i), Fingerprint: fmt.Sprintf("fp-bad-%d", i)}, nil
		}
	}
	return contracts.ExecReply{}, fmt.Errorf("the script sent a statement the fake executor does not know: %q", req.SQL)
}

// recordingModel answers from a script and keeps every request it was sent.
type recordingModel struct {
	mu     sync.Mutex
	reqs   []contracts.ModelTurnRequest
	script func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply
}

func (m *recordingModel) Probe(context.Context) (contracts.ModelProbeReply, error) {
	return contracts.ModelProbeReply{Provider: "test", Model: "scripted"}, nil
}

func (m *recordingModel) Turn(_ context.Context, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, error) {
	m.mu.Lock()
	n := len(m.reqs)
	m.reqs = append(m.reqs, req)
	m.mu.Unlock()
	r := m.script(n, req)
	r.Provider, r.Model = "test", "scripted"
	return r, nil
}

func toolCall(n int, name string, args any) contracts.ModelTurnReply {
	var s string
	switch a := args.(type) {
	case string:
		s = a
	default:
		b, _ := json.Marshal(a)
		s = string(b)
	}
	return contracts.ModelTurnReply{ToolCalls: []contracts.ModelToolCall{{ID: fmt.Sprintf("call_%d", n+1), Name: name, Arguments: s}}}
}

// investigationScript is a typical Chinook investigation that meets every
// refusal a model can see: a good read, then invalid arguments, an unknown
// tool, the guard's refusal, database errors down to the end of the repair
// budget (with a citation refused in between), the repair budget refusal,
// schema reads until the statement budget refuses one, and the report.
func investigationScript(c chinookCase, tables []string) func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
	return func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
		read := func(sql, reason string) contracts.ModelTurnReply {
			return toolCall(n, policy.ToolRunReadQuery, readArgs{SQL: sql, Reason: reason})
		}
		switch n {
		case 0:
			return read(c.read, "revenue per genre, best first")
		case 1:
			return toolCall(n, policy.ToolRunReadQuery, `{"sql":"SELECT COUNT(*) FROM genre","limit":10}`)
		case 2:
			return toolCall(n, "execute_sql", `{"sql":"SELECT 1"}`)
		case 3:
			return read("DELETE FROM invoice_line WHERE quantity = 0", "remove empty lines")
		case 4:
			return read(c.bad[0].sql, "revenue per genre")
		case 5:
			return toolCall(n, policy.ToolComposeReport, `{"claims":[{"text":"Rock sells best, with 826.65 in revenue.","evidence":[{"source":"artifact","correlationId":"genre_revenue"}]}]}`)
		case 6, 7, 8:
			return read(c.bad[n-5].sql, "revenue per genre")
		case 9:
			return read(strings.ReplaceAll(c.read, "5", "3"), "the top three genres")
		}
		last := req.Messages[len(req.Messages)-1].Content
		if n-10 < len(tables) && !strings.Contains(last, "("+string(refuseStatementBudget)+")") {
			return toolCall(n, policy.ToolInspectSchema, map[string]string{"table": tables[n-10]})
		}
		return toolCall(n, policy.ToolComposeReport, `{"claims":[{"text":"Rock sells best by revenue (826.65), ahead of Latin (382.14) and Metal (261.36).",`+
			`"evidence":[{"source":"artifact","correlationId":"r1"}]}]}`)
	}
}

// planningScript answers without a statement once, then with one.
func planningScript(c chinookCase) func(n int, req contracts.ModelTurnRequest) contracts.ModelTurnReply {
	return func(n int, _ contracts.ModelTurnRequest) contracts.ModelTurnReply {
		if n == 0 {
			return contracts.ModelTurnReply{Text: "Revenue per genre comes from invoice lines joined to tracks and genres."}
		}
		return contracts.ModelTurnReply{Text: "```" + string(c.engine) + "\n" + c.read + "\n```\nSums each genre's invoice lines."}
	}
}

// visibleRun drives one scripted run of c to its end and returns its
// ledger and every request the model was sent.
func visibleRun(t *testing.T, c chinookCase, mode contracts.Mode, tune func(*contracts.Budget), script func(int, contracts.ModelTurnRequest) contracts.ModelTurnReply) ([]contracts.Entry, []contracts.ModelTurnRequest) {
	t.Helper()
	h := newHarness(t, Config{})
	m := &recordingModel{script: script}
	h.s.models, h.s.execs = m, &visibleExecutors{c: c, inv: loadChinook(t, c)}
	budget, _ := policy.Budget(contracts.WorkflowInvestigation)
	if tune != nil {
		tune(&budget)
	}
	header := contracts.RunStarted{Mode: mode, WorkflowType: contracts.WorkflowInvestigation, Objective: visibleObjective,
		ConnectionID: visibleConn, Engine: c.engine, Actor: contracts.Actor{ID: "tester"}, Budget: budget,
		Tools: policy.Tools(mode, contracts.WorkflowInvestigation)}
	ctx := context.Background()
	runID := "visible-" + string(c.engine) + "-" + string(mode)
	if _, err := h.s.ledger.Writer(runID, 0, nil).Append(ctx, contracts.KindRunStarted, header); err != nil {
		t.Fatal(err)
	}
	if err := h.s.driveHere(runID); err != nil {
		t.Fatal(err)
	}
	entries, err := h.s.ledger.Read(ctx, runID)
	if err != nil {
		t.Fatal(err)
	}
	return entries, m.reqs
}

// secondsLeft matches what varies from run to run in the model's text: the
// seconds left in a status line or a notice.
var secondsLeft = regexp.MustCompile(`(\d+) s left\]|About (\d+) s of the run's time`)

func mask(s string) string {
	return secondsLeft.ReplaceAllStringFunc(s, func(m string) string {
		if strings.HasPrefix(m, "About") {
			return "About <n> s of the run's time"
		}
		return "<n> s left]"
	})
}

// visibleText writes a request as the model reads it: the tool specs as
// JSON, then every message with its role.
func visibleText(title string, req contracts.ModelTurnRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n# Turn %d request. Generated by TestModelVisibleText; regenerate with -update and review the diff.\n", title, req.Turn)
	fmt.Fprintf(&b, "\n===== tools (%d) =====\n", len(req.Tools))
	for _, sp := range req.Tools {
		j, _ := json.MarshalIndent(sp, "", "  ")
		b.Write(j)
		b.WriteByte('\n')
	}
	for i, m := range req.Messages {
		fmt.Fprintf(&b, "\n===== message %d: %s", i+1, m.Role)
		if m.ToolCallID != "" {
			fmt.Fprintf(&b, " (answers %s)", m.ToolCallID)
		}
		b.WriteString(" =====\n")
		b.WriteString(m.Content)
		if m.Content != "" && !strings.HasSuffix(m.Content, "\n") {
			b.WriteByte('\n')
		}
		for _, tc := range m.ToolCalls {
			fmt.Fprintf(&b, "-> tool call %s: %s %s\n", tc.ID, tc.Name, tc.Arguments)
		}
	}
	return mask(b.String())
}

// golden compares got with the golden file name, or rewrites it.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join(visibleDir, name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs from what the model now reads; review and run with -update:\n%s", path, firstDiff(string(want), got))
	}
}

// firstDiff shows the first line where two texts part.
func firstDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			return fmt.Sprintf("line %d\n  golden: %q\n  now:    %q", i+1, wl, gl)
		}
	}
	return "(same lines)"
}

// promptSize is the turn-1 request of a run measured in characters.
type promptSize struct {
	system, objective, context, tools int
}

func (p promptSize) total() int { return p.system + p.objective + p.context + p.tools }

// sizeRow is one row of testdata/visible/prompt-size.golden.
const sizeRow = "%-20v %7v %10v %8v %6v %6v %8v %5v %10v %8v\n"

// tokens estimates tokens as characters / 4, rounded up: no tokenizer is
// available offline, and the estimate is what the bound is stated in.
func tokens(chars int) int { return (chars + 3) / 4 }

// turnOneSize rebuilds a run's first request from its ledger under the
// untuned investigation budget (the golden run lowers the statement budget
// to reach its refusal) and measures it; tools count as compact JSON, the
// way they travel.
func turnOneSize(t *testing.T, entries []contracts.Entry) promptSize {
	t.Helper()
	var first []contracts.Entry
	for _, e := range entries {
		switch e.Kind {
		case contracts.KindRunStarted:
			var h contracts.RunStarted
			if err := json.Unmarshal(e.Data, &h); err != nil {
				t.Fatal(err)
			}
			h.Budget, _ = policy.Budget(h.WorkflowType)
			first = append(first, mustEntry(t, contracts.KindRunStarted, h))
		case contracts.KindDriverResolved, contracts.KindContextCaptured, contracts.KindContextUnavailable:
			first = append(first, e)
		}
	}
	msgs := transcript(first, "")
	if len(msgs) != 3 {
		t.Fatalf("turn 1 has %d messages, want system, objective and context", len(msgs))
	}
	var h contracts.RunStarted
	_ = json.Unmarshal(first[0].Data, &h)
	tools, err := json.Marshal(specsFor(h.Tools))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Tools) == 0 {
		tools = nil
	}
	n := func(s string) int { return len([]rune(s)) }
	return promptSize{system: n(msgs[0].Content), objective: n(msgs[1].Content), context: n(msgs[2].Content), tools: n(string(tools))}
}

// requestChars measures a whole request: every message's text, the tool
// calls it repeats, and the tool specs as compact JSON.
func requestChars(t *testing.T, req contracts.ModelTurnRequest) int {
	t.Helper()
	n := 0
	for _, m := range req.Messages {
		n += len([]rune(m.Content))
		for _, tc := range m.ToolCalls {
			n += len([]rune(tc.ID + tc.Name + tc.Arguments))
		}
	}
	if len(req.Tools) > 0 {
		b, err := json.Marshal(req.Tools)
		if err != nil {
			t.Fatal(err)
		}
		n += len([]rune(string(b)))
	}
	return n
}

// TestModelVisibleText holds the text a model reads on Chinook to golden
// files per engine (testdata/visible/<engine>.golden, and a planning run's
// on PostgreSQL), and the turn-1 request under the bound of 4,000
// estimated tokens (testdata/visible/prompt-size.golden keeps the table
// docs/benchmarks.md reports).
func TestModelVisibleText(t *testing.T) {
	var sizes strings.Builder
	sizes.WriteString("# Requests on Chinook, in characters (estimated tokens = characters / 4, rounded up): turn 1 by part,\n")
	sizes.WriteString("# and the last request of the scripted run (its turn, and its size whole).\n")
	fmt.Fprintf(&sizes, sizeRow, "# engine", "system", "objective", "context", "tools", "total", "~tokens", "turn", "last req", "~tokens")
	for _, c := range chinookCases {
		t.Run(string(c.engine), func(t *testing.T) {
			tune := func(b *contracts.Budget) {
				// The statement budget is lowered so that the schema reads
				// after the failing reads meet its refusal within the script.
				b.MaxStatements = c.statements + 6
			}
			entries, reqs := visibleRun(t, c, contracts.ModeAgent, tune, investigationScript(c, []string{c.describe, c.next, c.describe, c.next}))
			rec := ledger.Fold("visible", entries)
			if rec.Status != contracts.StatusSucceeded {
				t.Fatalf("the scripted investigation ended %s after %d turns, want succeeded", rec.Status, len(reqs))
			}
			want := []string{string(refuseInvalidArguments), string(refuseUnknownTool), string(contracts.RefuseNotASelect), string(refuseUnresolved), string(refuseRepairBudget), string(refuseStatementBudget)}
			var got []string
			for _, e := range entries {
				if e.Kind == contracts.KindToolRefused {
					var p contracts.ToolRefused
					_ = json.Unmarshal(e.Data, &p)
					got = append(got, string(p.Code))
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("refusals %v, want %v", got, want)
			}
			last := reqs[len(reqs)-1]
			golden(t, string(c.engine)+".golden", visibleText(
				fmt.Sprintf("What a model reads on Chinook (%s): the last request of a scripted investigation that met every refusal.", engineName(c.engine)), last))

			sz := turnOneSize(t, entries)
			lastN := requestChars(t, last)
			fmt.Fprintf(&sizes, sizeRow, c.engine, sz.system, sz.objective, sz.context, sz.tools, sz.total(), tokens(sz.total()), last.Turn, lastN, tokens(lastN))
			t.Logf("turn 1 on Chinook (%s): system %d, objective %d, context %d, tools %d = %d characters, ~%d tokens",
				c.engine, sz.system, sz.objective, sz.context, sz.tools, sz.total(), tokens(sz.total()))
			if tokens(sz.total()) >= tokenBound {
				t.Errorf("turn 1 on Chinook (%s) is ~%d tokens (%d characters), over the bound of %d", c.engine, tokens(sz.total()), sz.total(), tokenBound)
			}
		})
	}
	t.Run("planning-postgres", func(t *testing.T) {
		c := chinookCases[0]
		entries, reqs := visibleRun(t, c, contracts.ModePlanning, nil, planningScript(c))
		if rec := ledger.Fold("visible", entries); rec.Status != contracts.StatusSucceeded || len(reqs) != 2 {
			t.Fatalf("the planning run ended %s after %d turns, want succeeded after 2", rec.Status, len(reqs))
		}
		golden(t, "planning-postgres.golden", visibleText(
			"What a model reads on Chinook (PostgreSQL, planning): the request after an answer that held no statement.", reqs[1]))
		sz := turnOneSize(t, entries)
		lastN := requestChars(t, reqs[1])
		fmt.Fprintf(&sizes, sizeRow, "postgres (planning)", sz.system, sz.objective, sz.context, sz.tools, sz.total(), tokens(sz.total()), reqs[1].Turn, lastN, tokens(lastN))
		if tokens(sz.total()) >= tokenBound {
			t.Errorf("planning turn 1 on Chinook is ~%d tokens, over the bound of %d", tokens(sz.total()), tokenBound)
		}
	})
	if !t.Failed() {
		golden(t, "prompt-size.golden", sizes.String())
	}
}
