package engine

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

// repo is the repository root, from this package's directory.
const repo = "../.."

// TestDeployNamesListedEngines: the deploy files run an executor only of a
// listed engine, under its spec's service name, and the NATS user each such
// executor connects as subscribes to that engine's subjects and no other's.
// The deploy files are written by hand and run only the demonstration
// engine (SQLite); a new engine's executor is added to them by copying
// that one, and this test then holds the copy to the new spec.
func TestDeployNamesListedEngines(t *testing.T) {
	services := map[string]contracts.Engine{}
	for _, s := range All() {
		services[s.ServiceName()] = s.Name
	}
	servicesArg := regexp.MustCompile(`"--services", "([^"]+)"`)
	files := []string{"docker-compose.yml"}
	k8s, err := filepath.Glob(filepath.Join(repo, "k8s", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range k8s {
		files = append(files, filepath.Join("k8s", filepath.Base(f)))
	}
	executors := 0
	for _, f := range files {
		for _, m := range servicesArg.FindAllStringSubmatch(read(t, f), -1) {
			for _, svc := range strings.Split(m[1], ",") {
				if !strings.HasPrefix(svc, contracts.QueueExecutorPrefix) {
					continue
				}
				executors++
				if _, ok := services[svc]; !ok {
					t.Errorf("%s runs %s, which is no listed engine's executor", f, svc)
				}
			}
		}
	}
	if executors == 0 {
		t.Error("no deploy file runs an executor: the pattern no longer reads them")
	}

	// Each executor's NATS user: the block from its user: line to the next.
	conf := read(t, "deploy/nats/nats-server.conf")
	users := regexp.MustCompile(`(?m)^\s*user: (\S+)`).FindAllStringSubmatchIndex(conf, -1)
	subject := regexp.MustCompile(`"sonde\.exec\.([^".]+)\.\*"`)
	seen := 0
	for i, u := range users {
		name := conf[u[2]:u[3]]
		if !strings.HasPrefix(name, contracts.QueueExecutorPrefix) {
			continue
		}
		seen++
		e, ok := services[name]
		if !ok {
			t.Errorf("nats-server.conf has a user %s, which is no listed engine's executor", name)
			continue
		}
		end := len(conf)
		if i+1 < len(users) {
			end = users[i+1][0]
		}
		var engines []string
		for _, m := range subject.FindAllStringSubmatch(conf[u[1]:end], -1) {
			engines = append(engines, m[1])
		}
		if !slices.Equal(engines, []string{string(e)}) {
			t.Errorf("nats-server.conf: user %s subscribes to the exec subjects of %v, not of %s alone (%s)", name, engines, e, contracts.ExecSubjects(e))
		}
	}
	if seen == 0 {
		t.Error("nats-server.conf has no executor user: the pattern no longer reads them")
	}
}

// TestDocumentedEnginesAreTheList: where a connections file is documented,
// the engines it may name are the list's, in the list's order.
func TestDocumentedEnginesAreTheList(t *testing.T) {
	var names []string
	for _, e := range Names() {
		names = append(names, string(e))
	}
	want := strings.Join(names, " | ")
	// A line offering the engines: "postgres | sqlite | …" after the word engine.
	offer := regexp.MustCompile(`engine\b[^\n|]*?((?:[a-z0-9]+ \| )+[a-z0-9]+)`)
	for _, f := range []string{"deploy/connections.example.yaml", "services/executor/connections/connections.go", "docs/executor-sqlite.md"} {
		m := offer.FindAllStringSubmatch(read(t, f), -1)
		if len(m) == 0 {
			t.Errorf("%s no longer offers the engines", f)
		}
		for _, o := range m {
			if o[1] != want {
				t.Errorf("%s offers the engines %q; the list is %q", f, o[1], want)
			}
		}
	}
}

func read(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
