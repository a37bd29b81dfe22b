package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sondehq/sonde/services/gateway/api"
	"github.com/sondehq/sonde/services/sonde/internal/stacktest"
)

// The HTTP edge in a real browser (issue 17, item 7): a page served on a
// second loopback origin tries to start a run on the default local stack (no
// tokens) the way a hostile site would, with the requests a browser sends
// without a CORS preflight; and a page reached by a rebinding name (mapped to
// 127.0.0.1 inside Chromium, as a rebinding DNS answer would) tries the same
// as a same-origin page. Neither starts a run; the gateway refuses each
// request it receives.

// edgeRecorder is a reverse proxy in front of the gateway that keeps the
// method, path and status of every request it passes, so the test sees what
// reached the gateway and how it answered. It forwards the Host it received.
type edgeRecorder struct {
	mu   sync.Mutex
	seen []string
}

func (r *edgeRecorder) add(s string) { r.mu.Lock(); r.seen = append(r.seen, s); r.mu.Unlock() }

func (r *edgeRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func startEdgeRecorder(t *testing.T, target string) (*edgeRecorder, *httptest.Server) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rec := &edgeRecorder{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		rec.add(fmt.Sprintf("%s %s %d", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode))
		return nil
	}
	px := httptest.NewServer(rp)
	t.Cleanup(px.Close)
	return rec, px
}

// newEdgeBrowser is a headless Chromium that resolves rebind.test to
// 127.0.0.1, as a DNS-rebinding attacker's name would after the rebind.
func newEdgeBrowser(t *testing.T) *browser {
	t.Helper()
	path := consoleChromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.Flag("disable-dev-shm-usage", true), chromedp.Flag("disable-gpu", true),
		chromedp.Flag("host-resolver-rules", "MAP rebind.test 127.0.0.1"),
		chromedp.Flag("disable-features", "HttpsUpgrades,HttpsFirstBalancedModeAutoEnable"))
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	ctx, cancelTime := context.WithTimeout(ctx, 3*time.Minute)
	t.Cleanup(func() { cancelTime(); cancelTab(); cancelAlloc() })
	return &browser{t: t, ctx: ctx, shots: t.TempDir()}
}

// evalAwait evaluates a promise-valued expression and waits for its string.
func evalAwait(b *browser, expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.fail("evaluating "+expr, err)
	}
	return v
}

// attackerPage is what a hostile site serves: it posts a run start to the
// target the three ways a page may without a preflight.
const attackerPage = `<!doctype html><title>elsewhere</title><body>
<script>
window.attack = async (target) => {
  const json = JSON.stringify({objective: 'started from another origin', connectionId: 'demo'});
  const out = [];
  const tries = [
    ['blob', {method: 'POST', mode: 'no-cors', body: new Blob([json])}],
    ['text', {method: 'POST', mode: 'no-cors', headers: {'Content-Type': 'text/plain'}, body: json}],
    ['form', {method: 'POST', mode: 'no-cors', body: new URLSearchParams({q: json})}],
    ['query', {method: 'POST', mode: 'no-cors', body: new Blob([JSON.stringify({connectionId: 'demo', sql: 'SELECT 1'})])}],
  ];
  for (const [name, init] of tries) {
    const path = name === 'query' ? '/api/query' : '/api/agent/runs';
    try { await fetch(target + path, init); out.push(name + ':sent'); } catch (e) { out.push(name + ':' + e); }
  }
  return out.join(' ');
};
</script></body>`

// TestBrowserEdgeRefusesCrossSiteAndRebinding: a no-cors start from a second
// loopback origin reaches the gateway and is refused, and starts nothing; a
// page loaded through a rebinding name is refused, and so is everything it
// then asks as a same-origin page.
func TestBrowserEdgeRefusesCrossSiteAndRebinding(t *testing.T) {
	consoleChromium(t)
	s := stacktest.Start(t, stacktest.Options{})
	rec, px := startEdgeRecorder(t, s.URL)
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(attackerPage))
	}))
	t.Cleanup(evil.Close)
	b := newEdgeBrowser(t)

	// A second loopback origin: another port of 127.0.0.1.
	b.do("open the page elsewhere", chromedp.Navigate(evil.URL+"/"), chromedp.WaitReady("body"))
	if got := evalAwait(b, `attack(`+jsq(px.URL)+`)`); strings.Count(got, ":sent") != 4 {
		t.Fatalf("the page's requests: %s", got)
	}
	var posts []string
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		posts = nil
		for _, r := range rec.all() {
			if strings.HasPrefix(r, "POST ") {
				posts = append(posts, r)
			}
		}
		if len(posts) >= 4 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(posts) != 4 {
		t.Fatalf("the gateway saw %d of the page's 4 posts: %v", len(posts), rec.all())
	}
	for _, p := range posts {
		if !strings.HasSuffix(p, " 403") {
			t.Errorf("a cross-origin post was not refused at the edge: %s", p)
		}
	}

	// A rebinding name: the page is served by the gateway under that name.
	_, port, _ := strings.Cut(strings.TrimPrefix(px.URL, "http://"), ":")
	rebound := "http://rebind.test:" + port
	b.do("open the console by a rebinding name", chromedp.Navigate(rebound+"/"), chromedp.WaitReady("body"))
	if text := evalIn[string](b, `document.body.innerText`); !strings.Contains(text, string(api.CodeHostNotAllowed)) || strings.Contains(text, "start-form") {
		t.Errorf("the console under a rebinding name: %.300s", text)
	}
	got := evalAwait(b, `(async () => {
	  const out = [];
	  const start = await fetch('/api/agent/runs', {method: 'POST', headers: {'Content-Type': 'application/json'},
	    body: JSON.stringify({objective: 'started through a rebinding name', connectionId: 'demo'})});
	  out.push('start:' + start.status + ':' + (await start.text()).includes('`+string(api.CodeHostNotAllowed)+`'));
	  const conns = await fetch('/api/connections');
	  out.push('connections:' + conns.status + ':' + (await conns.text()).includes('demo'));
	  const mcp = await fetch('/mcp', {method: 'POST', headers: {'Content-Type': 'application/json', Accept: 'application/json, text/event-stream'},
	    body: JSON.stringify({jsonrpc: '2.0', id: 1, method: 'tools/list'})});
	  out.push('mcp:' + mcp.status);
	  return out.join(' ');
	})()`)
	if got != "start:403:true connections:403:false mcp:403" {
		t.Errorf("same-origin requests under a rebinding name: %s", got)
	}

	runs, err := s.Client("").Runs(context.Background(), 100, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(runs.Runs) != 0 {
		t.Fatalf("the hostile pages started %d runs: %+v", len(runs.Runs), runs.Runs)
	}
	// The same start from the server's own origin works: the refusals above
	// are the edge's, not a broken stack.
	b.do("open the console", chromedp.Navigate(px.URL+"/"), chromedp.WaitVisible(chromedp.CSS("#start-form")))
	if got := evalAwait(b, `(async () => (await fetch('/api/connections')).status + '')()`); got != "200" {
		t.Fatalf("the console's own origin: %s", got)
	}
}
