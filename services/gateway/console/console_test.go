package console

import (
	"net/http/httptest"
	"strings"
	"testing"
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
