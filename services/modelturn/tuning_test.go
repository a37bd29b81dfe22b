package modelturn_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn"
)

func TestModelTuningIsAppliedIgnoredOrUnset(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"version":1,"models":{"m":{"turnLimit":20,"askAgainOnEmptyTurn":true,"numCtx":16384}}}`)
	other := write("other.json", `{"version":1,"models":{"another":{"turnLimit":20}}}`)
	offSchema := write("bad.json", `{"version":1,"models":{"m":{"turnLimit":20,"topK":40}}}`)
	outOfBounds := write("bounds.json", `{"version":1,"models":{"m":{"turnLimit":900}}}`)
	cases := []struct {
		name, path, state, source string
		settings                  bool
	}{
		{"unset", "", contracts.TuningUnset, contracts.SettingsBundled, false},
		{"applied to this model", good, contracts.TuningApplied, contracts.SettingsOperator, true},
		{"applied, model not named", other, contracts.TuningApplied, contracts.SettingsBundled, false},
		{"missing file", filepath.Join(dir, "nope.json"), contracts.TuningIgnored, contracts.SettingsOperatorIgnored, false},
		{"unknown key", offSchema, contracts.TuningIgnored, contracts.SettingsOperatorIgnored, false},
		{"out of bounds", outOfBounds, contracts.TuningIgnored, contracts.SettingsOperatorIgnored, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newService(t, modelturn.Config{Provider: modelturn.ProviderOllama, Model: "m", APIURL: "http://127.0.0.1:1", TuningPath: c.path})
			tu := s.Probe(context.Background(), contracts.ModelProbeRequest{}).Tuning
			// Every configured model's settings say what it is driven with;
			// the operator's own show in the turn limit it set.
			if tu == nil || tu.State != c.state || tu.SettingsSource != c.source || tu.Settings == nil || (tu.Settings.TurnLimit == 20) != c.settings {
				t.Fatalf("tuning %+v", tu)
			}
			if c.state == contracts.TuningIgnored && tu.Reason == "" {
				t.Fatal("an ignored document names no reason")
			}
			if c.state == contracts.TuningApplied && !strings.HasPrefix(tu.Digest, "sha256:") {
				t.Fatalf("digest %q", tu.Digest)
			}
		})
	}
}

func TestTurnTimeoutFromTheEnvironment(t *testing.T) {
	for raw, want := range map[string]string{"": "", "120000": "", "-5": "ignored", "abc": "ignored", "600000": "capped"} {
		t.Setenv("AGENT_MODEL_TURN_TIMEOUT_MS", raw)
		cfg := modelturn.ConfigFromEnv()
		got := strings.Join(cfg.Warnings, " ")
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Fatalf("%q: warnings %q", raw, got)
		}
		if raw == "600000" && cfg.TurnTimeout != modelturn.MaxTurnTimeout {
			t.Fatalf("capped to %s", cfg.TurnTimeout)
		}
	}
	if modelturn.MaxTurnTimeout.Seconds() != 179 {
		t.Fatalf("ceiling %s, want just under half of operations' 360 s", modelturn.MaxTurnTimeout)
	}
}

func TestModelTuningBoundsContextAndTemperature(t *testing.T) {
	for _, doc := range []string{
		`{"version":1,"models":{"m":{"contextTokens":1000}}}`,
		`{"version":1,"models":{"m":{"contextTokens":3000000}}}`,
		`{"version":1,"models":{"m":{"temperature":-0.1}}}`,
		`{"version":1,"models":{"m":{"temperature":2.5}}}`,
	} {
		p := filepath.Join(t.TempDir(), "t.json")
		if err := os.WriteFile(p, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		s := newService(t, modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "m", APIURL: "http://127.0.0.1:1/v1", TuningPath: p})
		if tu := s.Probe(context.Background(), contracts.ModelProbeRequest{}).Tuning; tu.State != contracts.TuningIgnored || tu.Reason == "" {
			t.Errorf("%s: tuning %+v, want ignored with a reason", doc, tu)
		}
	}
}

// TestContextWindowIsKnownTunedOrConfigured: the window the probe reports
// (and the orchestrator shares each result's rendering out of) is the
// model's known one, the operator's, AGENT_MODEL_CONTEXT_TOKENS, or for an
// Ollama model the num_ctx it is asked for; the temperature is the tuned
// one or the low default, and none for Anthropic.
func TestContextWindowIsKnownTunedOrConfigured(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "tuning.json")
	if err := os.WriteFile(doc, []byte(`{"version":1,"models":{"gpt-4o":{"turnLimit":20},"mine":{"contextTokens":65536,"temperature":0.7},`+
		`"big:70b":{"numCtx":16384,"contextTokens":131072}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		cfg         modelturn.Config
		context     int
		temperature float64 // -1: none
	}{
		{"known openai model", modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-4.1"}, 1047576, 0.2},
		{"reasoning model samples at its only temperature", modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "o3"}, 200000, 1},
		{"known claude model, no temperature", modelturn.Config{Provider: modelturn.ProviderAnthropic, Model: "claude-sonnet-4-5"}, 200000, -1},
		{"known gemini model", modelturn.Config{Provider: modelturn.ProviderGemini, Model: "gemini-2.5-pro"}, 1048576, 0.2},
		{"unknown model", modelturn.Config{Provider: modelturn.ProviderGemini, Model: "gemini-next"}, 0, 0.2},
		{"ollama: num_ctx is the window", modelturn.Config{Provider: modelturn.ProviderOllama, Model: "qwen2.5:7b"}, 32768, 0.2},
		{"ollama: held to a known smaller window", modelturn.Config{Provider: modelturn.ProviderOllama, Model: "qwen2.5:7b", ContextTokens: 65536}, 32768, 0.2},
		{"ollama: unknown model, the default num_ctx", modelturn.Config{Provider: modelturn.ProviderOllama, Model: "phi4"}, 32768, 0.2},
		{"ollama: configured", modelturn.Config{Provider: modelturn.ProviderOllama, Model: "phi4", ContextTokens: 8192}, 8192, 0.2},
		{"ollama: tuned num_ctx", modelturn.Config{Provider: modelturn.ProviderOllama, Model: "big:70b", TuningPath: doc}, 16384, 0.2},
		{"operator entry keeps the known window", modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-4o", TuningPath: doc}, 128000, 0.2},
		{"operator's window and temperature", modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "mine", TuningPath: doc}, 65536, 0.7},
		{"configured over known", modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-4.1", ContextTokens: 100000}, 100000, 0.2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.APIURL = "http://127.0.0.1:1"
			st := newService(t, c.cfg).Probe(context.Background(), contracts.ModelProbeRequest{}).Tuning.Settings
			if st == nil || st.ContextTokens != c.context {
				t.Fatalf("settings %+v, want context %d", st, c.context)
			}
			switch {
			case c.temperature < 0 && st.Temperature != nil:
				t.Fatalf("temperature %v, want none", *st.Temperature)
			case c.temperature >= 0 && (st.Temperature == nil || *st.Temperature != c.temperature):
				t.Fatalf("temperature %v, want %v", st.Temperature, c.temperature)
			}
		})
	}
}

func TestContextTokensFromTheEnvironment(t *testing.T) {
	for raw, want := range map[string]int{"": 0, "32768": 32768, "1000": 0, "lots": 0, "4000000": 0} {
		t.Setenv("AGENT_MODEL_CONTEXT_TOKENS", raw)
		cfg := modelturn.ConfigFromEnv()
		if cfg.ContextTokens != want || (want == 0 && raw != "") != strings.Contains(strings.Join(cfg.Warnings, " "), "AGENT_MODEL_CONTEXT_TOKENS") {
			t.Fatalf("%q: context %d warnings %q", raw, cfg.ContextTokens, cfg.Warnings)
		}
	}
}
