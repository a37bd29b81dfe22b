package e2e

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// planAnswers are the scripted model's answers per objective, one per turn.
var planAnswers = map[string][]string{
	"good":     {"Here is the statement.\n\n```sqlite\nSELECT c.country, COUNT(*) AS orders\n  FROM orders AS o JOIN customers AS c ON c.id = o.customer_id\n GROUP BY c.country\n ORDER BY orders DESC\n```\n\nIt counts orders per country."},
	"declined": {"NO STATEMENT: the snapshot holds no table of web sessions. Which table records visits?"},
	"prose": {"You should count the orders per country and sort them.",
		"Group the orders by their customer's country; the biggest group wins."},
	"generictag": {"```sql\nSELECT COUNT(*) FROM orders\n```"},
	"prosetag":   {"```text\nSELECT COUNT(*) FROM orders\n```", "```text\nSELECT COUNT(*) FROM orders\n```"},
	"write":      {"```sqlite\nDELETE FROM orders WHERE total_cents = 0\n```\nThis removes the empty orders."},
	"unknown":    {"```sqlite\nSELECT c.nonexistent, s.started_at FROM customers AS c JOIN sessions AS s ON s.customer_id = c.id\n```"},
	// What the guard refuses, each drafted twice (the model insists).
	"cte":        {"```sqlite\nWITH gone AS (DELETE FROM orders RETURNING id) SELECT COUNT(*) FROM gone\n```"},
	"selectinto": {"```sqlite\nSELECT * INTO orders_backup FROM orders\n```"},
	"setval":     {"```sqlite\nSELECT setval('orders_id_seq', 1)\n```"},
	"two":        {"```sqlite\nSELECT COUNT(*) FROM orders; DELETE FROM orders\n```"},
	"top":        {"```tsql\nSELECT TOP 5 country FROM customers\n```"},
	// A draft refused, then repaired after the guard's words.
	"repaired": {"```sqlite\nDELETE FROM orders WHERE total_cents = 0\n```",
		"```sqlite\nSELECT COUNT(*) AS empty_orders FROM orders WHERE total_cents = 0\n```\nCounts them instead; deleting is yours to do."},
	// An operations plan is prose by decision.
	"ops": {"Look at the largest tables first, then at the slowest statements."},
}

// TestPlanningRunsOverTheOpenAIWire drives planning runs through the
// openai-go SDK against a server replaying the provider's wire format: the
// model never receives a tool, its deliverable is read from its final text,
// classified by the guard and checked against the inventory, and nothing it
// drafted reaches the database.
func TestPlanningRunsOverTheOpenAIWire(t *testing.T) {
	var mu sync.Mutex
	var requests []modeltest.ChatRequest
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		mu.Lock()
		requests = append(requests, req)
		mu.Unlock()
		if len(req.Messages) < 2 {
			return modeltest.Reply{Text: "ok"}, nil // a probe
		}
		objective := req.Messages[1].Content
		for key, answers := range planAnswers {
			if strings.Contains(objective, "case "+key+".") {
				return modeltest.Reply{Text: answers[min(req.AssistantTurns(), len(answers)-1)]}, nil
			}
		}
		return modeltest.Reply{Text: "no case"}, nil
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	c := s.Client("")
	run := func(key string, wf contracts.WorkflowType) ([]contracts.Entry, contracts.Record) {
		t.Helper()
		started, err := c.StartRun(context.Background(), api.StartRunRequest{
			Objective: "case " + key + ". Which country buys the most?", ConnectionID: "demo",
			Mode: contracts.ModePlanning, WorkflowType: wf})
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if started.Mode != contracts.ModePlanning {
			t.Fatalf("%s: persisted mode %s", key, started.Mode)
		}
		es := stacktest.Follow(t, c, started.RunID)
		return es, ledger.Fold(started.RunID, es)
	}
	plansOf := func(es []contracts.Entry) []*contracts.PlanStatementDrafted {
		var out []*contracts.PlanStatementDrafted
		for _, e := range es {
			if e.Kind == contracts.KindPlanStatementDrafted {
				v, _ := e.Decode()
				out = append(out, v.(*contracts.PlanStatementDrafted))
			}
		}
		return out
	}
	planOf := func(es []contracts.Entry) *contracts.PlanStatementDrafted {
		if ps := plansOf(es); len(ps) > 0 {
			return ps[0]
		}
		return nil
	}
	// lastUser is the last message of the request case key's run sent on
	// turn n (1-based).
	lastUser := func(t *testing.T, key string, n int) string {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		for _, r := range requests {
			if len(r.Messages) > 1 && strings.Contains(r.Messages[1].Content, "case "+key+".") && r.AssistantTurns() == n-1 {
				return r.Messages[len(r.Messages)-1].Content
			}
		}
		t.Fatalf("no turn %d request of case %s", n, key)
		return ""
	}
	verdict := func(t *testing.T, rec contracts.Record, outcome contracts.VerdictOutcome, unmet ...string) {
		t.Helper()
		v := rec.GoalVerdict
		if v == nil || v.Rule != "agent-planning.2" || v.Outcome != outcome || strings.Join(v.Unmet, ",") != strings.Join(unmet, ",") {
			t.Fatalf("verdict %+v, want %s %v", v, outcome, unmet)
		}
	}

	t.Run("good statement", func(t *testing.T) {
		es, rec := run("good", "")
		k := kinds(es)
		if k[0] != "run-started" || k[2] != "context-captured" {
			t.Fatalf("ledger %v: a planning run is grounded before its first turn", k)
		}
		p := planOf(es)
		if p == nil || !strings.HasPrefix(p.SQL, "SELECT c.country") || p.Dialect != contracts.EngineSQLite || !p.ReadOnly || p.Refusal != nil {
			t.Fatalf("plan %+v", p)
		}
		if p.Identifiers.Status != contracts.IdentifiersChecked || len(p.Identifiers.UnknownRelations)+len(p.Identifiers.UnknownColumns) != 0 {
			t.Fatalf("identifier check %+v", p.Identifiers)
		}
		if rec.Status != contracts.StatusSucceeded || rec.StopReason != contracts.StopModelStopped || len(rec.Steps) != 0 {
			t.Fatalf("status %s stop %s steps %d", rec.Status, rec.StopReason, len(rec.Steps))
		}
		verdict(t, rec, contracts.VerdictAnswered)
	})
	t.Run("NO STATEMENT", func(t *testing.T) {
		es, rec := run("declined", "")
		if planOf(es) != nil {
			t.Fatal("a refusal recorded a statement")
		}
		verdict(t, rec, contracts.VerdictAnswered)
	})
	t.Run("prose without a block", func(t *testing.T) {
		_, rec := run("prose", "")
		if rec.Spent.Turns != 2 {
			t.Fatalf("turns %d: the model is reminded once", rec.Spent.Turns)
		}
		verdict(t, rec, contracts.VerdictUnanswered, "no-statement")
	})
	t.Run("generic tag", func(t *testing.T) {
		es, rec := run("generictag", "")
		p := planOf(es)
		if p == nil || p.SQL != "SELECT COUNT(*) FROM orders" || !p.ReadOnly || !strings.Contains(p.Note, "tagged sql") {
			t.Fatalf("plan %+v: the only SQL block, fenced as sql, is the deliverable", p)
		}
		verdict(t, rec, contracts.VerdictAnswered)
	})
	t.Run("prose tag", func(t *testing.T) {
		es, rec := run("prosetag", "")
		if planOf(es) != nil {
			t.Fatal("a block fenced as text was read as the deliverable")
		}
		verdict(t, rec, contracts.VerdictUnanswered, "no-statement")
	})
	t.Run("write statement", func(t *testing.T) {
		before := orders(t, s.DBPath)
		es, rec := run("write", "")
		p := planOf(es)
		if p == nil || p.ReadOnly || p.Refusal == nil || p.Refusal.Code != contracts.RefuseNotASelect || p.Refusal.Fix == "" {
			t.Fatalf("plan %+v: a write is recorded with the guard's refusal", p)
		}
		if n := len(plansOf(es)); n != 2 || rec.Spent.Turns != 2 {
			t.Fatalf("%d drafts in %d turns: a refused draft gets one repair turn, then is judged", n, rec.Spent.Turns)
		}
		verdict(t, rec, contracts.VerdictUnanswered, "plan-refused")
		if after := orders(t, s.DBPath); after != before || len(rec.Steps) != 0 {
			t.Fatalf("invoices %d before, %d after, %d steps: the drafted write reached the database", before, after, len(rec.Steps))
		}
		repair := lastUser(t, "write", 2)
		if !strings.Contains(repair, "Refused (not_a_select): ") || !strings.Contains(repair, "Fix: ") || !strings.Contains(repair, "Answer once more") {
			t.Fatalf("the repair turn does not show the guard's refusal:\n%s", repair)
		}
	})
	t.Run("unknown table and column", func(t *testing.T) {
		es, rec := run("unknown", "")
		p := planOf(es)
		if p == nil {
			t.Fatal("no plan recorded")
		}
		got := strings.Join(append(p.Identifiers.UnknownRelations, p.Identifiers.UnknownColumns...), " ")
		if !strings.Contains(got, `"main"."sessions"`) || !strings.Contains(got, `"main"."customers"."nonexistent"`) || !p.Identifiers.ColumnsChecked {
			t.Fatalf("identifier check %+v does not list the unknown table and column", p.Identifiers)
		}
		if strings.Contains(got, "started_at") {
			t.Fatalf("identifier check %+v lists a column of the unknown table: it is reported once, as the table", p.Identifiers)
		}
		// SQLite compiles the statement to read it, and fails on the
		// unknown names: the guard refuses it too.
		verdict(t, rec, contracts.VerdictUnanswered, "plan-refused", "unknown-names")
		repair := lastUser(t, "unknown", 2)
		if !strings.Contains(repair, `"main"."sessions"`) || !strings.Contains(repair, `instead of "main"."customers"."nonexistent": one of its columns, "id", "name"`) {
			t.Fatalf("the repair turn does not name the unknown names and what the snapshot holds:\n%s", repair)
		}
	})
	// Every other shape the guard refuses ends unanswered the same way,
	// after one repair turn that shows the refusal.
	for _, key := range []string{"cte", "selectinto", "setval", "two", "top"} {
		t.Run("refused "+key, func(t *testing.T) {
			es, rec := run(key, "")
			ps := plansOf(es)
			if len(ps) != 2 || ps[1].Refusal == nil || ps[1].ReadOnly {
				t.Fatalf("drafts %+v: the guard refuses the draft, twice", ps)
			}
			if v := rec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictUnanswered || !slices.Contains(v.Unmet, "plan-refused") {
				t.Fatalf("verdict %+v, want unanswered plan-refused", v)
			}
			if repair := lastUser(t, key, 2); !strings.Contains(repair, "Refused ("+string(ps[0].Refusal.Code)+"): ") {
				t.Fatalf("the repair turn does not show the refusal %s:\n%s", ps[0].Refusal.Code, repair)
			}
		})
	}
	t.Run("repaired", func(t *testing.T) {
		es, rec := run("repaired", "")
		if ps := plansOf(es); len(ps) != 2 || ps[0].Refusal == nil || !ps[1].ReadOnly {
			t.Fatalf("drafts %+v", ps)
		}
		verdict(t, rec, contracts.VerdictAnswered)
	})
	t.Run("operations plan is prose", func(t *testing.T) {
		_, rec := run("ops", contracts.WorkflowOperations)
		verdict(t, rec, contracts.VerdictAnswered)
	})

	// No planning request carried a tool, and the snapshot names no tool.
	mu.Lock()
	defer mu.Unlock()
	for _, r := range requests {
		if len(r.Messages) < 2 {
			continue
		}
		if len(r.Tools) != 0 {
			t.Fatalf("a planning turn was sent %d tools", len(r.Tools))
		}
		if strings.Contains(r.Messages[2].Content, "inspect_schema") || strings.Contains(r.Messages[0].Content, "inspect_schema") {
			t.Fatal("a planning prompt names a tool")
		}
	}
}

// orders counts the demo database's orders, read-only.
func orders(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	n := 0
	if err := db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
