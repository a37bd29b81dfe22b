package contracts

import "encoding/json"

// MessageRole is who wrote a transcript message.
type MessageRole string

// The message roles.
const (
	RoleSystem    MessageRole = "system"
	RoleUser      MessageRole = "user"
	RoleAssistant MessageRole = "assistant"
	RoleTool      MessageRole = "tool"
)

// Message is one transcript message sent to a model.
type Message struct {
	Role    MessageRole `json:"role"`
	Content string      `json:"content,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ModelToolCall `json:"toolCalls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"toolCallId,omitempty"`
}

// ModelToolCall is one tool call a model asked for.
type ModelToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments is the JSON text the model sent, verbatim.
	Arguments string `json:"arguments"`
	// Signature is the vendor's opaque token for the call (Gemini's
	// thoughtSignature): recorded with the call and sent back with it.
	Signature string `json:"signature,omitempty"`
}

// ToolSpec declares one tool to a model.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// ModelTurnRequest asks modelturn for one model call.
type ModelTurnRequest struct {
	RunID    string     `json:"runId"`
	Turn     int        `json:"turn"`
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools,omitempty"`
	// TimeoutMs bounds this one call; the smaller of it and the service's own
	// ceiling applies.
	TimeoutMs int64 `json:"timeoutMs,omitempty"`
}

// Usage counts the tokens of one call.
type Usage struct {
	InputTokens  int64 `json:"inputTokens"`
	OutputTokens int64 `json:"outputTokens"`
	CachedTokens int64 `json:"cachedTokens"`
}

// ModelFailure classifies a failed model call by type.
type ModelFailure struct {
	// Reason is one of the model-* failure reasons.
	Reason    FailureReason `json:"reason"`
	Retryable bool          `json:"retryable"`
	// Message is one sentence Sonde wrote; the vendor's text goes to the log only.
	Message string `json:"message"`
}

// ModelTurnReply answers ModelTurnRequest: the model's text, its tool calls,
// the finish reason and usage, or a classified failure.
type ModelTurnReply struct {
	Provider  string          `json:"provider"`
	Model     string          `json:"model"`
	Demo      bool            `json:"demo,omitempty"`
	Text      string          `json:"text,omitempty"`
	ToolCalls []ModelToolCall `json:"toolCalls,omitempty"`
	// FinishReason is the vendor's, or one of the Finish* values when it
	// means something the run acts on.
	FinishReason string        `json:"finishReason,omitempty"`
	Usage        Usage         `json:"usage"`
	Failure      *ModelFailure `json:"failure,omitempty"`
}

// The finish reasons every adapter normalises to, because the run acts on
// them: a turn cut at the output limit, and a call the vendor itself could
// not read (Gemini's MALFORMED_FUNCTION_CALL).
const (
	FinishLength        = "length"
	FinishMalformedCall = "malformed-call"
)

// ModelDelta is one streamed fragment of a model turn's text, or a
// heartbeat: while a turn is in flight modelturn publishes one with
// Heartbeat set and no text at a fixed interval, so the orchestrator can tell
// a slow model from a lost turn.
type ModelDelta struct {
	RunID     string `json:"runId"`
	Turn      int    `json:"turn"`
	Text      string `json:"text"`
	Heartbeat bool   `json:"heartbeat,omitempty"`
}

// ModelProbeRequest asks modelturn what the configured model is and, with
// Capabilities, what it can do.
type ModelProbeRequest struct {
	// Capabilities asks for the capability probe on the wire (tool calling,
	// the declared schema honoured, streaming). Without it the reply names
	// the model and its settings only, and costs no model call.
	Capabilities bool `json:"capabilities,omitempty"`
}

// The capabilities the probe establishes.
const (
	CapabilityToolCalling      = "toolCalling"
	CapabilityStructuredOutput = "structuredOutput"
	CapabilityStreaming        = "streaming"
)

// The states of an operator's model-tuning document.
const (
	TuningApplied = "applied"
	TuningIgnored = "ignored"
	TuningUnset   = "unset"
)

// The sources of a model's settings (DriverResolved.SettingsSource).
const (
	SettingsBundled         = "bundled"
	SettingsOperator        = "operator"
	SettingsOperatorIgnored = "operator-ignored"
)

// ModelSettings are the measured per-model settings a drive uses; a zero or
// absent field leaves the drive's default.
type ModelSettings struct {
	// TurnLimit caps the run's model turns below its workflow's budget.
	TurnLimit int `json:"turnLimit,omitempty"`
	// ReadingsBeforeReport is how many readings the model takes before it is
	// asked for the report.
	ReadingsBeforeReport int `json:"readingsBeforeReport,omitempty"`
	// AskAgainOnEmptyTurn says whether a turn with no text and no call is
	// asked again.
	AskAgainOnEmptyTurn *bool `json:"askAgainOnEmptyTurn,omitempty"`
	// NumCtx is the context window asked of a local (ollama) model, in tokens.
	NumCtx int `json:"numCtx,omitempty"`
	// ContextTokens is the model's context window in tokens: what one
	// result rendered for the model is held to a share of. Zero: unknown
	// (NumCtx, when set, is used).
	ContextTokens int `json:"contextTokens,omitempty"`
	// Temperature is the sampling temperature asked of the model; nil
	// leaves the service's default (low).
	Temperature *float64 `json:"temperature,omitempty"`
}

// ModelTuning reports what became of the operator's model-tuning document
// (AGENT_MODEL_TUNING_PATH) and which settings the configured model gets.
type ModelTuning struct {
	// State is TuningApplied, TuningIgnored or TuningUnset.
	State string `json:"state"`
	// Path is the document's path, when one is set.
	Path string `json:"path,omitempty"`
	// Digest is "sha256:<hex>" of the applied document.
	Digest string `json:"digest,omitempty"`
	// Reason says why an ignored document was ignored.
	Reason string `json:"reason,omitempty"`
	// SettingsSource is where the configured model's settings come from.
	SettingsSource string `json:"settingsSource"`
	// Settings are the configured model's settings, when any are set.
	Settings *ModelSettings `json:"settings,omitempty"`
}

// ModelProbeReply is the probe's verdict: capabilities established on the
// wire, those not established (missing) and those shown absent (disproved).
type ModelProbeReply struct {
	Provider  string        `json:"provider"`
	Model     string        `json:"model"`
	Demo      bool          `json:"demo,omitempty"`
	Verified  []string      `json:"verified,omitempty"`
	Missing   []string      `json:"missing,omitempty"`
	Disproved []string      `json:"disproved,omitempty"`
	Failure   *ModelFailure `json:"failure,omitempty"`
	// Message is the probe's one sentence on its verdict.
	Message string `json:"message,omitempty"`
	// Tuning reports the model-tuning document and the model's settings.
	Tuning *ModelTuning `json:"tuning,omitempty"`
}
