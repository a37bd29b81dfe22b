package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// NewAnthropic starts a replay server for the Anthropic Messages API
// (POST /v1/messages) on 127.0.0.1 at a free port. A streamed reply is the
// event sequence the API sends — message_start, content_block_start,
// content_block_delta (text_delta, input_json_delta), content_block_stop,
// message_delta, message_stop, with ping events between — and an error is
// the API's {"type":"error","error":{"type","message"}} envelope.
//
// In a Reply, ErrorType is the error's type ("authentication_error",
// "overloaded_error", …; empty picks the one the API sends with the status)
// and ErrorCode, when set, is sent as error.details.error_code. Usage is
// sent the Anthropic way: input_tokens counts only the uncached part of the
// prompt, cache_read_input_tokens the cached part.
func NewAnthropic(script Script, opts ...Option) (*Server, error) {
	return newServer(VendorAnthropic, script, opts, func(s *Server, mux *http.ServeMux) {
		mux.HandleFunc("POST /v1/messages", s.anthropicMessages)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeAnthropicError(w, http.StatusNotFound, "not_found_error", "", "Not found: "+r.URL.Path)
		})
	})
}

// anthropicRequest is the part of a Messages request the server reads.
type anthropicRequest struct {
	Model     string             `json:"model"`
	MaxTokens int64              `json:"max_tokens"`
	System    json.RawMessage    `json:"system"`
	Messages  []anthropicMessage `json:"messages"`
	Tools     []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	} `json:"tools"`
	Stream      bool     `json:"stream"`
	Temperature *float64 `json:"temperature"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text,omitempty"`
	ID        string          `json:"id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Content   json.RawMessage `json:"content,omitempty"`
}

// blocks reads a content field that is a string or an array of blocks.
func anthropicBlocks(raw json.RawMessage) ([]anthropicBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return []anthropicBlock{{Type: "text", Text: s}}, nil
	}
	var out []anthropicBlock
	err := json.Unmarshal(raw, &out)
	return out, err
}

// neutral maps a Messages request onto a ChatRequest.
func (a anthropicRequest) neutral() (ChatRequest, error) {
	req := ChatRequest{Model: a.Model, Stream: a.Stream, Temperature: a.Temperature}
	sys, err := anthropicBlocks(a.System)
	if err != nil {
		return req, fmt.Errorf("system: %w", err)
	}
	if len(sys) > 0 {
		var b strings.Builder
		for _, blk := range sys {
			b.WriteString(blk.Text)
		}
		req.Messages = append(req.Messages, ChatMessage{Role: "system", Content: b.String()})
	}
	for i, m := range a.Messages {
		blocks, err := anthropicBlocks(m.Content)
		if err != nil {
			return req, fmt.Errorf("message %d: %w", i, err)
		}
		var text strings.Builder
		var calls []ChatToolCall
		for _, blk := range blocks {
			switch {
			case blk.Type == "text" && m.Role == "user":
				// Consecutive user messages arrive merged into one, a text
				// block each: each is a message of its own again.
				req.Messages = append(req.Messages, ChatMessage{Role: "user", Content: blk.Text})
			case blk.Type == "text":
				text.WriteString(blk.Text)
			case blk.Type == "tool_use":
				args := string(blk.Input)
				if args == "" {
					args = "{}"
				}
				calls = append(calls, ChatToolCall{ID: blk.ID, Type: "function", Function: FunctionCall{Name: blk.Name, Arguments: args}})
			case blk.Type == "tool_result":
				content, err := flattenContent(blk.Content)
				if err != nil {
					return req, fmt.Errorf("message %d: tool_result: %w", i, err)
				}
				req.Messages = append(req.Messages, ChatMessage{Role: "tool", ToolCallID: blk.ToolUseID, Content: content})
			}
		}
		if text.Len() > 0 || len(calls) > 0 {
			req.Messages = append(req.Messages, ChatMessage{Role: m.Role, Content: text.String(), ToolCalls: calls})
		}
	}
	for _, t := range a.Tools {
		req.Tools = append(req.Tools, ChatTool{Type: "function", Function: ToolFunction{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return req, nil
}

func (s *Server) anthropicMessages(w http.ResponseWriter, r *http.Request) {
	n := s.seq.Add(1)
	w.Header().Set("request-id", "req_replay_"+strconv.FormatInt(n, 10))
	body, err := readBody(r)
	if err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "", "The request body could not be read.")
		return
	}
	var ar anthropicRequest
	if err := json.Unmarshal(body, &ar); err != nil {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "", "The request body is not valid JSON.")
		return
	}
	req, err := ar.neutral()
	if err != nil || ar.Model == "" || ar.MaxTokens <= 0 {
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "", "The request is not a valid Messages request.")
		return
	}
	reply, err := s.decide(r, body, &req)
	if err != nil {
		writeAnthropicError(w, http.StatusInternalServerError, "api_error", "", "The replay script failed: "+err.Error())
		return
	}
	if reply.ContextExceeded {
		prompt := promptTokens(body)
		writeAnthropicError(w, http.StatusBadRequest, "invalid_request_error", "",
			fmt.Sprintf("prompt is too long: %d tokens > %d maximum", prompt, s.windowOf(prompt)))
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeAnthropicError(w, reply.Status, anthropicErrorType(reply.Status, reply.ErrorType), reply.ErrorCode, reply.ErrorMessage)
		return
	}
	m := anthropicMsg{id: "msg_replay" + strconv.FormatInt(n, 10), model: req.Model, reply: reply}
	m.reply.ToolCalls = withIDs(reply.ToolCalls, "toolu_r", n)
	if !req.Stream || reply.IgnoreStream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.body())
		return
	}
	m.stream(r.Context(), w, s.opts.chunkDelay)
}

// anthropicErrorType is the error type the API sends with a status.
func anthropicErrorType(status int, typ string) string {
	if typ != "" {
		return typ
	}
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

func anthropicErrorBody(typ, code, msg string) map[string]any {
	if msg == "" {
		msg = "replayed " + typ
	}
	e := map[string]any{"type": typ, "message": msg}
	if code != "" {
		e["details"] = map[string]any{"error_code": code}
	}
	return map[string]any{"type": "error", "error": e, "request_id": "req_replay"}
}

func writeAnthropicError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(anthropicErrorBody(typ, code, msg))
}

// anthropicMsg is one reply on its way to the wire.
type anthropicMsg struct {
	id, model string
	reply     Reply
}

func (m anthropicMsg) stopReason() string {
	switch {
	case m.reply.FinishReason == FinishLength:
		return "max_tokens"
	case m.reply.FinishReason != "":
		return m.reply.FinishReason
	case len(m.reply.ToolCalls) > 0:
		return "tool_use"
	default:
		return "end_turn"
	}
}

func (m anthropicMsg) usage(output int64) map[string]any {
	u := m.reply.Usage
	return map[string]any{
		"input_tokens":                max(0, u.PromptTokens-u.CachedTokens),
		"cache_read_input_tokens":     u.CachedTokens,
		"cache_creation_input_tokens": 0,
		"output_tokens":               output,
	}
}

func (m anthropicMsg) content() []map[string]any {
	var out []map[string]any
	if m.reply.Text != "" {
		out = append(out, map[string]any{"type": "text", "text": m.reply.Text})
	}
	for _, tc := range m.reply.ToolCalls {
		out = append(out, map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": json.RawMessage(orEmptyObject(tc.Arguments))})
	}
	return out
}

// body is the non-streamed Message object.
func (m anthropicMsg) body() map[string]any {
	return map[string]any{
		"id": m.id, "type": "message", "role": "assistant", "model": m.model,
		"content": m.content(), "stop_reason": m.stopReason(), "stop_sequence": nil,
		"usage": m.usage(m.reply.Usage.CompletionTokens),
	}
}

// stream writes the Messages event sequence.
func (m anthropicMsg) stream(ctx context.Context, w http.ResponseWriter, delay time.Duration) {
	sse := newSSE(ctx, w, "text/event-stream; charset=utf-8", delay)
	start := map[string]any{"type": "message_start", "message": map[string]any{
		"id": m.id, "type": "message", "role": "assistant", "model": m.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": m.usage(1),
	}}
	if !sse.event("message_start", start, false) || !sse.event("ping", map[string]any{"type": "ping"}, false) {
		return
	}
	index := 0
	if m.reply.Text != "" {
		if !sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}}, false) {
			return
		}
		for _, piece := range splitText(m.reply.Text) {
			if !sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": piece}}, true) {
				return
			}
		}
		if !sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}, false) {
			return
		}
		index++
	}
	for _, tc := range m.reply.ToolCalls {
		if !sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Name, "input": map[string]any{}}}, false) {
			return
		}
		for _, frag := range splitRunes(tc.Arguments, 12) {
			if !sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": frag}}, false) {
				return
			}
		}
		if !sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index}, false) {
			return
		}
		index++
	}
	switch {
	case m.reply.StreamError:
		typ := m.reply.ErrorType
		if typ == "" {
			typ = "overloaded_error"
		}
		sse.event("error", anthropicErrorBody(typ, m.reply.ErrorCode, m.reply.ErrorMessage), false)
	case m.reply.TruncateStream:
	default:
		if !sse.event("message_delta", map[string]any{"type": "message_delta",
			"delta": map[string]any{"stop_reason": m.stopReason(), "stop_sequence": nil},
			"usage": map[string]any{"output_tokens": m.reply.Usage.CompletionTokens}}, false) {
			return
		}
		sse.event("message_stop", map[string]any{"type": "message_stop"}, false)
	}
}

func orEmptyObject(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}
