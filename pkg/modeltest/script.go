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
	// when there are tool calls and "stop" otherwise.
	FinishReason string

	// Status, when neither 0 nor 200, answers with that HTTP status and an
	// OpenAI-shaped error body {"error":{"message","type","param","code"}}.
	Status int
	// ErrorCode is the error body's code (e.g. "invalid_api_key",
	// "model_not_found", "insufficient_quota", "context_length_exceeded");
	// empty sends a null code.
	ErrorCode string
	// ErrorType is the error body's type; empty picks the one OpenAI uses for
	// the status.
	ErrorType string
	// ErrorMessage is the error body's message; empty writes a generic one.
	ErrorMessage string

	// TruncateStream drops the finish chunk, the usage chunk and the [DONE]
	// marker of a streamed reply, as a connection cut short would; the SDK
	// reports no error for it, so a client must notice on its own.
	TruncateStream bool
	// StreamError, when set, ends a streamed reply after its content chunks
	// with an error event, data: {"error":{"message","type","code"}}, as
	// OpenAI does when a call fails after the response began; ErrorCode,
	// ErrorType and ErrorMessage fill the event.
	StreamError bool
	// IgnoreStream answers a streaming request with one plain chat.completion
	// JSON body, as some compatible servers do.
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

// Usage is the token usage the replayed model reports.
type Usage struct {
	PromptTokens     int64
	CompletionTokens int64
	// CachedTokens is reported as prompt_tokens_details.cached_tokens.
	CachedTokens int64
}
