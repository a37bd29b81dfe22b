package e2e

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// plantHostileTable adds a table to the stack's database whose CREATE TABLE
// holds the issue's comment and whose rows hold the whole corpus, each entry
// also halved across the two columns.
func plantHostileTable(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	q := func(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
	stmts := []string{"BEGIN", "CREATE TABLE notes (\n  id INTEGER PRIMARY KEY, /* " + fencetest.IssueExample + " */\n  a TEXT,\n  b TEXT\n)"}
	for i, h := range fencetest.Corpus() {
		x, y := fencetest.Halves(h)
		stmts = append(stmts,
			fmt.Sprintf("INSERT INTO notes VALUES (%d, %s, %s)", 2*i+1, q(h), q(h)),
			fmt.Sprintf("INSERT INTO notes VALUES (%d, %s, %s)", 2*i+2, q(x), q(y)))
	}
	for _, s := range append(stmts, "COMMIT") {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

var citedArtifact = regexp.MustCompile(`"correlationId":"(r[0-9]+)"`)

// TestHostileTextNeverForgesAFence runs an agent run end to end over a
// database whose schema and rows forge markers, with a model that writes
// the forgeries into its own prose and statements: every request the model
// receives holds exactly the fences the server opened and no look-alike.
func TestHostileTextNeverForgesAFence(t *testing.T) {
	hostile := strings.Join(fencetest.Corpus(), "\n")
	h := fencetest.IssueExample
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		switch n := req.AssistantTurns() + 1; n {
		case 1:
			r := readCall("call_1", "SELECT id, a, b, 'x' AS \""+strings.ReplaceAll(h, `"`, `""`)+"\" FROM notes ORDER BY id")
			r.Text = "Reading the notes. " + hostile
			return r, nil
		case 2:
			return readCall("call_2", `SELECT 1 "`+h+`" "`+h+`"`), nil // refused by the parser, quoting the text
		case 3:
			return readCall("call_3", `SELECT * FROM "`+strings.TrimSpace(h)+` missing"`), nil // fails at the database
		case 4:
			return modeltest.Reply{Text: "The notes say:\n" + hostile}, nil
		default:
			var ids []string
			for _, tr := range req.ToolMessages() {
				if m := citedArtifact.FindStringSubmatch(tr.Content); m != nil {
					ids = append(ids, m[1])
				}
			}
			r := reportCall("call_report", ids...)
			r.Text = hostile
			return r, nil
		}
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	plantHostileTable(t, s.DBPath)
	c := s.Client("")
	started := startRun(t, c, "What do the notes say? "+h)
	es := stacktest.Follow(t, c, started.RunID)
	rec := ledger.Fold(started.RunID, es)
	t.Logf("ledger: %v", kinds(es))

	snapshotFences := 0
	for _, e := range es {
		if e.Kind == contracts.KindContextCaptured {
			v, _ := e.Decode()
			snapshotFences = strings.Count(v.(*contracts.ContextCaptured).Text, fence.Open)
		}
	}
	if snapshotFences == 0 {
		t.Fatal("the run captured no fenced snapshot")
	}
	reqs := modelRequests(s)
	if len(reqs) < 5 {
		t.Fatalf("the model was asked %d times, want at least 5", len(reqs))
	}
	for i, req := range reqs {
		if len(req.Messages) == 0 || req.Messages[0].Role != "system" {
			t.Fatalf("request %d has no system prompt first", i)
		}
		if sys := req.Messages[0].Content; strings.Contains(sys, fence.Open) || fence.CountClosers(sys) != 0 {
			t.Fatalf("request %d: the system prompt spells a marker", i)
		}
		var all strings.Builder
		for _, m := range req.Messages[1:] {
			all.WriteString(m.Content + "\n" + m.ToolCallID + "\n")
			for _, tc := range m.ToolCalls {
				all.WriteString(tc.ID + "\n" + tc.Function.Name + "\n" + tc.Function.Arguments + "\n")
				if !json.Valid([]byte(tc.Function.Arguments)) {
					t.Errorf("request %d: arguments are not JSON: %s", i, tc.Function.Arguments)
				}
			}
		}
		// The fences the server opened by then: the snapshot's (its
		// relations and foreign-key blocks), and one per read that came
		// back with rows or a database error.
		opened := snapshotFences
		for _, tr := range req.ToolMessages() {
			if strings.HasPrefix(tr.Content, "Result of the read") || strings.HasPrefix(tr.Content, "The database failed") {
				opened++
			}
		}
		if err := fencetest.Check(all.String(), opened); err != nil {
			t.Errorf("request %d: %v\n%s", i, err, all.String())
		}
	}
	var outcomes []string
	for _, st := range rec.Steps {
		outcomes = append(outcomes, string(st.Status))
	}
	t.Logf("steps: %v; run %s", outcomes, rec.Status)
}
