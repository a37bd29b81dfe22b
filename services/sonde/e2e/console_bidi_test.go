package e2e

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// bidiControls matches Unicode's Bidi_Control characters in page text.
const bidiControls = `/[\u061C\u200E\u200F\u202A-\u202E\u2066-\u2069]/`

// TestConsoleShowsBidiControls runs a scripted investigation whose
// objective, statement, column name, cell values and report claim hold
// bidi controls (U+202E reverses "gnp.exe" into "exe.png" on screen): in
// the real browser no rendered text or shown attribute holds one, each is
// drawn as a [U+XXXX] mark, and the cited cell reads in stored order.
func TestConsoleShowsBidiControls(t *testing.T) {
	consoleChromium(t)
	const rlo = "\u202e"
	sql := "SELECT '" + rlo + "gnp.exe' AS \"" + rlo + "name\", 'a\u2067b\u2069c\u200fd\u061ce' AS iso"
	script := modeltest.ScriptFunc(func(req modeltest.ChatRequest) (modeltest.Reply, error) {
		if req.AssistantTurns() == 0 {
			return readCall("call_1", sql), nil
		}
		var ev []contracts.EvidenceRef
		for _, tr := range req.ToolMessages() {
			if m := citedArtifact.FindStringSubmatch(tr.Content); m != nil {
				ev = append(ev, contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: m[1]})
			}
		}
		args, _ := json.Marshal(map[string]any{"claims": []contracts.Claim{{Text: "The file is " + rlo + "gnp.exe", Evidence: ev}}})
		return modeltest.Reply{Text: "Found " + rlo + "gnp.exe", ToolCalls: []modeltest.ToolCall{{ID: "call_report", Name: "compose_report", Arguments: string(args)}}}, nil
	})
	s := stacktest.Start(t, stacktest.Options{Script: script})
	b := newBrowser(t)
	b.do("open the console", chromedp.Navigate(s.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#start-form")))
	b.wait("the demo connection", `[...document.querySelectorAll('#connection option')].some(o => o.value === 'demo')`, 15*time.Second)
	b.do("start a run",
		chromedp.SetValue(chromedp.CSS("#objective"), "What is "+rlo+"gnp.exe?"),
		chromedp.Focus(chromedp.CSS("#start")),
		chromedp.KeyEvent("\r"),
	)
	b.wait("the run to finish", finished, 60*time.Second)
	b.wait("the report", `document.querySelectorAll('#answer .claims li').length > 0`, 10*time.Second)
	if h := evalIn[string](b, `document.getElementById('run-h').textContent`); h != "What is [U+202E]gnp.exe?" {
		t.Errorf("the run's heading reads %q, want the control shown as a mark", h)
	}
	if claims := evalIn[string](b, `document.querySelector('#answer .claims').textContent`); !strings.Contains(claims, "[U+202E]gnp.exe") {
		t.Errorf("the claim reads %q, want the control shown as a mark", claims)
	}

	b.do("open the citation", chromedp.Click(chromedp.CSS("#answer .citations button.cite")))
	b.wait("the cited table", `document.getElementById('viewer').open && document.querySelectorAll('#viewer-body tbody tr').length > 0`, 10*time.Second)
	cells := evalIn[[]string](b, `[...document.querySelectorAll('#viewer-body th, #viewer-body td')].map(c => c.textContent)`)
	want := []string{"[U+202E]name", "iso", "[U+202E]gnp.exe", "a[U+2067]b[U+2069]c[U+200F]d[U+061C]e"}
	if strings.Join(cells, "|") != strings.Join(want, "|") {
		t.Errorf("the cited table reads %q, want %q", cells, want)
	}
	// What the reader sees: no rendered text and no shown attribute holds
	// a bidi control anywhere on the page.
	raw := evalIn[[]string](b, `(() => {
		const re = `+bidiControls+`, found = [];
		const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		for (let n = walk.nextNode(); n; n = walk.nextNode()) if (re.test(n.data)) found.push(n.data);
		for (const e of document.querySelectorAll('*'))
			for (const a of ['title', 'aria-label', 'alt', 'placeholder', 'label'])
				if (re.test(e.getAttribute(a) || '')) found.push(a + '=' + e.getAttribute(a));
		return found;
	})()`)
	if len(raw) > 0 {
		t.Errorf("the page renders bidi controls raw: %q", raw)
	}
	b.viewShot("console-bidi.png")
}
