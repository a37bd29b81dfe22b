package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

var update = flag.Bool("update", false, "rewrite docs/openapi.json from the route table")

// committedOpenAPI is the document in docs/, relative to this package.
var committedOpenAPI = filepath.Join("..", "..", "docs", "openapi.json")

// TestOpenAPIDocument checks that the generated document is valid OpenAPI
// 3.1 and that docs/openapi.json is exactly what the code generates (run
// with -update to rewrite it).
func TestOpenAPIDocument(t *testing.T) {
	got, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(got)
	if err != nil {
		t.Fatalf("the document does not load: %v", err)
	}
	if doc.OpenAPI != "3.1.0" || !doc.IsOpenAPI31OrLater() {
		t.Fatalf("openapi %q, want 3.1.0", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document is not valid OpenAPI 3.1: %v", err)
	}
	if *update {
		if err := os.WriteFile(committedOpenAPI, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(committedOpenAPI)
	if err != nil {
		t.Fatalf("%v (generate it: go test ./services/gateway -run TestOpenAPIDocument -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from what the route table generates: run go test ./services/gateway -run TestOpenAPIDocument -update and commit it", committedOpenAPI)
	}
}

// TestOpenAPICoversEveryRoute fails on a route the router serves that the
// document neither describes nor lists as undocumented with a reason, e.g.
// one registered on the router outside routeTable.
func TestOpenAPICoversEveryRoute(t *testing.T) {
	g := &Gateway{}
	g.routes()
	b, err := OpenAPI()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Paths        map[string]map[string]json.RawMessage   `json:"paths"`
		Undocumented []struct{ Method, Path, Reason string } `json:"x-sonde-undocumented"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	skipped := map[string]string{}
	for _, u := range doc.Undocumented {
		if strings.TrimSpace(u.Reason) == "" {
			t.Errorf("%s %s is undocumented without a reason", u.Method, u.Path)
		}
		skipped[u.Method+" "+u.Path] = u.Reason
	}
	served := g.echo.Routes()
	if len(served) < len(routeTable) {
		t.Fatalf("the router serves %d routes, the table has %d", len(served), len(routeTable))
	}
	for _, r := range served {
		if _, ok := skipped[r.Method+" "+r.Path]; ok {
			continue
		}
		if _, ok := doc.Paths[openAPIPath(r.Path)][strings.ToLower(r.Method)]; !ok {
			t.Errorf("%s %s is served but not in the OpenAPI document: add it to routeTable", r.Method, r.Path)
		}
	}
	// And the other way: nothing documented that is not served.
	servedSet := map[string]bool{}
	for _, r := range served {
		servedSet[strings.ToLower(r.Method)+" "+openAPIPath(r.Path)] = true
	}
	for p, ops := range doc.Paths {
		for m := range ops {
			if !servedSet[m+" "+p] {
				t.Errorf("%s %s is documented but not served", m, p)
			}
		}
	}
}
