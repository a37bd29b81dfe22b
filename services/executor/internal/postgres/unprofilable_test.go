package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// TestUnprofilableNamesOnlyReadableSequences: a sequence is named back to
// the model (as not profilable) only when the readable patterns allow it;
// one in a schema they hide is counted, never named.
func TestUnprofilableNamesOnlyReadableSequences(t *testing.T) {
	s := testServer(t)
	mustExec(t, s.admin, "CREATE SEQUENCE public.shown_seq; CREATE SCHEMA hidden_seqs; CREATE SEQUENCE hidden_seqs.secret_seq")
	e := s.opsEngine(t, "public.*")
	cat, err := e.Unprofilable(context.Background(), engine.Request{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	shown := false
	for _, r := range cat.Relations {
		shown = shown || r.Schema == "public" && r.Name == "shown_seq" && r.EngineKind == "sequence"
		if r.Schema == "hidden_seqs" || r.Name == "secret_seq" {
			t.Errorf("an unreadable sequence is named: %+v", r)
		}
	}
	if !shown || cat.Unreadable < 1 {
		t.Errorf("shown %v, unreadable %d: %+v", shown, cat.Unreadable, cat.Relations)
	}
}
