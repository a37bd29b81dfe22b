package modeltest

// Script decides what the replayed model answers to one request. A Script
// must be safe for concurrent use: the server calls it from one goroutine per
// request.
type Script interface {
	Reply(req ChatRequest) (Reply, error)
}

// ScriptFunc adapts a function to Script.
type ScriptFunc func(req ChatRequest) (Reply, error)

// Reply calls f.
func (f ScriptFunc) Reply(req ChatRequest) (Reply, error) { return f(req) }

// Reply is what the replayed model answers.
type Reply struct {
	// Text is the assistant's text; streamed as several deltas.
	Text string
	// ToolCalls are the calls the assistant asks for, in order; streamed with
	// their arguments split across chunks.
	ToolCalls []ToolCall
	// Usage is reported in the usage chunk (streaming, when the request asked
	// for it) or the body (non-streaming).
	Usage Usage
	// FinishReason overrides the finish reason; by default it is "tool_calls"
	// when there are tool calls and "stop" otherwise. Two words are
	// vendor-neutral and sent in each vendor's own: FinishLength (OpenAI
	// "length", Anthropic "max_tokens", Gemini "MAX_TOKENS", Ollama
	// done_reason "length") and FinishMalformedCall (Gemini's
	// MALFORMED_FUNCTION_CALL, a candidate with no content and a
	// finishMessage quoting the call; the other vendors have no such
	// ending, and are sent the word as it is). Any other word is sent
	// verbatim.
	FinishReason string

	// Status, when neither 0 nor 200, answers with that HTTP status and the
	// vendor's error body (OpenAI: {"error":{"message","type","param","code"}};
	// the others are described on NewAnthropic, NewGemini and NewOllama).
	Status int
	// ErrorCode is the vendor's error code: OpenAI's code (e.g.
	// "invalid_api_key", "model_not_found", "insufficient_quota",
	// "context_length_exceeded"; empty sends a null code), Anthropic's
	// details.error_code, Gemini's ErrorInfo reason or QuotaFailure quotaId.
	ErrorCode string
	// ErrorType is the vendor's error type (OpenAI's type, Anthropic's
	// error.type, Gemini's status); empty picks the one the vendor uses for
	// the status.
	ErrorType string
	// ErrorMessage is the error body's message; empty writes a generic one.
	ErrorMessage string

	// ContextExceeded answers with the vendor's own refusal of a prompt
	// longer than the model's context window, body for body: OpenAI's 400
	// with code context_length_exceeded, Anthropic's 400
	// invalid_request_error "prompt is too long: …", Gemini's 400
	// INVALID_ARGUMENT "The input token count (…) exceeds the maximum number
	// of tokens allowed (…).", Ollama's 400 "the input length exceeds the
	// context length". WithContextWindow sends the same refusal on its own.
	ContextExceeded bool

	// TruncateStream ends a streamed reply before its terminal marker, as a
	// connection cut short would: OpenAI's finish and usage chunks and
	// [DONE], Anthropic's message_delta and message_stop, Gemini's finish
	// chunk, Ollama's "done": true line. The SDKs report no error for it, so
	// a client must notice on its own.
	TruncateStream bool
	// StreamError, when set, ends a streamed reply after its content with
	// the vendor's in-stream error (OpenAI's data: {"error":…}, Anthropic's
	// "event: error", Gemini's error chunk, Ollama's {"error":"…"} line), as
	// when a call fails after the response began; ErrorCode, ErrorType and
	// ErrorMessage fill it.
	StreamError bool
	// IgnoreStream answers a streaming request with one buffered JSON body
	// (Content-Type application/json), as some servers do.
	IgnoreStream bool
}

// ToolCall is one tool call the replayed model asks for.
type ToolCall struct {
	// ID is the call id; empty gets "call_<n>".
	ID   string
	Name string
	// Arguments is the JSON text of the arguments, sent verbatim.
	Arguments string
}

// The vendor-neutral finish reasons a Reply may name; each server sends
// them in its vendor's words (see Reply.FinishReason).
const (
	FinishLength        = "length"
	FinishMalformedCall = "malformed-call"
)

// Usage is the token usage the replayed model reports.
type Usage struct {
	// PromptTokens counts the whole prompt, cached part included; each
	// vendor's server reports it the way that vendor does.
	PromptTokens     int64
	CompletionTokens int64
	// CachedTokens is reported as OpenAI's prompt_tokens_details.cached_tokens,
	// Anthropic's cache_read_input_tokens, Gemini's cachedContentTokenCount.
	CachedTokens int64
}
