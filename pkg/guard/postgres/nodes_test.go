package postgres

import (
	"strings"
	"testing"

	pg_query "github.com/pganalyze/pg_query_go/v6"
	"github.com/sondehq/sonde/contracts"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// TestEveryNodeKindHasARule holds the walker to every kind of node pg_query
// can produce (the oneof of pg_query.Node): each is admitted, gated by the
// server's version or refused, explicitly. A pg_query_go upgrade that adds
// a kind fails here until nodes.go says what to do with it (issue 17,
// item 1).
func TestEveryNodeKindHasARule(t *testing.T) {
	oneof := (&pg_query.Node{}).ProtoReflect().Descriptor().Oneofs().ByName("node")
	if oneof == nil {
		t.Fatal("pg_query.Node has no oneof node")
	}
	kinds := map[protoreflect.Name]bool{"Node": true}
	for i := 0; i < oneof.Fields().Len(); i++ {
		kinds[oneof.Fields().Get(i).Message().Name()] = true
	}
	if len(kinds) < 250 {
		t.Fatalf("only %d node kinds enumerated", len(kinds))
	}
	for k := range kinds {
		if _, ok := nodeRules[k]; !ok {
			t.Errorf("node kind %s has no rule in nodeRules: admit it (and walk it), gate it or refuse it", k)
		}
	}
	for k := range nodeRules {
		if !kinds[k] {
			t.Errorf("nodeRules names %s, which pg_query does not produce", k)
		}
	}
	// Every statement kind but SELECT is refused.
	for k := range kinds {
		if strings.HasSuffix(string(k), "Stmt") && k != "SelectStmt" && nodeRules[k].code == "" {
			t.Errorf("statement kind %s is admitted", k)
		}
	}
}

// TestUnknownNodeKindRefused feeds the walker a message of a kind that no
// rule names: it must refuse, never walk it.
func TestUnknownNodeKindRefused(t *testing.T) {
	w := &walker{version: 170000}
	w.walk((&pg_query.ScanToken{}).ProtoReflect())
	if w.refusal == nil || w.refusal.Code != contracts.RefuseUnsupported {
		t.Fatalf("unknown node kind: %+v, want unsupported", w.refusal)
	}
}

func TestVersionText(t *testing.T) {
	for v, want := range map[int]string{150018: "15.18", 170000: "17.0", 90624: "9.6.24"} {
		if got := versionText(v); got != want {
			t.Errorf("versionText(%d) = %s, want %s", v, got, want)
		}
	}
}
