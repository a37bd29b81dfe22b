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
	offSchema := write("bad.json", `{"version":1,"models":{"m":{"turnLimit":20,"temperature":0.2}}}`)
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
			if tu == nil || tu.State != c.state || tu.SettingsSource != c.source || (tu.Settings != nil) != c.settings {
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
