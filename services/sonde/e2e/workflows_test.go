package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/policy"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// The four specialist workflows end to end: a scripted model on the real
// openai-go SDK over the replayed wire, the real executors on the demo
// database and, where the shared files are present, on Chinook in SQLite,
// DuckDB and PostgreSQL. Each workflow is driven to an answer and, per
// shortfall code, to a run that earns it; every database is unchanged
// afterwards.

// wfDataset is one database the workflows are driven on.
type wfDataset struct {
	conn   string
	engine contracts.Engine
	// slow scans; fast reads through an index (its rewrite); index would
	// serve slow.
	slow, fast, index string
	// profile is a table to profile.
	profile string
	// analysis is an aggregate of at least two rows: x a category column,
	// y a numeric one.
	analysis, x, y string
	// unchanged reports the database's state, compared before and after.
	unchanged func(t *testing.T) string
	// hypothetical: the database can plan with a hypothetical index
	// (PostgreSQL with hypopg installed).
	hypothetical bool
}

func demoDataset(s *stacktest.Stack) wfDataset {
	return wfDataset{conn: "demo", engine: contracts.EngineSQLite,
		slow:     "SELECT id, total_cents FROM orders WHERE status = 'refunded'",
		fast:     "SELECT id, total_cents FROM orders WHERE customer_id = 7",
		index:    "CREATE INDEX orders_status ON orders (status)",
		profile:  "customers",
		analysis: "SELECT status, COUNT(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC", x: "status", y: "orders",
		unchanged: wfFileDigest(s.DBPath),
	}
}

// wfFileDigest digests a database file (and its journal, when there is one).
func wfFileDigest(path string) func(t *testing.T) string {
	return func(t *testing.T) string {
		h := sha256.New()
		for _, p := range []string{path, path + "-wal"} {
			if b, err := os.ReadFile(p); err == nil {
				h.Write(b)
			}
		}
		return fmt.Sprintf("%x", h.Sum(nil))
	}
}

// chinookFile copies a shared Chinook file into the test's directory, or
// returns "" when the shared datasets are absent (the suite never depends
// on them).
func chinookFile(t *testing.T, name string) string {
	src := filepath.Join("..", "..", "..", "..", "shared", "datasets", "chinook", name)
	b, err := os.ReadFile(src)
	if err != nil {
		return ""
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// chinookPostgres loads the shared Chinook script into a database of its
// own on the test cluster and returns its DSN, or "" when either is absent.
func chinookPostgres(t *testing.T) (dsn string, hypothetical bool) {
	base := os.Getenv("SONDE_TEST_PG_URL")
	script, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "shared", "datasets", "chinook", "chinook_postgres.sql"))
	if base == "" || err != nil {
		return "", false
	}
	_, body, ok := strings.Cut(string(script), "\\c chinook;")
	if !ok {
		t.Fatal("the Chinook script has no \\c chinook; line")
	}
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	db := fmt.Sprintf("chinook_wf_%d", os.Getpid())
	if _, err := admin.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)"); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+db); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), base)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
			c.Close(context.Background())
		}
	})
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Database = db
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, body); err != nil {
		t.Fatalf("load Chinook: %v", err)
	}
	// Fresh statistics, so the planner's estimates are the data's.
	if _, err := conn.Exec(ctx, "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	// hypopg, where the cluster has it (scripts/postgres.sh installs it).
	_, err = conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS hypopg")
	return strings.Replace(base, "/postgres?", "/"+db+"?", 1), err == nil
}

// pgDigest digests what a PostgreSQL database holds: per table, its row
// count and a hash of its rows; and the indexes that exist.
func pgDigest(dsn string) func(t *testing.T) string {
	return func(t *testing.T) string {
		ctx := context.Background()
		c, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		var out string
		err = c.QueryRow(ctx, `SELECT string_agg(indexname, ',' ORDER BY indexname) FROM pg_indexes WHERE schemaname = 'public'`).Scan(&out)
		if err != nil {
			t.Fatal(err)
		}
		for _, table := range []string{"invoice", "customer", "track"} {
			var d string
			if err := c.QueryRow(ctx, fmt.Sprintf(`SELECT md5(string_agg(t::text, '|' ORDER BY t::text)) FROM %s t`, table)).Scan(&d); err != nil {
				t.Fatal(err)
			}
			out += "|" + table + ":" + d
		}
		return out
	}
}

// wfDatasets are the databases of one stack: the demo always, Chinook where
// its files are present.
func wfDatasets(t *testing.T) (*stacktest.Stack, []wfDataset, *wfScript) {
	var extra []connections.Connection
	var sets []wfDataset
	chinookSQLite := func(conn string, engine contracts.Engine, path string) wfDataset {
		return wfDataset{conn: conn, engine: engine,
			slow:     "SELECT InvoiceId, Total FROM Invoice WHERE BillingCountry = 'Canada'",
			fast:     "SELECT InvoiceId, Total FROM Invoice WHERE CustomerId = 14",
			index:    "CREATE INDEX invoice_country ON Invoice (BillingCountry)",
			profile:  "Customer",
			analysis: "SELECT BillingCountry AS country, SUM(Total) AS revenue FROM Invoice GROUP BY BillingCountry ORDER BY revenue DESC LIMIT 10", x: "country", y: "revenue",
			unchanged: wfFileDigest(path)}
	}
	if p := chinookFile(t, "chinook.sqlite"); p != "" {
		extra = append(extra, connections.Connection{ID: "chinook-sqlite", Engine: contracts.EngineSQLite, Path: p})
		sets = append(sets, chinookSQLite("chinook-sqlite", contracts.EngineSQLite, p))
	}
	if p := chinookFile(t, "chinook.duckdb"); p != "" {
		extra = append(extra, connections.Connection{ID: "chinook-duckdb", Engine: contracts.EngineDuckDB, Path: p})
		sets = append(sets, chinookSQLite("chinook-duckdb", contracts.EngineDuckDB, p))
	}
	if dsn, hypothetical := chinookPostgres(t); dsn != "" {
		extra = append(extra, connections.Connection{ID: "chinook-postgres", Engine: contracts.EnginePostgres, DSN: dsn})
		sets = append(sets, wfDataset{conn: "chinook-postgres", engine: contracts.EnginePostgres,
			slow:     "SELECT invoice_id, total FROM invoice WHERE billing_country = 'Canada'",
			fast:     "SELECT invoice_id, total FROM invoice WHERE customer_id = 14",
			index:    "CREATE INDEX invoice_country ON invoice (billing_country)",
			profile:  "customer",
			analysis: "SELECT billing_country AS country, SUM(total) AS revenue FROM invoice GROUP BY billing_country ORDER BY revenue DESC LIMIT 10", x: "country", y: "revenue",
			unchanged: pgDigest(dsn), hypothetical: hypothetical})
	}
	script := &wfScript{plays: map[string]wfPlay{}}
	s := stacktest.Start(t, stacktest.Options{Script: modeltest.ScriptFunc(script.answer), Connections: extra})
	return s, append([]wfDataset{demoDataset(s)}, sets...), script
}

// wfPlay is a scripted model for one run: turn n's reply, given the result
// id each earlier tool result named ("" for a result that named none, such
// as a refusal).
type wfPlay func(n int, ids []string) modeltest.Reply

// wfScript dispatches each model request to the play of its run, found by
// the tag that opens the run's objective.
type wfScript struct {
	mu    sync.Mutex
	plays map[string]wfPlay
}

func (w *wfScript) add(tag string, p wfPlay) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.plays[tag] = p
}

func (w *wfScript) answer(req modeltest.ChatRequest) (modeltest.Reply, error) {
	if len(req.Messages) < 2 {
		return modeltest.Reply{Text: "no objective"}, nil
	}
	objective := strings.TrimPrefix(req.Messages[1].Content, "Objective: ")
	tag, _, _ := strings.Cut(objective, " ")
	w.mu.Lock()
	play, ok := w.plays[tag]
	w.mu.Unlock()
	if !ok {
		return modeltest.Reply{Text: "no play for " + objective}, nil
	}
	var ids []string
	for _, m := range req.ToolMessages() {
		id := ""
		if got := modeltest.CitedIDs(m.Content); len(got) > 0 {
			id = got[0]
		}
		ids = append(ids, id)
	}
	return play(req.AssistantTurns(), ids), nil
}

// seq plays one reply per turn; a reply built from earlier ids is a func.
func seq(steps ...func(ids []string) modeltest.Reply) wfPlay {
	return func(n int, ids []string) modeltest.Reply {
		if n >= len(steps) {
			return modeltest.Reply{Text: "done"}
		}
		return steps[n](ids)
	}
}

func wfCall(tool string, format string, idx ...int) func(ids []string) modeltest.Reply {
	return func(ids []string) modeltest.Reply {
		args := make([]any, len(idx))
		for i, k := range idx {
			if k < len(ids) {
				args[i] = ids[k]
			} else {
				args[i] = "missing"
			}
		}
		return evalCall(tool, fmt.Sprintf(format, args...))
	}
}

func js(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// cite is a compose_report citing the results at positions idx (or the
// schema snapshot for -1).
func cite(text string, idx ...int) func(ids []string) modeltest.Reply {
	return func(ids []string) modeltest.Reply {
		var refs []string
		for _, k := range idx {
			id := "schema"
			if k >= 0 && k < len(ids) {
				id = ids[k]
			}
			refs = append(refs, artifactJSON(id))
		}
		return evalReport(evalClaim{text, refs})
	}
}

// wfCase is one run of a workflow and what it must come to.
type wfCase struct {
	name     string
	workflow contracts.WorkflowType
	auto     bool
	play     func(d wfDataset) wfPlay
	outcome  contracts.VerdictOutcome
	unmet    []string
	check    func(t *testing.T, d wfDataset, rec contracts.Record, es []contracts.Entry)
}

var wfCases = []wfCase{
	{
		name: "query-optimization answered", workflow: contracts.WorkflowQueryOptimization, outcome: contracts.VerdictAnswered,
		play: func(d wfDataset) wfPlay {
			return seq(
				wfCall("inspect_plan", `{"sql":`+js(d.slow)+`,"reason":"how is it read","hypotheticalIndex":null}`),
				wfCall("inspect_plan", `{"sql":`+js(d.fast)+`,"reason":"the rewrite","hypotheticalIndex":null}`),
				wfCall("compare_plans", `{"before":%q,"after":%q}`, 0, 1),
				wfCall("recommend_change", `{"kind":"index","statement":`+js(d.index)+`,"rationale":"the plan scans the table","evidence":[{"source":"artifact","correlationId":%q}]}`, 0),
				cite("The filter scans the table; the rewrite reads through an index.", 0, 1),
			)
		},
		check: func(t *testing.T, d wfDataset, rec contracts.Record, es []contracts.Entry) {
			if len(rec.Comparisons) != 1 || rec.Comparisons[0].BeforeSQL != d.slow || rec.Comparisons[0].AfterSQL != d.fast ||
				!strings.Contains(rec.Comparisons[0].Summary, "Estimates only") {
				t.Errorf("comparison %+v", rec.Comparisons)
			}
			if len(rec.Recommendations) != 1 || len(rec.Recommendations[0].Diagnosed) != 1 {
				t.Errorf("recommendations %+v", rec.Recommendations)
			}
			for _, st := range rec.Steps[:2] {
				if st.Plan == nil || len(st.Plan.Access) == 0 {
					t.Errorf("plan step without a summary: %+v", st)
				}
			}
			if d.engine == contracts.EngineSQLite && rec.Steps[0].Plan != nil && rec.Steps[0].Plan.Access[0].Access != contracts.AccessFullScan {
				t.Errorf("the slow statement's plan on SQLite reads %+v", rec.Steps[0].Plan.Access)
			}
		},
	},
	{
		name: "query-optimization with a hypothetical index", workflow: contracts.WorkflowQueryOptimization, outcome: contracts.VerdictAnswered,
		play: func(d wfDataset) wfPlay {
			steps := []func([]string) modeltest.Reply{
				wfCall("inspect_plan", `{"sql":`+js(d.slow)+`,"reason":null,"hypotheticalIndex":null}`),
				wfCall("inspect_plan", `{"sql":`+js(d.slow)+`,"reason":"as if the index existed","hypotheticalIndex":`+js(d.index)+`}`),
			}
			if d.hypothetical {
				steps = append(steps, wfCall("compare_plans", `{"before":%q,"after":%q}`, 0, 1))
			}
			steps = append(steps,
				wfCall("recommend_change", `{"kind":"index","statement":`+js(d.index)+`,"rationale":"the plan scans","evidence":[{"source":"artifact","correlationId":%q}]}`, 0),
				cite("An index on the filtered column removes the scan.", 0))
			return seq(steps...)
		},
		check: func(t *testing.T, d wfDataset, rec contracts.Record, es []contracts.Entry) {
			if !d.hypothetical {
				if st := rec.Steps[1]; st.Refusal == nil || st.Refusal.Code != contracts.RefuseHypotheticalUnavailable {
					t.Errorf("a hypothetical index on %s: %+v", d.engine, st)
				}
				return
			}
			if len(rec.Comparisons) != 1 || rec.Comparisons[0].AfterPlan == nil || rec.Comparisons[0].AfterPlan.HypotheticalIndex == "" ||
				!strings.Contains(rec.Comparisons[0].Summary, "hypothetical index") {
				t.Errorf("comparison with a hypothetical index %+v", rec.Comparisons)
			}
		},
	},
	{
		name: "query-optimization without a comparison", workflow: contracts.WorkflowQueryOptimization,
		outcome: contracts.VerdictUnanswered, unmet: []string{"no-plan-comparison"},
		play: func(d wfDataset) wfPlay {
			// The report rests on a read, not on the plan: refused once
			// (report_incomplete), then recorded.
			return seq(wfCall("inspect_plan", `{"sql":`+js(d.slow)+`,"reason":null,"hypotheticalIndex":null}`),
				wfCall("run_read_query", `{"sql":`+js(d.analysis)+`,"reason":null}`),
				cite("The statement reads the table.", 1), cite("The statement reads the table.", 1))
		},
	},
	{
		name: "query-optimization index on no plan", workflow: contracts.WorkflowQueryOptimization,
		outcome: contracts.VerdictUnanswered, unmet: []string{"no-plan-evidence"},
		play: func(d wfDataset) wfPlay {
			return seq(
				wfCall("run_read_query", `{"sql":`+js(d.analysis)+`,"reason":null}`),
				wfCall("recommend_change", `{"kind":"index","statement":`+js(d.index)+`,"rationale":"r","evidence":[{"source":"artifact","correlationId":%q}]}`, 0),
				cite("An index would help.", 0), cite("An index would help.", 0))
		},
	},
	{
		name: "database-assessment answered", workflow: contracts.WorkflowDatabaseAssessment, outcome: contracts.VerdictAnswered,
		play: func(d wfDataset) wfPlay {
			return seq(
				wfCall("profile_table", `{"table":"x\"; DROP TABLE customers; --","depth":null,"fromColumn":null}`),
				wfCall("profile_table", `{"table":`+js(d.profile)+`,"depth":"pattern","fromColumn":null}`),
				cite("The table's columns are profiled.", 1))
		},
		check: func(t *testing.T, d wfDataset, rec contracts.Record, es []contracts.Entry) {
			if rec.Steps[0].Status != contracts.StepRefused || rec.Steps[0].Refusal.Code != contracts.RefuseTableNotInventoried {
				t.Errorf("a hostile spelling: %+v", rec.Steps[0])
			}
			if len(rec.Profiles) != 1 || rec.Profiles[0].Profile == nil || rec.Profiles[0].Profile.Rows == 0 || len(rec.Profiles[0].Profile.Columns) == 0 {
				t.Fatalf("profiles %+v", rec.Profiles)
			}
			codes := map[contracts.FindingCode]bool{}
			for _, f := range rec.Profiles[0].Profile.Findings {
				codes[f.Code] = true
			}
			if !codes[contracts.FindingSuspectedPII] {
				t.Errorf("a customer table with an email column raises no suspected_pii: %+v", rec.Profiles[0].Profile.Findings)
			}
		},
	},
	{
		name: "database-assessment from the schema alone", workflow: contracts.WorkflowDatabaseAssessment,
		outcome: contracts.VerdictUnanswered, unmet: []string{"no-table-profile"},
		play: func(d wfDataset) wfPlay {
			return seq(cite("The schema has keys.", -1), cite("The schema has keys.", -1))
		},
	},
	{
		name: "operations answered", workflow: contracts.WorkflowOperations, outcome: contracts.VerdictAnswered,
		play: func(d wfDataset) wfPlay {
			return seq(
				wfCall("inspect_operations", `{"kind":"table-stats","schema":null,"limit":null}`),
				wfCall("inspect_operations", `{"kind":"health","schema":null,"limit":null}`),
				wfCall("run_read_query", `{"sql":"SELECT 1","reason":null}`),
				cite("The tables and the server's health as read.", 0, 1))
		},
		check: func(t *testing.T, d wfDataset, rec contracts.Record, es []contracts.Entry) {
			if rec.Steps[2].Status != contracts.StepRefused || rec.Steps[2].Refusal.Code != "unknown_tool" {
				t.Errorf("an operations run wrote SQL: %+v", rec.Steps[2])
			}
			for _, st := range rec.Steps[:2] {
				if st.Status != contracts.StepCompleted || st.Artifact == nil {
					t.Errorf("reading %+v", st)
				}
			}
		},
	},
	{
		name: "operations citing only the schema", workflow: contracts.WorkflowOperations,
		outcome: contracts.VerdictUnanswered, unmet: []string{"no-reading"},
		play: func(d wfDataset) wfPlay {
			return seq(wfCall("inspect_operations", `{"kind":"storage","schema":null,"limit":null}`), cite("The tables exist.", -1), cite("The tables exist.", -1))
		},
	},
	{
		name: "data-analysis answered", workflow: contracts.WorkflowDataAnalysis, outcome: contracts.VerdictAnswered,
		play: func(d wfDataset) wfPlay {
			return seq(
				wfCall("run_read_query", `{"sql":`+js(d.analysis)+`,"reason":"the answer"}`),
				wfCall("present_answer", `{"artifact":"r1'; DROP TABLE orders; --","presentation":{"kind":"table","spec":null}}`),
				wfCall("present_answer", `{"artifact":%q,"presentation":{"kind":"chart","spec":{"type":"bar","x":`+js(d.x)+`,"y":[`+js(d.y)+`],"caption":"by category"}}}`, 0),
				wfCall("present_answer", `{"artifact":%q,"presentation":{"kind":"table","spec":null}}`, 0),
				cite("The leading category, as charted.", 0))
		},
		check: func(t *testing.T, d wfDataset, rec contracts.Record, es []contracts.Entry) {
			a := rec.Answer
			if a == nil || a.SQL != d.analysis || a.Presentation.Chart == nil || a.Handover != contracts.HandoverNone {
				t.Fatalf("answer %+v", a)
			}
			var codes []string
			for _, st := range rec.Steps {
				if st.Refusal != nil {
					codes = append(codes, string(st.Refusal.Code))
				}
			}
			if !slices.Equal(codes, []string{string(contracts.RefuseAnswerArtifactUnknown), string(contracts.RefuseAnswerAlreadyRecorded)}) {
				t.Errorf("refusals %v", codes)
			}
		},
	},
	{
		name: "data-analysis reporting another result", workflow: contracts.WorkflowDataAnalysis,
		outcome: contracts.VerdictUnanswered, unmet: []string{"answer-uncited"},
		play: func(d wfDataset) wfPlay {
			return seq(
				wfCall("run_read_query", `{"sql":`+js(d.analysis)+`,"reason":null}`),
				wfCall("run_read_query", `{"sql":`+js(d.fast)+`,"reason":null}`),
				wfCall("present_answer", `{"artifact":%q,"presentation":{"kind":"table","spec":null}}`, 0),
				cite("Something else.", 1), cite("Something else.", 1))
		},
	},
	{
		name: "data-analysis with nothing presented", workflow: contracts.WorkflowDataAnalysis,
		outcome: contracts.VerdictUnanswered, unmet: []string{"no-answer"},
		play: func(d wfDataset) wfPlay {
			return seq(wfCall("run_read_query", `{"sql":`+js(d.analysis)+`,"reason":null}`), cite("As read.", 0), cite("As read.", 0))
		},
	},
	{
		name: "data-analysis handed over", workflow: contracts.WorkflowDataAnalysis, auto: true, outcome: contracts.VerdictAnswered,
		play: func(d wfDataset) wfPlay {
			return seq(
				wfCall("inspect_plan", `{"sql":`+js(d.fast)+`,"reason":null,"hypotheticalIndex":null}`),
				wfCall("run_read_query", `{"sql":`+js(d.fast)+`,"reason":null}`),
				wfCall("present_answer", `{"artifact":%q,"presentation":{"kind":"table","spec":null}}`, 1),
				cite("One customer's invoices.", 1))
		},
		check: func(t *testing.T, d wfDataset, rec contracts.Record, es []contracts.Entry) {
			a := rec.Answer
			if a == nil {
				t.Fatal("no answer")
			}
			// An indexed lookup reads as safe on SQLite (every step a
			// SEARCH) and PostgreSQL (index access, a small cost); the gate
			// holds every other engine's plan risky and declines with a
			// warning.
			want := contracts.HandoverApplied
			if d.engine == contracts.EngineSQLite || d.engine == contracts.EnginePostgres {
				want = contracts.HandoverAutoExecuted
			}
			if a.Handover != want || (a.Handover == contracts.HandoverApplied) != (a.HandoverWarning != "") {
				t.Errorf("handover %s (%q), want %s; plan %+v", a.Handover, a.HandoverWarning, want, rec.Steps[0].Plan)
			}
		},
	},
	{
		name: "query-optimization: no change needed", workflow: contracts.WorkflowQueryOptimization, outcome: contracts.VerdictAnswered,
		play: func(d wfDataset) wfPlay {
			return seq(wfCall("inspect_plan", `{"sql":`+js(d.fast)+`,"reason":null,"hypotheticalIndex":null}`),
				cite("The plan already reads through an index: no change is needed.", 0))
		},
	},
}

// TestWorkflowsEndToEnd drives every case on every dataset.
func TestWorkflowsEndToEnd(t *testing.T) {
	s, sets, script := wfDatasets(t)
	c := s.Client("")
	ctx := context.Background()
	for _, d := range sets {
		before := d.unchanged(t)
		for i, wc := range wfCases {
			t.Run(d.conn+"/"+wc.name, func(t *testing.T) {
				tag := fmt.Sprintf("[wf-%s-%d]", d.conn, i)
				script.add(tag, wc.play(d))
				started, err := c.StartRun(ctx, api.StartRunRequest{Objective: tag + " " + wc.name, ConnectionID: d.conn,
					Mode: contracts.ModeAgent, WorkflowType: wc.workflow, AutoExecute: wc.auto})
				if err != nil {
					t.Fatal(err)
				}
				es := stacktest.Follow(t, c, started.RunID)
				wfDumpLedger(t, d.conn, wc.name, es)
				rec := ledger.Fold(started.RunID, es)
				v := rec.GoalVerdict
				if rec.Status != contracts.StatusSucceeded || v == nil || v.Outcome != wc.outcome || !slices.Equal(v.Unmet, append([]string{}, wc.unmet...)) ||
					v.Rule == "agent-investigation.2" {
					t.Fatalf("run ended %s (%s), verdict %+v, want %s %v; steps %s", rec.Status, rec.Detail, v, wc.outcome, wc.unmet, stepLine(rec))
				}
				// The budget is the workflow's own row, never a caller's.
				if want, _ := policy.Budget(wc.workflow); rec.Budget != want {
					t.Errorf("budget %+v, want %+v", rec.Budget, want)
				}
				if wc.check != nil {
					wc.check(t, d, rec, es)
				}
			})
		}
		if after := d.unchanged(t); after != before {
			t.Errorf("%s changed under the workflows", d.conn)
		}
	}
}

func stepLine(rec contracts.Record) string {
	var parts []string
	for _, st := range rec.Steps {
		p := st.Tool + ":" + string(st.Status)
		if st.Refusal != nil {
			p += "(" + string(st.Refusal.Code) + ": " + st.Refusal.Message + ")"
		}
		if st.DBError != nil {
			p += "(" + st.DBError.Message + ")"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// wfDumpLedger writes a run's entries as JSONL into the directory that
// SONDE_DUMP_LEDGERS names, one file per dataset and case, so the example
// ledgers in docs/workflows.md can be regenerated. Unset, it does nothing.
func wfDumpLedger(t *testing.T, conn, name string, es []contracts.Entry) {
	dir := os.Getenv("SONDE_DUMP_LEDGERS")
	if dir == "" {
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("dump ledgers: %v", err)
	}
	var b strings.Builder
	for _, e := range es {
		line, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("dump ledgers: %v", err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	file := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '_'
	}, strings.ToLower(conn+"__"+name)) + ".jsonl"
	if err := os.WriteFile(filepath.Join(dir, file), []byte(b.String()), 0o644); err != nil {
		t.Fatalf("dump ledgers: %v", err)
	}
}
