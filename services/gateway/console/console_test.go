package console

import (
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/verdict"
	"github.com/sondehq/sonde/services/gateway/api"
)

func TestHandlerServesThePageAndItsAssetsOnly(t *testing.T) {
	h := Handler()
	for _, tc := range []struct {
		method, path string
		status       int
		ctype, body  string
	}{
		{"GET", "/", 200, "text/html", `<script src="/console/app.js"`},
		{"GET", "/index.html", 200, "text/html", "<title>Sonde console</title>"},
		{"HEAD", "/console/app.css", 200, "text/css", ""},
		{"GET", "/console/app.js", 200, "text/javascript", "textContent"},
		{"GET", "/console/text.js", 200, "text/javascript", "SondeText"},
		{"GET", "/console/words.js", 200, "text/javascript", "SondeWords"},
		{"GET", "/console/index.html", 404, "", ""},
		{"GET", "/console/../console.go", 404, "", ""},
		{"GET", "/console/nope.js", 404, "", ""},
		{"GET", "/elsewhere", 404, "", ""},
		{"POST", "/", 405, "", ""},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
		if rec.Code != tc.status {
			t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.status)
			continue
		}
		if tc.status != 200 {
			continue
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, tc.ctype) {
			t.Errorf("%s: content type %q", tc.path, ct)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", tc.path, csp)
		}
		if !strings.Contains(rec.Body.String(), tc.body) {
			t.Errorf("%s: body lacks %q", tc.path, tc.body)
		}
	}
}

// The console renders server text with textContent only: no asset assigns
// markup from a string, and nothing is fetched from another origin.
func TestAssetsNeverParseMarkupOrReachTheNetwork(t *testing.T) {
	for _, name := range []string{"app.js", "index.html", "app.css"} {
		b, err := static.ReadFile("static/" + name)
		if err != nil {
			t.Fatal(err)
		}
		// The SVG namespace is a name, not an address the page fetches.
		s := strings.ReplaceAll(string(b), `'http://www.w3.org/2000/svg'`, "")
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function", "http://", "https://", "//cdn"} {
			if strings.Contains(s, bad) {
				t.Errorf("%s contains %q", name, bad)
			}
		}
	}
}

// Every string the console renders passes through visible (text.js): no
// line of app.js places text (textContent, a text node, an attribute, the
// page title) except through it, and the page loads text.js first.
func TestEveryRenderedStringPassesThroughVisible(t *testing.T) {
	b, err := static.ReadFile("static/app.js")
	if err != nil {
		t.Fatal(err)
	}
	placing := []string{"textContent", "createTextNode", "setAttribute", "innerText", "nodeValue", "document.title", ".data =", "setAttributeNS"}
	helpers := 0
	for i, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "//") {
			continue
		}
		for _, p := range placing {
			if strings.Contains(line, p) {
				if !strings.Contains(line, "visible(") {
					t.Errorf("app.js:%d places text without visible(): %s", i+1, strings.TrimSpace(line))
				}
				helpers++
			}
		}
	}
	if helpers == 0 {
		t.Fatal("app.js places no text at all: the check reads the wrong file")
	}
	page, _ := static.ReadFile("static/index.html")
	ti, wi, ai := strings.Index(string(page), `src="/console/text.js"`), strings.Index(string(page), `src="/console/words.js"`), strings.Index(string(page), `src="/console/app.js"`)
	if ti < 0 || wi < 0 || ai < 0 || ti > ai || wi > ai {
		t.Fatal("index.html does not load text.js and words.js before app.js")
	}
}

// visible replaces exactly the bidi controls (Unicode's Bidi_Control
// property, from Go's tables) with a mark naming each, and keeps every
// other code point: a U+202E no longer reverses a cell. It runs text.js in
// Node, which make testdeps installs.
func TestVisibleMarksExactlyTheBidiControls(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the console's text tests need Node under CI (make testdeps installs it)")
		}
		t.Skip("no node on PATH: make testdeps installs it")
	}
	src, err := static.ReadFile("static/text.js")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "text.js"), src, 0o600); err != nil {
		t.Fatal(err)
	}
	harness := `require('./text.js');
const { visible } = globalThis.SondeText;
const changed = [];
for (let cp = 0; cp <= 0x10ffff; cp++) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const s = 'a' + String.fromCodePoint(cp) + 'b';
  const v = visible(s);
  if (v !== s) changed.push([cp, v]);
}
const samples = ['\u202egnp.exe', 'שלום \u2067abc\u2069 عربي', 42, '👩‍👩‍👧 x\u200d'].map(visible);
process.stdout.write(JSON.stringify({ changed, samples }));`
	if err := os.WriteFile(filepath.Join(dir, "harness.js"), []byte(harness), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "harness.js")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Changed [][2]any
		Samples []string
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %.200s", err, out)
	}
	seen := map[rune]bool{}
	for _, c := range got.Changed {
		r := rune(c[0].(float64))
		seen[r] = true
		if !unicode.Is(unicode.Bidi_Control, r) {
			t.Errorf("U+%04X is not a bidi control and was changed to %q", r, c[1])
		} else if want := fmt.Sprintf("a[U+%04X]b", r); c[1] != want {
			t.Errorf("U+%04X: %q, want %q", r, c[1], want)
		}
	}
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if unicode.Is(unicode.Bidi_Control, r) && !seen[r] {
			t.Errorf("the bidi control U+%04X is shown raw", r)
		}
	}
	want := []string{"[U+202E]gnp.exe", "שלום [U+2067]abc[U+2069] عربي", "42", "👩‍👩‍👧 x\u200d"}
	if !slices.Equal(got.Samples, want) {
		t.Errorf("samples %q, want %q", got.Samples, want)
	}
}

// words.js, the one asset the gateway writes, holds a sentence for every
// stop reason the API names (the new endings included) and, run in Node,
// defines exactly SondeWords; its JSON escapes markup, so no sentence could
// close the script it is in.
func TestWordsNameEveryStopReason(t *testing.T) {
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/console/words.js", nil))
	body := rec.Body.String()
	if rec.Code != 200 || strings.ContainsAny(body[strings.Index(body, "{"):], "<>") {
		t.Fatalf("words.js: %d\n%s", rec.Code, body)
	}
	for _, r := range api.StopReasons {
		if api.StopSentence(r) == "" {
			t.Errorf("stop reason %s has no sentence", r)
		}
	}
	for _, r := range []contracts.StopReason{contracts.StopQuestion, contracts.StopRepeatedCall} {
		if !slices.Contains(api.StopReasons, r) {
			t.Errorf("the console has no words for %s", r)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("the console's text tests need Node under CI (make testdeps installs it)")
		}
		t.Skip("no node on PATH: make testdeps installs it")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "words.js"), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", `require('./words.js'); process.stdout.write(JSON.stringify(globalThis.SondeWords))`)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var got struct {
		Stop, Unmet map[string]string
		Engines     map[string]engineWords
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Every listed engine, and no other, with its spec's words.
	if len(got.Engines) != len(enginespec.All()) {
		t.Errorf("words.js describes %d engines, the list holds %d", len(got.Engines), len(enginespec.All()))
	}
	for _, e := range enginespec.All() {
		want := engineWords{Label: e.Label, Guard: e.Safety.Guard, ReadOnly: e.Safety.ReadOnly, Last: e.Safety.LastLine}
		if got.Engines[string(e.Name)] != want {
			t.Errorf("words.js describes %s as %+v, its spec as %+v", e.Name, got.Engines[string(e.Name)], want)
		}
	}
	for _, r := range api.StopReasons {
		if got.Stop[string(r)] != api.StopSentence(r) {
			t.Errorf("words.js says %q for %s, want %q", got.Stop[string(r)], r, api.StopSentence(r))
		}
	}
	for code, s := range got.Unmet {
		if s == "" || !slices.Contains(unmetCodes, code) {
			t.Errorf("words.js explains %q as %q", code, s)
		}
	}
	for _, code := range unmetCodes {
		if got.Unmet[code] == "" || got.Unmet[code] != verdict.Explain(code) {
			t.Errorf("words.js explains %s as %q, the verifier as %q", code, got.Unmet[code], verdict.Explain(code))
		}
	}
}
