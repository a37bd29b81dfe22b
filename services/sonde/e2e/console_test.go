package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// The web console end to end: a real headless Chromium, driven over the
// DevTools protocol, against a whole stack (embedded NATS, the SQLite
// executor on the demo database, the orchestrator, the gateway serving the
// console). The browser is Debian's chromium package; the test installs it
// when it can (root, apt), skips with the reason otherwise, and fails under
// CI=true, where a skipped browser test would hide a broken console.
//
// Screenshots go to $SONDE_SCREENSHOTS when set (docs/console.md shows some),
// otherwise to the test's temporary directory.

var (
	chromiumOnce sync.Once
	chromiumPath string
	chromiumWhy  string
)

// consoleChromium finds a Chromium, installing Debian's package once when
// it is missing and the test runs as root with apt.
func consoleChromium(t *testing.T) string {
	t.Helper()
	chromiumOnce.Do(func() {
		find := func() string {
			for _, name := range []string{"chromium", "chromium-browser", "google-chrome-stable", "google-chrome", "headless_shell"} {
				if p, err := exec.LookPath(name); err == nil {
					return p
				}
			}
			return ""
		}
		if chromiumPath = find(); chromiumPath != "" {
			return
		}
		apt, err := exec.LookPath("apt-get")
		if err != nil || os.Geteuid() != 0 {
			chromiumWhy = "no Chromium on PATH, and the test cannot install one (it needs root and apt-get): install Debian's chromium package"
			return
		}
		install := func(args ...string) error {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, apt, args...)
			cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
			out, err := cmd.CombinedOutput()
			if err != nil {
				return fmt.Errorf("apt-get %s: %w: %s", strings.Join(args, " "), err, lastLines(string(out), 5))
			}
			return nil
		}
		t.Log("installing Debian's chromium package for the console tests")
		err = install("install", "-y", "--no-install-recommends", "chromium")
		if err != nil {
			// A fresh image may have no package lists yet.
			if uerr := install("update"); uerr == nil {
				err = install("install", "-y", "--no-install-recommends", "chromium")
			}
		}
		if chromiumPath = find(); chromiumPath == "" {
			chromiumWhy = fmt.Sprintf("Chromium could not be installed: %v", err)
		}
	})
	if chromiumPath == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the console tests need a browser under CI: %s", chromiumWhy)
		}
		t.Skipf("skipping the console tests: %s", chromiumWhy)
	}
	return chromiumPath
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// browser is one headless tab on a stack's console.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string

	mu       sync.Mutex
	problems []string // uncaught exceptions and CSP violations
}

func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := consoleChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.WindowSize(1366, 900),
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-gpu", true))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 4*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, shots: os.Getenv("SONDE_SCREENSHOTS")}
	if b.shots == "" {
		b.shots = t.TempDir()
	} else if err := os.MkdirAll(b.shots, 0o755); err != nil {
		t.Fatal(err)
	}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.IsException() || strings.Contains(m.Text, "Content Security Policy") {
				b.mu.Lock()
				b.problems = append(b.problems, m.String())
				b.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, p := range b.problems {
			t.Errorf("the page reported: %s", p)
		}
	})
	return b
}

// do runs actions; on failure it saves a screenshot and the page's text.
func (b *browser) do(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, actions...); err != nil {
		b.fail(what, err)
	}
}

func (b *browser) fail(what string, err error) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	text, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ""`))
	if png, e := chromedp.Run(ctx, chromedp.CaptureScreenshot()); e == nil {
		_ = os.WriteFile(filepath.Join(b.shots, "failure-"+sanitize(b.t.Name())+".png"), png, 0o644)
	}
	b.t.Fatalf("%s: %v\npage text:\n%s", what, err, lastLines(text, 60))
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, s)
}

// wait polls a JavaScript predicate until it holds.
func (b *browser) wait(what, predicate string, d time.Duration) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[chromedp.Void](predicate,
		chromedp.WithPollingTimeout(d), chromedp.WithPollingInterval(100*time.Millisecond))); err != nil {
		b.fail("waiting for "+what, err)
	}
}

func evalIn[T any](b *browser, expr string) T {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		b.fail("evaluating "+expr, err)
	}
	return v
}

// shot saves the whole page as a PNG.
func (b *browser) shot(name string) { b.t.Helper(); b.save(name, chromedp.FullScreenshot(100)) }

// viewShot saves what the window shows (a dialog over the page).
func (b *browser) viewShot(name string) { b.t.Helper(); b.save(name, chromedp.CaptureScreenshot()) }

func (b *browser) save(name string, capture chromedp.Action[[]byte]) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, capture)
	if err != nil {
		b.fail("screenshot "+name, err)
	}
	p := filepath.Join(b.shots, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", p)
}

// jsq quotes a Go string as a JavaScript string literal.
func jsq(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

// choose sets a select's value the way a user's choice does (with a change
// event).
func (b *browser) choose(id, value string) {
	b.t.Helper()
	got := evalIn[string](b, fmt.Sprintf(`(() => { const e = document.getElementById(%s); e.value = %s; e.dispatchEvent(new Event('change')); return e.value; })()`, jsq(id), jsq(value)))
	if got != value {
		b.t.Fatalf("select %s has no option %q", id, value)
	}
}

// start fills the start form and submits it with the keyboard.
func (b *browser) start(objective string) {
	b.t.Helper()
	b.do("start a run",
		chromedp.SetValue(chromedp.CSS("#objective"), objective),
		chromedp.Focus(chromedp.CSS("#start")),
		chromedp.KeyEvent("\r"),
	)
	b.wait("the run to open", `document.querySelector('#timeline .entry.started') !== null && document.getElementById('run-h').textContent === `+jsq(objective), 20*time.Second)
}

const finished = `document.querySelector('#timeline .entry.finished') !== null`

// TestConsoleDemoRun opens the console on the demo stack (no tokens: the
// local admin), starts a run of the demo model, watches it finish with its
// report and opens a citation as a table.
func TestConsoleDemoRun(t *testing.T) {
	consoleChromium(t)
	s := stacktest.Start(t, stacktest.Options{})
	b := newBrowser(t)

	b.do("open the console", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#start-form")))
	b.wait("the demo connection", `[...document.querySelectorAll('#connection option')].some(o => o.value === 'demo')`, 15*time.Second)
	if unlabelled := evalIn[[]string](b, `[...document.querySelectorAll('input,select,textarea')].filter(e => !e.labels || !e.labels.length).map(e => e.id)`); len(unlabelled) > 0 {
		t.Errorf("controls without a label: %v", unlabelled)
	}
	safety := evalIn[string](b, `document.getElementById('safety').textContent`)
	for _, want := range []string{"SQLite", "mode=ro", "query_only", "Reads only", "Readable: every table"} {
		if !strings.Contains(safety, want) {
			t.Errorf("the safety strip does not say %q: %s", want, safety)
		}
	}
	if model := evalIn[string](b, `document.getElementById('model').textContent`); !strings.Contains(model, "demo") {
		t.Errorf("the demo model is not labelled: %q", model)
	}

	b.start("Why did orders fall in March 2025?")
	b.wait("the run to finish", finished, 90*time.Second)
	b.wait("the report", `document.querySelectorAll('#answer .claims li').length > 0`, 10*time.Second)
	b.wait("the meter from the record", `/Turns/.test(document.getElementById('meter').textContent) && /Tokens: \d+ in/.test(document.getElementById('meter').textContent)`, 10*time.Second)
	steps := evalIn[int](b, `document.querySelectorAll('#timeline .entry.step pre.sql').length`)
	results := evalIn[int](b, `[...document.querySelectorAll('#timeline .entry.step .result')].filter(r => /Result: \d+ rows?/.test(r.textContent)).length`)
	if steps < 2 || results < 2 {
		t.Errorf("the timeline shows %d statements and %d result sizes, want at least 2 each", steps, results)
	}
	verdict := evalIn[string](b, `document.querySelector('#answer .verdict').textContent`)
	if !strings.Contains(verdict, "answered") {
		t.Errorf("verdict %q", verdict)
	}
	b.shot("console-run.png")

	// A citation opens the cited result as a table.
	cid := evalIn[string](b, `document.querySelector('#answer .citations button.cite').dataset.cid`)
	b.do("open a citation", chromedp.Click(chromedp.CSS("#answer .citations button.cite")))
	b.wait("the cited table", `document.getElementById('viewer').open && document.querySelectorAll('#viewer-body tbody tr').length > 0`, 10*time.Second)
	art, err := s.Client("").Artifact(context.Background(), evalIn[string](b, `decodeURIComponent(location.hash.slice(5))`), cid)
	if err != nil {
		t.Fatal(err)
	}
	rows := evalIn[int](b, `document.querySelectorAll('#viewer-body tbody tr').length`)
	cols := evalIn[[]string](b, `[...document.querySelectorAll('#viewer-body thead th')].map(th => th.textContent)`)
	if rows != len(art.Data) || len(cols) != len(art.Columns) || cols[0] != art.Columns[0].Name {
		t.Errorf("the citation %s shows %d rows, columns %v; the artifact has %d rows, columns %v", cid, rows, cols, len(art.Data), art.Columns)
	}
	if sql := evalIn[string](b, `document.getElementById('viewer-sql').textContent`); sql != art.SQL {
		t.Errorf("the viewer shows the statement %q, want %q", sql, art.SQL)
	}
	b.viewShot("console-citation.png")
	b.do("close the table with the keyboard", chromedp.KeyEvent("\x1b"))
	b.wait("the table to close", `!document.getElementById('viewer').open`, 5*time.Second)

	// The schema snapshot the run captured opens the same way.
	b.do("open the schema snapshot", chromedp.Click(chromedp.CSS("#timeline .entry.context button.cite")))
	b.wait("the snapshot's relations", `document.getElementById('viewer').open && document.querySelectorAll('#viewer-body tbody tr').length > 0`, 10*time.Second)
	b.do("close the snapshot", chromedp.Click(chromedp.CSS("#viewer-close")))

	// History lists the run.
	b.wait("the history", `[...document.querySelectorAll('#history a')].some(a => a.textContent === 'Why did orders fall in March 2025?')`, 10*time.Second)

	// A finished run can be continued: the next run joins its conversation.
	b.do("continue the conversation", chromedp.Click(chromedp.CSS("#continue")))
	b.start("And did signups recover in April?")
	b.wait("the follow-up to finish", finished, 90*time.Second)
	if meta := evalIn[string](b, `document.getElementById('run-meta').textContent`); !strings.Contains(meta, "conversation step 2") {
		t.Errorf("the follow-up reads %q, want its place in the conversation", meta)
	}
}

// consolePlays is the scripted model of TestConsoleScripted.
func consolePlays(release <-chan struct{}) *wfScript {
	d := wfDataset{analysis: "SELECT status, COUNT(*) AS orders FROM orders GROUP BY status ORDER BY orders DESC"}
	withText := func(text string, f func([]string) modeltest.Reply) func([]string) modeltest.Reply {
		return func(ids []string) modeltest.Reply { r := f(ids); r.Text = text; return r }
	}
	script := &wfScript{plays: map[string]wfPlay{}}
	script.add("[chart]", seq(
		withText(consoleHostile+" First, a write, which must be refused.",
			wfCall("run_read_query", `{"sql":"DELETE FROM orders","reason":`+js(consoleHostile)+`}`)),
		wfCall("run_read_query", `{"sql":`+js(d.analysis)+`,"reason":"orders per status"}`),
		wfCall("present_answer", `{"artifact":%q,"presentation":{"kind":"chart","spec":{"type":"bar","x":"status","y":["orders"],"caption":"orders by status"}}}`, 1),
		cite("Most orders are in the leading status "+consoleHostile, 1),
	))
	// Ten months, one unknown: the server's rule (more than 80 % of the
	// values are numbers) accepts the chart; the NULL is a point not drawn.
	gap := "WITH t(month, orders) AS (VALUES ('2025-01', 12), ('2025-02', 15), ('2025-03', NULL), ('2025-04', 9), ('2025-05', 11), " +
		"('2025-06', 14), ('2025-07', 13), ('2025-08', 10), ('2025-09', 16), ('2025-10', 8)) SELECT month, orders FROM t ORDER BY month"
	script.add("[gap]", seq(
		wfCall("run_read_query", `{"sql":`+js(gap)+`,"reason":"orders per month"}`),
		wfCall("present_answer", `{"artifact":%q,"presentation":{"kind":"chart","spec":{"type":"line","x":"month","y":["orders"],"caption":"orders per month"}}}`, 0),
		cite("Orders per month, one month unknown.", 0),
	))
	fast := "SELECT id, total_cents FROM orders WHERE customer_id = 7"
	script.add("[handover]", seq(
		wfCall("inspect_plan", `{"sql":`+js(fast)+`,"reason":null,"hypotheticalIndex":null}`),
		wfCall("run_read_query", `{"sql":`+js(fast)+`,"reason":null}`),
		wfCall("present_answer", `{"artifact":%q,"presentation":{"kind":"table","spec":null}}`, 1),
		cite("One customer's orders.", 1),
	))
	script.add("[resume]", seq(
		wfCall("run_read_query", `{"sql":`+js(d.analysis)+`,"reason":"first look"}`),
		func(ids []string) modeltest.Reply {
			select {
			case <-release:
			case <-time.After(60 * time.Second):
			}
			return cite("Orders per status, as read.", 0)(ids)
		},
	))
	return script
}

// consoleHostile is markup an attacker would like the console to run.
const consoleHostile = `<img src=x onerror="document.title='pwned'"><script>document.title='pwned'</script><b>bold</b>`

// TestConsoleScripted signs in with a token, draws a data-analysis answer
// as an SVG chart, renders hostile text inert, and reloads mid-run to see the
// timeline resume from the ledger.
func TestConsoleScripted(t *testing.T) {
	consoleChromium(t)
	release := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { once.Do(func() { close(release) }) })
	const token = "console-test-token"
	s := stacktest.Start(t, stacktest.Options{
		Script: modeltest.ScriptFunc(consolePlays(release).answer),
		Tokens: map[string]contracts.Actor{token: {ID: "ada", Role: contracts.RoleMember}},
	})
	// The browser reaches the gateway through a proxy the test can cut, and
	// which records where each stream request asked to resume.
	target, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0) // the cut connections
	var mu sync.Mutex
	var resumes []string
	px := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/stream") {
			mu.Lock()
			resumes = append(resumes, r.Header.Get("Last-Event-ID"))
			mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(px.Close)
	b := newBrowser(t)

	// Sign in: a wrong token is refused, the right one opens the console.
	b.do("open the console", chromedp.Navigate(px.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#signin-form")))
	b.do("sign in with a wrong token", chromedp.SetValue(chromedp.CSS("#token"), "wrong"), chromedp.Click(chromedp.CSS("#signin-form button")))
	b.wait("the refusal", `/not accepted/.test(document.getElementById('signin-error').textContent)`, 10*time.Second)
	b.do("sign in", chromedp.SetValue(chromedp.CSS("#token"), token), chromedp.Click(chromedp.CSS("#signin-form button")))
	b.wait("the console", `!document.getElementById('app').hidden && document.querySelectorAll('#connection option').length > 0`, 15*time.Second)
	if got := evalIn[string](b, `sessionStorage.getItem('sonde.token')`); got != token {
		t.Errorf("session storage holds %q", got)
	}

	// autoExecute is offered where the workflow offers it, and only there.
	autoShown := func() bool { return evalIn[bool](b, `document.getElementById('auto').offsetParent !== null`) }
	if autoShown() {
		t.Error("autoExecute offered on an investigation")
	}
	b.choose("workflow", "data-analysis")
	if !autoShown() {
		t.Error("autoExecute not offered on an agent data-analysis run")
	}
	b.choose("mode", "planning")
	if autoShown() {
		t.Error("autoExecute offered in planning mode")
	}
	if strip := evalIn[string](b, `document.getElementById('safety').textContent`); !strings.Contains(strip, "Executes nothing it drafts") {
		t.Errorf("the planning strip: %s", strip)
	}
	b.choose("mode", "agent")

	// A data-analysis answer drawn as a chart; hostile text stays text.
	objective := "[chart] " + consoleHostile + " orders by status"
	b.start(objective)
	b.wait("the run to finish", finished, 90*time.Second)
	b.wait("the chart", `document.querySelectorAll('#answer svg.chart rect.bar').length > 0 && document.querySelectorAll('#answer .presentation tbody tr').length > 0`, 15*time.Second)
	bars := evalIn[int](b, `document.querySelectorAll('#answer svg.chart rect.bar').length`)
	rows := evalIn[int](b, `document.querySelectorAll('#answer .presentation tbody tr').length`)
	if bars < 2 || bars != rows {
		t.Errorf("the chart has %d bars for %d rows", bars, rows)
	}
	refusal := evalIn[string](b, `document.querySelector('#timeline .entry.refused').textContent`)
	if !strings.Contains(refusal, "Refused") || !strings.Contains(refusal, "Fix:") {
		t.Errorf("the refused write shows %q, want its code, reason and fix", refusal)
	}
	if h := evalIn[string](b, `document.getElementById('run-h').textContent`); h != objective {
		t.Errorf("the heading reads %q, want the objective as text", h)
	}
	if prose := evalIn[string](b, `document.querySelector('#timeline .prose').textContent`); !strings.Contains(prose, consoleHostile) {
		t.Errorf("the model's prose reads %q", prose)
	}
	inert := evalIn[map[string]any](b, `({title: document.title, imgs: document.querySelectorAll('img').length,
		scripts: document.querySelectorAll('script:not([src^="/console/"])').length, bold: document.querySelectorAll('#run b, #history b').length})`)
	if inert["title"] != "Sonde console" || inert["imgs"] != float64(0) || inert["scripts"] != float64(0) || inert["bold"] != float64(0) {
		t.Errorf("hostile text became markup: %v", inert)
	}
	if v := evalIn[string](b, `document.querySelector('#answer .verdict').textContent`); !strings.Contains(v, "answered") {
		t.Errorf("verdict %q", v)
	}
	b.shot("console-chart.png")

	// A line chart the server recorded with one NULL among ten values: the
	// console draws what the server decided (nine points, the gap said), not
	// a rule of its own.
	b.start("[gap] orders per month, one month unknown")
	b.wait("the gap run to finish", finished, 90*time.Second)
	b.wait("the gap chart", `document.querySelector('#answer .presentation svg.chart, #answer .presentation .error') !== null`, 15*time.Second)
	if msg := evalIn[string](b, `(document.querySelector('#answer .presentation .error') || {textContent: ''}).textContent`); msg != "" {
		t.Errorf("the console refused a chart the server recorded: %s", msg)
	}
	if pts := evalIn[int](b, `[...document.querySelectorAll('#answer svg.chart polyline.line')].reduce((n, l) => n + l.getAttribute('points').trim().split(/\s+/).length, 0)`); pts != 9 {
		t.Errorf("the line has %d points, want the 9 the server decided to draw", pts)
	}
	if note := evalIn[string](b, `(document.querySelector('#answer .presentation .chart-dropped') || {textContent: ''}).textContent`); !strings.Contains(note, "2025-03") || !strings.Contains(note, "NULL") {
		t.Errorf("the console says of the point not drawn: %q", note)
	}

	// An auto-executed answer is run again for the editor from the card.
	b.choose("workflow", "data-analysis")
	b.do("consent to the hand-over", chromedp.Click(chromedp.CSS("#auto")))
	if strip := evalIn[string](b, `document.getElementById('safety').textContent`); !strings.Contains(strip, "once more for your editor") {
		t.Errorf("the strip with the hand-over: %s", strip)
	}
	b.start("[handover] one customer's orders")
	b.wait("the hand-over run to finish", finished, 60*time.Second)
	b.wait("the hand-over button", `document.querySelector('#answer .handover button') !== null`, 10*time.Second)
	b.do("run it for the editor", chromedp.Click(chromedp.CSS("#answer .handover button")))
	b.wait("the replayed rows", `document.querySelectorAll('#answer .handover tbody tr').length > 0`, 15*time.Second)
	if a, p := evalIn[int](b, `document.querySelectorAll('#answer .handover tbody tr').length`), evalIn[int](b, `document.querySelectorAll('#answer .presentation tbody tr').length`); a != p {
		t.Errorf("the replay shows %d rows, the answer %d", a, p)
	}

	// Reload while the run waits on its model: the timeline is rebuilt from
	// the ledger and the stream carries on.
	b.start("[resume] orders per status, slowly")
	b.wait("the first result", `[...document.querySelectorAll('#timeline .entry.step .result')].some(r => /Result: \d+ rows/.test(r.textContent))`, 30*time.Second)
	runHash := evalIn[string](b, `location.hash`)
	before := evalIn[int](b, `document.querySelectorAll('#timeline .entry').length`)

	// A dropped connection: the console reconnects and asks for what comes
	// after the last entry it showed.
	mu.Lock()
	resumes = nil
	mu.Unlock()
	px.CloseClientConnections()
	b.wait("the stream to resume", `/^Live again \(resumed after entry \d+\)/.test(document.getElementById('live').textContent)`, 20*time.Second)
	mu.Lock()
	got := append([]string(nil), resumes...)
	mu.Unlock()
	if len(got) == 0 || got[0] == "" || got[0] == "0" {
		t.Errorf("after the drop the stream was asked for with Last-Event-ID %q, want the last entry shown", got)
	}
	if n := evalIn[int](b, `document.querySelectorAll('#timeline .entry').length`); n != before {
		t.Errorf("after the drop the timeline has %d entries, before %d", n, before)
	}
	b.do("reload mid-run", chromedp.Reload())
	b.wait("the timeline to resume", `document.querySelectorAll('#timeline .entry').length >= `+fmt.Sprint(before)+
		` && /^Live/.test(document.getElementById('live').textContent)`, 20*time.Second)
	if h := evalIn[string](b, `location.hash`); h != runHash {
		t.Errorf("after the reload the console shows %q, want %q", h, runHash)
	}
	b.shot("console-resumed.png")
	once.Do(func() { close(release) })
	b.wait("the resumed run to finish", finished, 60*time.Second)
	rec, err := s.Client(token).Run(context.Background(), strings.TrimPrefix(runHash, "#run="))
	if err != nil {
		t.Fatal(err)
	}
	// One card per tool step, none twice after the reload (the composed
	// report has an entry of its own; a refused one is a step card).
	var tools []string
	for _, st := range rec.Steps {
		if st.Tool != "compose_report" || st.Status == contracts.StepRefused {
			tools = append(tools, st.Tool)
		}
	}
	if cards := evalIn[int](b, `document.querySelectorAll('#timeline .entry.step').length`); cards != len(tools) {
		var all []string
		for _, st := range rec.Steps {
			all = append(all, fmt.Sprintf("%s/%s/%v", st.Tool, st.Status, st.Refusal))
		}
		t.Errorf("the timeline shows %d steps, the run has %d: %v (all steps: %v)", cards, len(tools), tools, all)
	}
	if n := evalIn[int](b, `document.querySelectorAll('#timeline .entry.finished').length`); n != 1 {
		t.Errorf("%d run-finished entries shown", n)
	}
}

// TestConsoleRefusedModel starts an agent run on a model that cannot call
// tools: the console shows the 422 as a refused model, says what it could not
// do, and offers planning mode, whose drafted statement it then shows.
func TestConsoleRefusedModel(t *testing.T) {
	consoleChromium(t)
	// A model that only ever writes prose: the capability probe watches it
	// fail to call a tool; a planning run takes its fenced statement.
	toolless, err := modeltest.NewOpenAI(modeltest.ScriptFunc(func(modeltest.ChatRequest) (modeltest.Reply, error) {
		return modeltest.Reply{Text: "Counting orders per status answers it.\n\n```sqlite\nSELECT status, COUNT(*) AS orders FROM orders GROUP BY status\n```"}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = toolless.Close() })
	s := stacktest.Start(t, stacktest.Options{
		Script:    modeltest.ScriptFunc(func(modeltest.ChatRequest) (modeltest.Reply, error) { return modeltest.Reply{Text: "unused"}, nil }),
		ModelTurn: func(c *modelturn.Config) { c.APIURL = toolless.URL() },
	})
	b := newBrowser(t)
	b.do("open the console", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#start-form")))
	b.wait("the demo connection", `document.querySelectorAll('#connection option').length > 0`, 15*time.Second)
	b.do("start an agent run",
		chromedp.SetValue(chromedp.CSS("#objective"), "How many orders are in each status?"),
		chromedp.Click(chromedp.CSS("#start")))
	b.wait("the refused model", `document.querySelector('#start-error .refused-model') !== null`, 60*time.Second)
	said := evalIn[string](b, `document.querySelector('#start-error .refused-model').textContent`)
	if !strings.Contains(said, "calling tools") || !strings.Contains(said, "planning mode") {
		t.Errorf("the refusal reads %q", said)
	}
	b.shot("console-refused-model.png")
	b.do("choose planning mode", chromedp.Click(chromedp.CSS("#use-planning")))
	b.wait("the planning run to finish", finished, 60*time.Second)
	b.wait("the drafted statement", `/SELECT status, COUNT\(\*\)/.test(document.querySelector('#answer pre.sql') ? document.querySelector('#answer pre.sql').textContent : '')`, 10*time.Second)
	if strip := evalIn[string](b, `document.getElementById('safety').textContent`); !strings.Contains(strip, "Executes nothing it drafts") {
		t.Errorf("the strip of a planning run: %s", strip)
	}
}

// handMade is one entry of a hand-made ledger.
type handMade struct {
	kind    contracts.EventKind
	payload any
}

// appendLedger writes a hand-made ledger for runID into the stack's real
// ledger, as the local admin's run on the demo connection, so the real
// gateway serves it: what the verifier and the orchestrator will write
// (figure checks, a question) is shown before they write it.
func appendLedger(t *testing.T, s *stacktest.Stack, runID string, started contracts.RunStarted, entries ...handMade) {
	t.Helper()
	ctx := context.Background()
	conns, err := s.Client("").Connections(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		if c.ID == "demo" {
			started.ConnectionIdentity = c.Identity
		}
	}
	started.ConnectionID, started.Actor = "demo", contracts.Actor{ID: "local", Role: contracts.RoleAdmin}
	if started.Mode == "" {
		started.Mode = contracts.ModeAgent
	}
	started.Budget = contracts.Budget{MaxTurns: 12, MaxStatements: 20, DeadlineMs: 120000, DBTimeMs: 30000}
	l, err := ledger.Open(ctx, s.NATS.JetStream(), ledger.WithWriter("hand-made"))
	if err != nil {
		t.Fatal(err)
	}
	w := l.Writer(runID, 0, nil)
	all := append([]handMade{{contracts.KindRunStarted, started},
		{contracts.KindDriverResolved, contracts.DriverResolved{Provider: "openai", Model: "hand-made", Drive: 1}}}, entries...)
	for _, e := range all {
		if _, err := w.Append(ctx, e.kind, e.payload); err != nil {
			t.Fatal(err)
		}
	}
}

// figuresLedger is a run whose report states figures the verifier
// checked: one found, one derived, one (hostile text) found nowhere.
func figuresLedger(hostile string) []handMade {
	cite := []contracts.EvidenceRef{{Source: contracts.EvidenceArtifact, CorrelationID: "c1genres"}}
	read := contracts.ToolCall{Turn: 1, CallID: "call1", Tool: "run_read_query", Arguments: json.RawMessage(`{"sql":"SELECT genre, revenue FROM sales","reason":"revenue per genre"}`)}
	return []handMade{
		{contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: read, StepID: "s1genres", CorrelationID: "c1genres"}},
		{contracts.KindToolCompleted, contracts.ToolCompleted{ToolCall: read, StepID: "s1genres", Outcome: contracts.OutcomeOK, DurationMs: 3,
			Artifact: &contracts.ArtifactSummary{CorrelationID: "c1genres", Rows: 5, Columns: []contracts.Column{{Name: "genre"}, {Name: "revenue"}}}}},
		{contracts.KindReportComposed, contracts.ReportComposed{ToolCall: contracts.ToolCall{Turn: 2, CallID: "call2", Tool: "compose_report", Arguments: json.RawMessage(`{}`)},
			Claims: []contracts.Claim{
				{Text: "Rock sells best, with 826.65 in revenue", Evidence: cite},
				{Text: "Rock is 12 % of all revenue", Evidence: cite},
				{Text: "Jazz made " + hostile + " in revenue", Evidence: cite},
			}}},
		{contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopReportComposed,
			GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictUnanswered, Rule: "agent-investigation.2", Unmet: []string{"figure-unverified"},
				Claims: []contracts.ClaimCheck{
					{Claim: 1, Figures: []contracts.FigureCheck{{Text: "826.65", Status: contracts.FigureFound, Source: "c1genres"}}},
					{Claim: 2, Figures: []contracts.FigureCheck{{Text: "12 %", Status: contracts.FigureDerived, Source: "c1genres", How: "826.65 / 6889.5"}}},
					{Claim: 3, Figures: []contracts.FigureCheck{{Text: hostile, Status: contracts.FigureUnverified}}},
				}}}},
	}
}

// questionLedger is a run that stopped on the model's question.
func questionLedger(question string) []handMade {
	return []handMade{
		{contracts.KindClosingStatement, contracts.ClosingStatement{Turn: 1, Text: question}},
		{contracts.KindRunFinished, contracts.RunFinished{Status: contracts.StatusSucceeded, StopReason: contracts.StopQuestion, Question: question,
			GoalVerdict: &contracts.GoalVerdict{Outcome: contracts.VerdictUnanswered, Rule: "agent-investigation.2", Unmet: []string{"question-asked"}}}},
	}
}

// TestConsoleShowsFigureChecksAndTheQuestion opens hand-made runs on the
// real gateway: each claim lists its figure checks in words (found,
// derived with how, not found), the unmet codes and the stop reason are
// shown, a run that stopped on a question shows the question and answers
// it by continuing the conversation; a hostile figure and question stay
// text.
func TestConsoleShowsFigureChecksAndTheQuestion(t *testing.T) {
	consoleChromium(t)
	s := stacktest.Start(t, stacktest.Options{})
	hostileQ := "Invoice totals or units? \u202ewhich year " + consoleHostile
	appendLedger(t, s, "rhandfigures01", contracts.RunStarted{Objective: "Which genre sells best?", WorkflowType: contracts.WorkflowInvestigation},
		figuresLedger("999.99 "+consoleHostile)...)
	appendLedger(t, s, "rhandquestion01", contracts.RunStarted{Objective: "How much did we sell?", WorkflowType: contracts.WorkflowInvestigation},
		questionLedger(hostileQ)...)
	b := newBrowser(t)

	b.do("open the figures run", chromedp.Navigate(s.URL+"/#run=rhandfigures01"), chromedp.WaitVisible(chromedp.CSS("#start-form")))
	b.wait("the run to be shown", finished+` && document.querySelectorAll('#answer .claims li .figures li').length === 3`, 20*time.Second)
	figs := evalIn[[]string](b, `[...document.querySelectorAll('#answer .claims > li')].map(li => { const f = li.querySelector('.figures'); return f ? f.textContent : ''; })`)
	if len(figs) != 3 {
		t.Fatalf("%d claims shown", len(figs))
	}
	for i, want := range [][]string{{"826.65", "found", "in c1genres"}, {"12 %", "derived", "from c1genres", "826.65 / 6889.5"}, {"999.99 " + consoleHostile, "not found", "in the results this claim cites"}} {
		for _, w := range want {
			if !strings.Contains(figs[i], w) {
				t.Errorf("claim %d's figure checks read %q, want %q", i+1, figs[i], w)
			}
		}
	}
	// The status is a word and a class, never a colour alone.
	if words := evalIn[[]string](b, `[...document.querySelectorAll('#answer .figures .figure-status')].map(e => e.textContent)`); strings.Join(words, ",") != "found,derived,not found" {
		t.Errorf("the figure statuses read %v", words)
	}
	if n := evalIn[int](b, `document.querySelectorAll('#answer .claims > li.claim-unverified').length`); n != 1 {
		t.Errorf("%d claims marked unverified, want 1", n)
	}
	if unmet := evalIn[string](b, `document.querySelector('#answer .unmet-list').textContent`); !strings.Contains(unmet, "figure-unverified") {
		t.Errorf("the unmet codes read %q", unmet)
	}
	b.shot("console-figures.png")

	b.do("open the question run", chromedp.Navigate(s.URL+"/#run=rhandquestion01"))
	b.wait("the question", `document.querySelector('#answer .question') !== null`, 20*time.Second)
	q := evalIn[string](b, `document.querySelector('#answer .question .prose').textContent`)
	if want := strings.ReplaceAll(hostileQ, "\u202e", "[U+202E]"); q != want {
		t.Errorf("the question reads %q, want %q", q, want)
	}
	stopped := evalIn[string](b, `document.querySelector('#answer .stopped').textContent`)
	if !strings.Contains(stopped, "asked you a question") || !strings.Contains(stopped, "question-asked") {
		t.Errorf("the stop reads %q", stopped)
	}
	inert := evalIn[map[string]any](b, `({title: document.title, imgs: document.querySelectorAll('img').length,
		scripts: document.querySelectorAll('script:not([src^="/console/"])').length, bold: document.querySelectorAll('#run b').length})`)
	if inert["title"] != "Sonde console" || inert["imgs"] != float64(0) || inert["scripts"] != float64(0) || inert["bold"] != float64(0) {
		t.Errorf("hostile text became markup: %v", inert)
	}
	b.shot("console-question.png")

	// Answering continues the conversation from the question run.
	b.do("answer the question", chromedp.Click(chromedp.CSS("#answer-question")))
	if st := evalIn[map[string]any](b, `({checked: document.getElementById('continue').checked, shown: !document.getElementById('continue-row').hidden,
		focus: document.activeElement && document.activeElement.id})`); st["checked"] != true || st["shown"] != true || st["focus"] != "objective" {
		t.Fatalf("after 'Answer this question' the form is %v", st)
	}
	b.start("Invoice totals, for 2025")
	b.wait("the answer run to finish", finished, 90*time.Second)
	rec, err := s.Client("").Run(context.Background(), evalIn[string](b, `decodeURIComponent(location.hash.slice(5))`))
	if err != nil {
		t.Fatal(err)
	}
	if rec.PreviousRunID != "rhandquestion01" || rec.Objective != "Invoice totals, for 2025" {
		t.Errorf("the answer run continues %q with objective %q", rec.PreviousRunID, rec.Objective)
	}
}
