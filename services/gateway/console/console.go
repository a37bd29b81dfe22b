// Package console serves Sonde's web console: a page and its script and
// style, embedded in the binary, so the console works offline and fetches
// nothing from the network. The page talks to the gateway's own HTTP API
// with the user's bearer token; it holds no secret of its own.
package console

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/labstack/echo/v4"

	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/verdict"
	"github.com/sondehq/sonde/services/gateway/api"
)

//go:embed static
var static embed.FS

// Prefix is the path the console's assets are served under; the page itself
// is served at "/".
const Prefix = "/console/"

// securityHeaders keep the page to its own origin: scripts and styles from
// the gateway only (no inline script, so an injected tag cannot run even if
// a rendering mistake let one through), no framing, no referrer.
var securityHeaders = map[string]string{
	"Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
		"connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
	"X-Content-Type-Options": "nosniff",
	"Referrer-Policy":        "no-referrer",
	"X-Frame-Options":        "DENY",
	"Cache-Control":          "no-cache",
}

var types = map[string]string{
	".html": "text/html; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".svg":  "image/svg+xml",
}

// wordsName is the one asset built at start rather than embedded: the
// sentences the console shows for stop reasons and shortfall codes, taken
// from the Go code that owns them (api.StopSentence, the verifier's
// explanations), so the script keeps no copy that could drift.
const wordsName = "words.js"

// unmetCodes are the verifier's shortfall codes the console explains.
var unmetCodes = []string{
	verdict.UnmetNoReport, verdict.UnmetEmptyEvidence, verdict.UnmetNoPlan, verdict.UnmetNoStatement,
	verdict.UnmetFigureUnverified, verdict.UnmetSchemaOnly, verdict.UnmetDataUnread, verdict.UnmetUnseenEvidence,
	verdict.UnmetQuestion, verdict.UnmetPlanRefused, verdict.UnmetUnknownNames,
	verdict.UnmetNoPlanComparison, verdict.UnmetNoPlanEvidence, verdict.UnmetNoTableProfile, verdict.UnmetNoReading,
	verdict.UnmetNoAnswer, verdict.UnmetAnswerUncited,
}

// explainUnmet is the verifier's sentence for a shortfall code; "" leaves
// the code to stand alone.
func explainUnmet(code string) string { return verdict.Explain(code) }

// engineWords is what the console shows of an engine: its label and what
// holds a read to read-only there (engine.Spec's Label and Safety).
type engineWords struct {
	Label    string `json:"label"`
	Guard    string `json:"guard"`
	ReadOnly string `json:"readOnly"`
	Last     string `json:"last"`
}

// words is words.js: globalThis.SondeWords = {stop: {reason: sentence},
// unmet: {code: sentence}, engines: {engine: engineWords}}. JSON as Go
// encodes it escapes <, > and &, so no sentence can close the script.
var words = func() []byte {
	w := struct {
		Stop    map[string]string      `json:"stop"`
		Unmet   map[string]string      `json:"unmet"`
		Engines map[string]engineWords `json:"engines"`
	}{map[string]string{}, map[string]string{}, map[string]engineWords{}}
	for _, e := range enginespec.All() {
		w.Engines[string(e.Name)] = engineWords{Label: e.Label, Guard: e.Safety.Guard, ReadOnly: e.Safety.ReadOnly, Last: e.Safety.LastLine}
	}
	for _, r := range api.StopReasons {
		w.Stop[string(r)] = api.StopSentence(r)
	}
	for _, c := range unmetCodes {
		if s := explainUnmet(c); s != "" {
			w.Unmet[c] = s
		}
	}
	b, err := json.Marshal(w)
	if err != nil {
		panic(err) // two maps of strings always encode
	}
	return []byte("// Sonde console: the sentences for stop reasons and shortfall codes and the engines' labels, written by the gateway.\n" +
		"'use strict';\nglobalThis.SondeWords = Object.freeze(" + string(b) + ");\n")
}()

// Handler serves the page at "/" and its assets under Prefix; anything else
// is 404. Only GET and HEAD are answered.
func Handler() http.Handler {
	files, err := fs.Sub(static, "static")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		name := ""
		switch {
		case r.URL.Path == "/" || r.URL.Path == "/index.html":
			name = "index.html"
		case strings.HasPrefix(r.URL.Path, Prefix):
			name = strings.TrimPrefix(path.Clean(r.URL.Path), Prefix)
		}
		ct, ok := types[path.Ext(name)]
		if name == "" || name == "index.html" && r.URL.Path != "/" && r.URL.Path != "/index.html" || !ok {
			http.NotFound(w, r)
			return
		}
		b, err := fs.ReadFile(files, name)
		if name == wordsName {
			b, err = words, nil
		}
		if err != nil {
			http.NotFound(w, r)
			return
		}
		for k, v := range securityHeaders {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			_, _ = w.Write(b)
		}
	})
}

// handler is built once: the embedded tree does not change.
var handler = Handler()

// Serve answers an echo request with the console (the gateway's route table
// maps "/" and Prefix+"*" here).
func Serve(c echo.Context) error {
	handler.ServeHTTP(c.Response(), c.Request())
	return nil
}
