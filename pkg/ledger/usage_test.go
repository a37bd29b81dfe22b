package ledger

import (
	"encoding/json"
	"testing"

	"github.com/sondehq/sonde/contracts"
)

func entry(t *testing.T, kind contracts.EventKind, payload any) contracts.Entry {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return contracts.Entry{V: 1, Kind: kind, Data: b}
}

func TestFoldSumsUsageOncePerTurn(t *testing.T) {
	u1 := &contracts.Usage{InputTokens: 100, OutputTokens: 10, CachedTokens: 64}
	u2 := &contracts.Usage{InputTokens: 200, OutputTokens: 20, CachedTokens: 128}
	entries := []contracts.Entry{
		entry(t, contracts.KindRunStarted, contracts.RunStarted{Mode: contracts.ModeAgent}),
		entry(t, contracts.KindToolInvoked, contracts.ToolInvoked{ToolCall: contracts.ToolCall{Turn: 1, Tool: "run_read_query", Arguments: json.RawMessage(`{}`), Usage: u1}, StepID: "s1"}),
		// The same turn's usage on a later entry is not counted again.
		entry(t, contracts.KindToolRefused, contracts.ToolRefused{ToolCall: contracts.ToolCall{Turn: 1, Tool: "x", Arguments: json.RawMessage(`{}`), Usage: u1}}),
		entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: 2, Text: "done", Usage: u2}),
	}
	r := Fold("r1", entries)
	if want := (contracts.Usage{InputTokens: 300, OutputTokens: 30, CachedTokens: 192}); r.Usage != want {
		t.Fatalf("usage %+v, want %+v", r.Usage, want)
	}
}
