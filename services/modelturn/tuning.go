package modelturn

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn/internal/ollamachat"
)

// bundledTuning is the document of per-model settings Sonde ships. A model
// it does not name is driven with the defaults.
//
//go:embed tuning.json
var bundledTuning []byte

// maxTuningBytes bounds an operator's tuning document.
const maxTuningBytes = 1 << 20

// The bounds of a context window, in tokens, wherever one is configured
// (contextTokens, AGENT_MODEL_CONTEXT_TOKENS): no model that can drive an
// agent run has less than 2k, none has more than 2M.
const (
	minContextTokens = 2048
	maxContextTokens = 1 << 21
)

// DefaultTemperature is the sampling temperature every adapter asks for
// when the model's settings name none: low, because a run wants the same
// reading of the same rows every time, not variety.
const DefaultTemperature = 0.2

// tuningDoc is the shape of a tuning document: settings per model name.
type tuningDoc struct {
	Version int                                `json:"version"`
	Models  map[string]contracts.ModelSettings `json:"models"`
}

// parseTuning decodes a tuning document strictly: an unknown key, a value of
// the wrong type or out of bounds makes the whole document off-schema.
func parseTuning(b []byte) (tuningDoc, error) {
	var doc tuningDoc
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return doc, fmt.Errorf("not a tuning document: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return doc, errors.New("not a tuning document: content after the JSON object")
	}
	if doc.Version != 1 {
		return doc, fmt.Errorf("version %d is not supported (want 1)", doc.Version)
	}
	for name, s := range doc.Models {
		switch {
		case name == "":
			return doc, errors.New("a model entry has an empty name")
		case s.TurnLimit < 0 || s.TurnLimit > 200:
			return doc, fmt.Errorf("model %q: turnLimit %d is outside 1..200", name, s.TurnLimit)
		case s.ReadingsBeforeReport < 0 || s.ReadingsBeforeReport > 100:
			return doc, fmt.Errorf("model %q: readingsBeforeReport %d is outside 1..100", name, s.ReadingsBeforeReport)
		case s.NumCtx != 0 && (s.NumCtx < 2048 || s.NumCtx > 1<<21):
			return doc, fmt.Errorf("model %q: numCtx %d is outside 2048..2097152", name, s.NumCtx)
		case s.ContextTokens != 0 && (s.ContextTokens < minContextTokens || s.ContextTokens > maxContextTokens):
			return doc, fmt.Errorf("model %q: contextTokens %d is outside %d..%d", name, s.ContextTokens, minContextTokens, maxContextTokens)
		case s.Temperature != nil && (*s.Temperature < 0 || *s.Temperature > 2):
			return doc, fmt.Errorf("model %q: temperature %g is outside 0..2", name, *s.Temperature)
		}
	}
	return doc, nil
}

// resolveTuning merges the operator's document (path, may be empty) over
// the bundled one, whole per model, and reports what became of it and which
// settings model gets. A missing, unreadable or off-schema document is
// ignored: the bundled settings stand and the report says why.
func resolveTuning(path, model string) contracts.ModelTuning {
	bundled, err := parseTuning(bundledTuning)
	if err != nil {
		panic("modelturn: the bundled tuning document is off-schema: " + err.Error())
	}
	t := contracts.ModelTuning{State: contracts.TuningUnset, SettingsSource: contracts.SettingsBundled}
	settings, ok := bundled.Models[model]
	if path != "" {
		t.Path = path
		doc, digest, reason := readTuning(path)
		switch {
		case reason != "":
			t.State, t.Reason, t.SettingsSource = contracts.TuningIgnored, reason, contracts.SettingsOperatorIgnored
		default:
			t.State, t.Digest = contracts.TuningApplied, digest
			if s, named := doc.Models[model]; named {
				// A context window is a fact about the model, not a
				// choice: an operator's entry that names none keeps the
				// shipped one.
				if s.ContextTokens == 0 && ok {
					s.ContextTokens = settings.ContextTokens
				}
				settings, ok, t.SettingsSource = s, true, contracts.SettingsOperator
			}
		}
	}
	if ok {
		t.Settings = &settings
	}
	return t
}

// readTuning reads and parses an operator's document; reason is why it is
// ignored, empty when it applies.
func readTuning(path string) (doc tuningDoc, digest, reason string) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return doc, "", "the file does not exist"
	}
	if err != nil {
		return doc, "", "the file cannot be read: " + err.Error()
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTuningBytes+1))
	if err != nil {
		return doc, "", "the file cannot be read: " + err.Error()
	}
	if len(b) > maxTuningBytes {
		return doc, "", fmt.Sprintf("the file is larger than %d bytes", maxTuningBytes)
	}
	doc, err = parseTuning(b)
	if err != nil {
		return doc, "", err.Error()
	}
	sum := sha256.Sum256(b)
	return doc, "sha256:" + hex.EncodeToString(sum[:]), ""
}

// completeSettings fills in what every call of the model uses, whatever the
// documents say, so the probe reports (and each drive records) what the
// model is really driven with: the sampling temperature (the model's own,
// else DefaultTemperature; none for Anthropic, whose API version has no
// sampling parameters) and the context window in tokens.
//
// The window of an Ollama model is the num_ctx it is asked for —
// AGENT_MODEL_CONTEXT_TOKENS, else the tuned numCtx, else
// ollamachat.DefaultNumCtx — held to the model's own window when the
// settings know it. For every other provider it is AGENT_MODEL_CONTEXT_TOKENS,
// else the settings' contextTokens, else unknown (zero). It returns the
// num_ctx to ask an Ollama model for.
func completeSettings(cfg Config, t *contracts.ModelTuning, log *slog.Logger) (numCtx int) {
	var s contracts.ModelSettings
	if t.Settings != nil {
		s = *t.Settings
	}
	switch {
	case cfg.Provider == ProviderAnthropic:
		if s.Temperature != nil {
			log.Warn("the model's tuned temperature is not sent: the Anthropic API version Sonde speaks takes none",
				"model", cfg.Model, "temperature", *s.Temperature)
		}
		s.Temperature = nil
	case s.Temperature == nil:
		v := DefaultTemperature
		s.Temperature = &v
	}
	if cfg.Provider == ProviderOllama {
		numCtx = cmp.Or(cfg.ContextTokens, s.NumCtx, ollamachat.DefaultNumCtx)
		s.NumCtx = numCtx
		if s.ContextTokens == 0 || numCtx < s.ContextTokens {
			s.ContextTokens = numCtx
		}
	} else if cfg.ContextTokens > 0 {
		s.ContextTokens = cfg.ContextTokens
	}
	t.Settings = &s
	return numCtx
}
