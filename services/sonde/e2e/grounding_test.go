package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // pgtest.ManyTables connects through database/sql

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/pgtest"
	"github.com/sondehq/sonde/pkg/sqlitegen"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

var artifactRef = regexp.MustCompile(`\{"source":"artifact","correlationId":"[^"]+"\}`)

// groundingCase is one production-sized connection: how its tables are
// named, which of them a run may read.
type groundingCase struct {
	conn   string
	engine contracts.Engine
	// names lists the readable tables, in the order a script tries them.
	names []string
	// hidden is a table the readable patterns hide.
	hidden string
}

// unpacked is the first readable table the snapshot does not name.
func (g groundingCase) unpacked(snapshot string, skip string) string {
	for _, n := range g.names {
		if n != skip && !strings.Contains(snapshot, `"`+n+`"`) {
			return n
		}
	}
	return ""
}

// groundingScript plays the model for both connections, told apart by the
// objective: an agent run asks inspect_schema for a table the snapshot did
// not name, by name and by pattern, then reports citing the snapshot and
// both results; a planning run drafts a statement over a named table.
func groundingScript(cases map[string]groundingCase) modeltest.Script {
	return modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if len(req.Messages) < 2 {
			return modeltest.Reply{Text: "ok"}, nil
		}
		first := req.Messages[1].Content
		if len(req.Messages) > 2 {
			first += "\n" + req.Messages[2].Content // the objective, then the context the server read
		}
		var g groundingCase
		for key, c := range cases {
			if strings.Contains(first, "["+key+"]") {
				g = c
			}
		}
		if g.conn == "" {
			return modeltest.Reply{Text: "no case"}, nil
		}
		if len(req.Tools) == 0 {
			named := ""
			for _, n := range g.names {
				if strings.Contains(first, `"`+n+`"`) {
					named = n
					break
				}
			}
			return modeltest.Reply{Text: fmt.Sprintf("```%s\nSELECT code, amount FROM %s WHERE id = 1\n```", g.engine, named)}, nil
		}
		byName := g.unpacked(first, "")
		byPattern := g.unpacked(first, byName)
		switch req.AssistantTurns() {
		case 0:
			return call("a", "inspect_schema", map[string]string{"table": strings.ToUpper(byName)}), nil
		case 1:
			return call("b", "inspect_schema", map[string]string{"pattern": "*" + byPattern[len(byPattern)-5:]}), nil
		case 2:
			return call("c", "inspect_schema", map[string]string{"table": g.hidden}), nil
		}
		var refs []contracts.EvidenceRef
		texts := []string{first}
		for _, m := range req.ToolMessages() {
			texts = append(texts, m.Content)
		}
		for _, text := range texts {
			if ref := artifactRef.FindString(text); ref != "" {
				var e contracts.EvidenceRef
				_ = json.Unmarshal([]byte(ref), &e)
				refs = append(refs, e)
			}
		}
		return call("r", "compose_report", map[string]any{"claims": []contracts.Claim{{Text: "the tables exist", Evidence: refs}}}), nil
	})
}

func call(id, tool string, args any) modeltest.Reply {
	b, _ := json.Marshal(args)
	return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: id, Name: tool, Arguments: string(b)}}}
}

// TestGroundingOnProductionSizedSchemas: on a 2,000-table PostgreSQL schema
// (views, a materialized view, foreign keys, tables never analysed) and a
// 600-table SQLite file, an agent run and a planning run are both grounded;
// the snapshot names what fits and counts what it left out; inspect_schema
// reaches a table the snapshot did not name, by name and by pattern; the
// readable patterns hold throughout; and the capture costs each engine's
// fixed number of statements.
func TestGroundingOnProductionSizedSchemas(t *testing.T) {
	ctx := context.Background()
	sqlitePath := filepath.Join(t.TempDir(), "big.sqlite")
	if err := sqlitegen.Generate(ctx, sqlitePath, sqlitegen.Spec{Tables: 600, ViewEvery: 10, Rows: 2, Analyze: true}); err != nil {
		t.Fatal(err)
	}
	// The tables of one name stem (every twentieth) are hidden.
	hiddenStem, _, _ := strings.Cut(sqlitegen.TableName(19), "_")
	var liteNames, liteReadable []string
	for i := range 600 {
		n := sqlitegen.TableName(i)
		stem, _, _ := strings.Cut(n, "_")
		if stem == hiddenStem {
			continue
		}
		liteNames = append(liteNames, n)
		if i < 20 {
			liteReadable = append(liteReadable, "main."+stem+"_*")
		}
	}
	liteReadable = append(liteReadable, "main.v_*")
	cases := map[string]groundingCase{
		"lite": {conn: "big-sqlite", engine: contracts.EngineSQLite, names: liteNames, hidden: sqlitegen.TableName(19)},
	}
	pgURL := os.Getenv("SONDE_TEST_PG_URL")
	var pgNames []string
	for i := 1; i <= 2000; i += 2 {
		pgNames = append(pgNames, fmt.Sprintf("t_%05d", i)) // odd tables live in public
	}
	if pgURL != "" {
		cases["pg"] = groundingCase{conn: "big-pg", engine: contracts.EnginePostgres, names: pgNames, hidden: "sales.t_00002"}
	} else if os.Getenv("SONDE_TEST_PG_REQUIRED") != "" {
		t.Fatal("SONDE_TEST_PG_URL is not set and PostgreSQL tests are required")
	}

	s := stacktest.Start(t, stacktest.Options{Script: groundingScript(cases), Executor: func(c *executor.Config) {
		c.Connections = append(c.Connections, connections.Connection{ID: "big-sqlite", Engine: contracts.EngineSQLite, Path: sqlitePath,
			Readable: liteReadable})
	}})
	if pgURL != "" {
		dsn := pgtest.ManyTables(ctx, t, pgURL, 2000)
		ex, err := executor.New(executor.Config{Engine: contracts.EnginePostgres, Logger: s.Logger, Connections: []connections.Connection{
			{ID: "big-pg", Engine: contracts.EnginePostgres, DSN: dsn, Readable: []string{"public.*"}}},
			NATS: s.NATS.Connect()})
		if err != nil {
			t.Fatal(err)
		}
		if err := ex.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	}
	c := s.Client("")

	for key, g := range cases {
		t.Run(key, func(t *testing.T) {
			agent, err := c.StartRun(ctx, api.StartRunRequest{Objective: "[" + key + "] which codes have the largest amounts?", ConnectionID: g.conn})
			if err != nil {
				t.Fatal(err)
			}
			es := stacktest.Follow(t, c, agent.RunID)
			rec := ledger.Fold(agent.RunID, es)
			cc := capturedOf(t, es)
			if cc.Packed == 0 || cc.Packed >= cc.Total || cc.Total < len(g.names) {
				t.Fatalf("snapshot named %d of %d relations", cc.Packed, cc.Total)
			}
			if want := fmt.Sprintf("%d further relations exist and are not named here; read them with inspect_schema", cc.Total-cc.Packed); !strings.Contains(cc.Text, want) {
				t.Fatalf("omission notice %q missing from the snapshot", want)
			}
			if cc.Unreadable == 0 || !strings.Contains(cc.Text, fmt.Sprintf("%d more relations are outside this connection's readable patterns", cc.Unreadable)) {
				t.Fatalf("the snapshot does not count the %d hidden relations", cc.Unreadable)
			}
			if strings.Contains(cc.Text, `"`+strings.TrimPrefix(g.hidden, "sales.")+`"`) || strings.Contains(cc.Text, `"sales"`) {
				t.Fatal("the snapshot names a relation the readable patterns hide")
			}
			want := map[contracts.Engine]int{contracts.EnginePostgres: 2, contracts.EngineSQLite: 6}[g.engine]
			if cc.Statements != want {
				t.Fatalf("the capture cost %d statements, want %d", cc.Statements, want)
			}

			results := toolResults(es)
			if len(results) != 3 {
				t.Fatalf("tool results %d: %v", len(results), kinds(es))
			}
			byName := g.unpacked(cc.Text, "")
			byPattern := g.unpacked(cc.Text, byName)
			if !strings.Contains(results[0], `"`+byName+`" — `) || !strings.Contains(results[0], `"parent_id"`) {
				t.Fatalf("inspect_schema by name did not describe %s:\n%s", byName, results[0])
			}
			if !strings.Contains(results[1], `"`+byPattern+`"`) {
				t.Fatalf("inspect_schema by pattern did not reach %s:\n%s", byPattern, results[1])
			}
			if !strings.Contains(results[2], "no readable relation matches") {
				t.Fatalf("inspect_schema described a hidden table:\n%s", results[2])
			}
			if rec.Status != contracts.StatusSucceeded || rec.GoalVerdict == nil || rec.GoalVerdict.Outcome != contracts.VerdictAnswered {
				t.Fatalf("agent run %s, verdict %+v, steps %+v", rec.Status, rec.GoalVerdict, rec.Steps)
			}

			plan, err := c.StartRun(ctx, api.StartRunRequest{Objective: "[" + key + "] which codes have the largest amounts?",
				ConnectionID: g.conn, Mode: contracts.ModePlanning})
			if err != nil {
				t.Fatal(err)
			}
			pes := stacktest.Follow(t, c, plan.RunID)
			prec := ledger.Fold(plan.RunID, pes)
			pc := capturedOf(t, pes)
			if pc.InventoryRunID != agent.RunID || pc.Statements != 0 || strings.Contains(pc.Text, "inspect_schema") {
				t.Fatalf("planning snapshot: reused from %q at %d statements (want %s, 0), names a tool: %v",
					pc.InventoryRunID, pc.Statements, agent.RunID, strings.Contains(pc.Text, "inspect_schema"))
			}
			if p := prec.Plan; p == nil || !p.ReadOnly || p.Identifiers.Status != contracts.IdentifiersChecked ||
				len(p.Identifiers.UnknownRelations)+len(p.Identifiers.UnknownColumns) != 0 {
				t.Fatalf("plan %+v", prec.Plan)
			}
			if v := prec.GoalVerdict; v == nil || v.Outcome != contracts.VerdictAnswered {
				t.Fatalf("planning verdict %+v", v)
			}
		})
	}
}

func capturedOf(t *testing.T, es []contracts.Entry) contracts.ContextCaptured {
	t.Helper()
	for _, e := range es {
		if e.Kind == contracts.KindContextCaptured {
			v, _ := e.Decode()
			return *v.(*contracts.ContextCaptured)
		}
		if e.Kind == contracts.KindContextUnavailable {
			v, _ := e.Decode()
			t.Fatalf("context unavailable: %+v", v)
		}
	}
	t.Fatalf("no capture: %v", kinds(es))
	return contracts.ContextCaptured{}
}

func toolResults(es []contracts.Entry) []string {
	var out []string
	for _, e := range es {
		if e.Kind == contracts.KindToolCompleted {
			v, _ := e.Decode()
			out = append(out, v.(*contracts.ToolCompleted).Content)
		}
	}
	return out
}
