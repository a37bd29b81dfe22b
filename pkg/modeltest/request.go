package modeltest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// ChatRequest is a request as the server decoded it, in the vocabulary of
// the OpenAI chat-completions format whatever the vendor: a system prompt is
// a "system" message, a tool result a "tool" message naming its call, an
// assistant's tool calls carry their arguments as JSON text. Vendor, Path and
// Body keep what is particular to the vendor for tests that check it.
type ChatRequest struct {
	Model         string         `json:"model"`
	Messages      []ChatMessage  `json:"messages"`
	Tools         []ChatTool     `json:"tools,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
	StreamOptions *StreamOptions `json:"stream_options,omitempty"`
	// Temperature is the sampling temperature the request asked for (OpenAI
	// and Anthropic "temperature", Gemini generationConfig.temperature,
	// Ollama options.temperature); nil when it named none.
	Temperature *float64 `json:"temperature,omitempty"`
	// Header holds the request's HTTP headers (Authorization among them).
	Header http.Header `json:"-"`
	// Vendor is the wire format the request arrived in (VendorOpenAI, …).
	Vendor string `json:"-"`
	// Path is the request's URL path.
	Path string `json:"-"`
	// Body is the request body, verbatim.
	Body json.RawMessage `json:"-"`
}

// StreamOptions is the request's stream_options object.
type StreamOptions struct {
	IncludeUsage bool `json:"include_usage,omitempty"`
}

// ChatMessage is one message of a request. Content is flattened: a plain
// string as is, an array of content parts as the concatenation of its text
// parts.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content,omitempty"`
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
	Name       string         `json:"name,omitempty"`
}

// UnmarshalJSON decodes a message whose content is a string, null or an array
// of content parts.
func (m *ChatMessage) UnmarshalJSON(b []byte) error {
	var raw struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []ChatToolCall  `json:"tool_calls"`
		ToolCallID string          `json:"tool_call_id"`
		Name       string          `json:"name"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	content, err := flattenContent(raw.Content)
	if err != nil {
		return fmt.Errorf("modeltest: message content: %w", err)
	}
	*m = ChatMessage{Role: raw.Role, Content: content, ToolCalls: raw.ToolCalls, ToolCallID: raw.ToolCallID, Name: raw.Name}
	return nil
}

func flattenContent(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// ChatToolCall is one tool call of an assistant message.
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"`
	Function FunctionCall `json:"function"`
	// Signature is the thoughtSignature a Gemini request sent back on the
	// call's part, base64 as on the wire; empty for the other vendors.
	Signature string `json:"-"`
}

// FunctionCall names a function and carries its JSON arguments.
type FunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// ChatTool is one tool the request declares.
type ChatTool struct {
	Type     string       `json:"type"`
	Function ToolFunction `json:"function"`
}

// ToolFunction is a declared function tool.
type ToolFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// ToolResult is one tool message of a request, with the name of the tool
// whose call it answers (resolved from the assistant message that asked).
type ToolResult struct {
	CallID  string
	Tool    string
	Content string
}

// AssistantTurns counts the assistant messages of the request: how many turns
// the model has already taken in this conversation.
func (r ChatRequest) AssistantTurns() int {
	n := 0
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			n++
		}
	}
	return n
}

// ToolMessages returns every tool message of the request, in order.
func (r ChatRequest) ToolMessages() []ToolResult {
	return r.toolResults(0)
}

// LastToolResults returns the tool messages that follow the last assistant
// message: the answers to the calls of the previous turn.
func (r ChatRequest) LastToolResults() []ToolResult {
	last := -1
	for i, m := range r.Messages {
		if m.Role == "assistant" {
			last = i
		}
	}
	if last < 0 {
		return nil
	}
	return r.toolResults(last + 1)
}

func (r ChatRequest) toolResults(from int) []ToolResult {
	// A tool message answers a call of the assistant message before it:
	// ids a server reuses from turn to turn resolve to the right tool.
	names := map[string]string{}
	var out []ToolResult
	for i, m := range r.Messages {
		for _, c := range m.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		if m.Role == "tool" && i >= from {
			out = append(out, ToolResult{CallID: m.ToolCallID, Tool: names[m.ToolCallID], Content: m.Content})
		}
	}
	return out
}

// ToolCalls returns every tool call the assistant has made so far, in order.
func (r ChatRequest) ToolCalls() []ChatToolCall {
	var out []ChatToolCall
	for _, m := range r.Messages {
		if m.Role == "assistant" {
			out = append(out, m.ToolCalls...)
		}
	}
	return out
}

// LastUserText returns the content of the last user message.
func (r ChatRequest) LastUserText() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// HasTool reports whether the request declares a function tool named name.
func (r ChatRequest) HasTool(name string) bool {
	for _, t := range r.Tools {
		if t.Function.Name == name {
			return true
		}
	}
	return false
}

var citedID = regexp.MustCompile(`"correlationId"\s*:\s*"([^"\\]+)"`)

// CitedIDs returns the correlation ids that appear in content as
// "correlationId":"…" (the citable shape every Sonde tool result names its
// artifact in), in order of first appearance, without repeats.
func CitedIDs(content string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range citedID.FindAllStringSubmatch(content, -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, m[1])
		}
	}
	return out
}
