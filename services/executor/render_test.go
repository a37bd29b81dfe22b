package executor

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/exectext"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
	"github.com/sondehq/sonde/services/executor/connections"
)

// What the model is shown of one result is bounded by the request's
// ShowBytes (issue 18, item 6): whole rows or lines only, the first in
// order, a server line saying how many of how many are shown, the fence
// intact, and the stored artifact whole.

// wideSQLite writes a real SQLite file holding a 200-row table of wide
// text (about 950 bytes a row, 190 KB in all), 80 tables with long names
// (an operational reading of many rows), a table of 24 long-named columns
// (a wide profile), and a row of corpus forgeries per fence case.
func wideSQLite(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wide.db")
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stmts := []string{"BEGIN", "CREATE TABLE wide (id INTEGER PRIMARY KEY, a TEXT, b TEXT, c TEXT)"}
	for i := 1; i <= 200; i++ {
		v := strings.Repeat(fmt.Sprintf("row %03d says something long; ", i), 10)
		stmts = append(stmts, fmt.Sprintf("INSERT INTO wide VALUES (%d, %s, %s, %s)", i, quoteText(v), quoteText(v), quoteText(v)))
	}
	for i := range 80 {
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE ledger_of_the_quarterly_regional_settlements_%02d (n INTEGER)", i))
	}
	var cols []string
	for i := range 24 {
		cols = append(cols, fmt.Sprintf("measurement_of_the_customer_satisfaction_survey_answer_%02d TEXT", i))
	}
	stmts = append(stmts, "CREATE TABLE survey ("+strings.Join(cols, ", ")+")")
	stmts = append(stmts, "CREATE TABLE hostile (a TEXT)")
	for _, h := range fencetest.Corpus() {
		x, y := fencetest.Halves(h)
		stmts = append(stmts, fmt.Sprintf("INSERT INTO hostile VALUES (%s), (%s), (%s)", quoteText(h+strings.Repeat(" pad", 40)), quoteText(x), quoteText(y)))
	}
	stmts = append(stmts, "COMMIT")
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return path
}

// shownLine is the server's sentence for a cut rendering.
var shownLine = regexp.MustCompile(`Showing (\d+) of (\d+) ([a-z ]+) \((\d+) of (\d+) bytes\), the first in order, so that it fits the model's context; the whole (\w+) is stored and citable as (\S+);`)

// fenced returns the text between the fence's opener line and its closer.
func fenced(t *testing.T, text string) string {
	t.Helper()
	open := strings.Index(text, fence.Open)
	nl := strings.Index(text[open:], "\n")
	end := strings.LastIndex(text, fence.Close)
	if open < 0 || nl < 0 || end < 0 {
		t.Fatalf("no fence in:\n%s", text)
	}
	return text[open+nl+1 : end]
}

// TestAWideResultIsShownWithinTheShowBudget: a 200-row wide text result
// (about 190 KB) read for a model shown 2,048 bytes of a result (what a
// 32k-token model gets) comes back within 2,048 bytes: its first whole rows
// in order, the server's line saying how many of how many rows and bytes
// are shown and that the whole result is stored and citable by its id, one
// fence; the stored artifact keeps all 200 rows. With no bound the whole
// result is shown, as before.
func TestAWideResultIsShownWithinTheShowBudget(t *testing.T) {
	store := memStore{}
	s := newService(t, Config{Artifacts: store, Connections: []connections.Connection{{ID: "wide", Engine: contracts.EngineSQLite, Path: wideSQLite(t)}}})
	req := contracts.ExecRequest{RunID: "run-1", StepID: "s1", CorrelationID: "r3", ConnectionID: "wide", Profile: contracts.ProfileAgentReadOnly,
		SQL: "SELECT id, a, b, c FROM wide ORDER BY id", TimeoutMs: 5000}
	whole := s.shownExec(context.Background(), contracts.OpRead, req)
	if whole.Status != contracts.ExecOK || len(whole.Text) < 150_000 || shownLine.MatchString(whole.Text) {
		t.Fatalf("unbounded read: %s, %d bytes of text (want the whole ~190 KB, nothing cut)", whole.Status, len(whole.Text))
	}
	wholeLines := strings.Split(fenced(t, whole.Text), "\n")

	for _, show := range []int{2048, 8 << 10, 700} {
		req.ShowBytes, req.StepID = show, fmt.Sprint("s", show)
		reply := s.shownExec(context.Background(), contracts.OpRead, req)
		if reply.Status != contracts.ExecOK {
			t.Fatalf("show %d: %+v", show, reply)
		}
		if len(reply.Text) > show && show >= 1024 {
			t.Errorf("show %d: the text is %d bytes, over its bound:\n%s", show, len(reply.Text), reply.Text)
		}
		if err := fencetest.Check(reply.Text, 1); err != nil {
			t.Errorf("show %d: %v", show, err)
		}
		m := shownLine.FindStringSubmatch(reply.Text)
		if m == nil {
			t.Fatalf("show %d: no line says what is shown:\n%s", show, reply.Text)
		}
		n, _ := strconv.Atoi(m[1])
		if m[2] != "200" || m[3] != "rows" || m[6] != "result" || m[7] != "r3" {
			t.Errorf("show %d: the line says %q", show, m[0])
		}
		if !strings.Contains(reply.Text, "aggregate or narrow the statement to see the rest") {
			t.Errorf("show %d: no fix:\n%s", show, reply.Text)
		}
		// Whole rows, the first n in order, each exactly as the whole
		// rendering has it.
		lines := strings.Split(strings.TrimSuffix(fenced(t, reply.Text), "\n"), "\n")
		if len(lines) != n+1 {
			t.Fatalf("show %d: %d lines fenced, want the header and the %d rows the line names", show, len(lines), n)
		}
		for i, l := range lines {
			if l != wholeLines[i] {
				t.Errorf("show %d: line %d is %q, want %q", show, i, l, wholeLines[i])
			}
		}
		shown, _ := strconv.Atoi(m[4])
		all, _ := strconv.Atoi(m[5])
		if want := len(strings.Join(wholeLines[1:n+1], "\n")) + 1; n > 0 && shown != want || all < 150_000 {
			t.Errorf("show %d: bytes %d of %d, want %d of the whole", show, shown, all, want)
		}
		if show == 2048 && n == 0 || show == 700 && n != 0 {
			t.Errorf("show %d: %d rows shown", show, n)
		}
		if show == 700 && !strings.Contains(reply.Text, "Even the first line alone is too long") {
			t.Errorf("show 700: a result whose first row does not fit does not say so:\n%s", reply.Text)
		}
		art := store[contracts.ArtifactKey("run-1", "r3")]
		if len(art.Data) != 200 || reply.Artifact.Rows != 200 {
			t.Errorf("show %d: the artifact holds %d rows (summary %d), want all 200", show, len(art.Data), reply.Artifact.Rows)
		}
	}
}

// TestCutRenderingsHoldTheFence: rows that forge the fence's markers, cut
// anywhere by the bound, still leave one fence and no marker inside it.
func TestCutRenderingsHoldTheFence(t *testing.T) {
	s := newService(t, Config{Connections: []connections.Connection{{ID: "wide", Engine: contracts.EngineSQLite, Path: wideSQLite(t)}}})
	for show := 400; show <= 6000; show += 350 {
		req := contracts.ExecRequest{RunID: "run-1", StepID: fmt.Sprint("s", show), ConnectionID: "wide", Profile: contracts.ProfileAgentReadOnly,
			SQL: "SELECT a FROM hostile LIMIT 200", TimeoutMs: 5000, ShowBytes: show}
		reply := s.shownExec(context.Background(), contracts.OpRead, req)
		if reply.Status != contracts.ExecOK {
			t.Fatalf("%+v", reply)
		}
		if err := fencetest.Check(reply.Text, 1); err != nil {
			t.Errorf("show %d: %v\n%s", show, err, reply.Text)
		}
		if !shownLine.MatchString(reply.Text) {
			t.Errorf("show %d: the hostile rows were not cut:\n%s", show, reply.Text)
		}
	}
}

// TestPlansReadingsAndProfilesAreShownWithinTheShowBudget: a plan of many
// lines, an operational reading of 80 rows and a profile of 24 long-named
// columns, each larger than the bound, come back within it with the
// server's line; the plan keeps its summary, the profile says how to see
// the columns not shown.
func TestPlansReadingsAndProfilesAreShownWithinTheShowBudget(t *testing.T) {
	store := memStore{}
	s := newService(t, Config{Artifacts: store, Connections: []connections.Connection{{ID: "wide", Engine: contracts.EngineSQLite, Path: wideSQLite(t)}}})
	var union []string
	for i := range 60 {
		union = append(union, fmt.Sprintf("SELECT id FROM wide WHERE a LIKE '%%%d%%'", i))
	}
	const show = 1500
	cases := []struct {
		name  string
		op    contracts.ExecOp
		req   contracts.ExecRequest
		what  string
		thing string
		also  string
	}{
		{"plan", contracts.OpExplain, contracts.ExecRequest{Profile: contracts.ProfileAgentReadOnly, SQL: strings.Join(union, " UNION ALL ")},
			"plan lines", "plan", "Summary:\n"},
		{"reading", contracts.OpOperations, contracts.ExecRequest{Profile: contracts.ProfileAgentOperations, Kind: contracts.OpsTableStats},
			"rows", "reading", exectext.MomentNotHistory},
		{"profile", contracts.OpProfile, contracts.ExecRequest{Profile: contracts.ProfileAgentReadOnly, Table: "survey", Depth: contracts.DepthDistribution},
			"lines of columns and findings", "profile", `Not shown here: the columns from fromColumn on; profile them with profile_table {"depth":"distribution","fromColumn":"measurement_of_the_customer_satisfaction_survey_answer_`},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.req
			r.RunID, r.StepID, r.CorrelationID, r.ConnectionID, r.TimeoutMs = "run-1", c.name, fmt.Sprint("r", i+1), "wide", 5000
			whole := s.shownExec(context.Background(), c.op, r)
			if whole.Status != contracts.ExecOK || len(whole.Text) <= show {
				t.Fatalf("unbounded: %s, %d bytes (the case must exceed %d): %+v", whole.Status, len(whole.Text), show, whole.Refusal)
			}
			r.ShowBytes, r.StepID = show, c.name+"-shown"
			reply := s.shownExec(context.Background(), c.op, r)
			if reply.Status != contracts.ExecOK || len(reply.Text) > show {
				t.Fatalf("%s, %d bytes, want within %d:\n%s", reply.Status, len(reply.Text), show, reply.Text)
			}
			if err := fencetest.Check(reply.Text, 1); err != nil {
				t.Error(err)
			}
			m := shownLine.FindStringSubmatch(reply.Text)
			if m == nil || m[3] != c.what || m[6] != c.thing || m[7] != r.CorrelationID || m[1] == "0" {
				t.Fatalf("the line says %q:\n%s", m, reply.Text)
			}
			if !strings.Contains(reply.Text, c.also) {
				t.Errorf("the text lost %q:\n%s", c.also, reply.Text)
			}
			// Every fenced line shown is a line of the whole rendering, in order.
			all := fenced(t, whole.Text)
			at := 0
			for _, l := range strings.Split(strings.TrimSuffix(fenced(t, reply.Text), "\n"), "\n") {
				if strings.HasPrefix(l, "Not shown here:") {
					continue
				}
				k := strings.Index(all[at:], l+"\n")
				if k < 0 {
					t.Fatalf("line %q is not a whole line of the full rendering after offset %d", l, at)
				}
				at += k + len(l) + 1
			}
		})
	}
}

// TestSchemaReadsAreShownWithinTheShowBudget: a listing of 80 tables comes
// back as pages within the model's share, each saying how to ask for the
// next; several tables that do not fit the share together are listed, not
// described; one table asked for is described whole.
func TestSchemaReadsAreShownWithinTheShowBudget(t *testing.T) {
	s := newService(t, Config{Connections: []connections.Connection{{ID: "wide", Engine: contracts.EngineSQLite, Path: wideSQLite(t)}}})
	const show = 2048
	ask := func(step string, r contracts.ExecRequest) shownReply {
		r.RunID, r.StepID, r.CorrelationID, r.ConnectionID, r.Profile, r.TimeoutMs, r.ShowBytes = "run-1", step, "r1", "wide", contracts.ProfileAgentReadOnly, 5000, show
		reply := s.shownExec(context.Background(), contracts.OpSchema, r)
		if reply.Status != contracts.ExecOK {
			t.Fatalf("%s: %+v", step, reply)
		}
		if err := fencetest.Check(reply.Text, 1); err != nil {
			t.Errorf("%s: %v", step, err)
		}
		return reply
	}
	all := ask("all", contracts.ExecRequest{})
	if len(all.Text) > show || !strings.Contains(all.Text, "ask for the next page with inspect_schema {\"after\":") {
		t.Errorf("the listing is %d bytes (share %d) or names no next page:\n%s", len(all.Text), show, all.Text)
	}
	several := ask("several", contracts.ExecRequest{Pattern: "ledger_of_the_quarterly_regional_settlements_0*"})
	if len(several.Text) > show || !strings.Contains(several.Text, "this page lists 10 of them") {
		t.Errorf("ten tables were described past the share (%d bytes):\n%s", len(several.Text), several.Text)
	}
	one := ask("one", contracts.ExecRequest{Table: "survey"})
	if !strings.Contains(one.Text, "1 relation described") {
		t.Errorf("one table asked for was not described:\n%s", one.Text)
	}
}
