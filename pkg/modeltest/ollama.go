package modeltest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// NewOllama starts a replay server for Ollama's native chat API
// (POST /api/chat) on 127.0.0.1 at a free port. A streamed reply is
// newline-delimited JSON (application/x-ndjson): message fragments with
// "done": false, tool calls whole, and a last line with "done": true, the
// done_reason and the token counts; an error is {"error": "…"} with the
// HTTP status. Ollama reports no cached tokens, so Usage.CachedTokens is not
// sent.
func NewOllama(script Script, opts ...Option) (*Server, error) {
	return newServer(VendorOllama, script, opts, func(s *Server, mux *http.ServeMux) {
		mux.HandleFunc("POST /api/chat", s.ollamaChat)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeOllamaError(w, http.StatusNotFound, "404 page not found")
		})
	})
}

type ollamaRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role      string `json:"role"`
		Content   string `json:"content"`
		ToolCalls []struct {
			ID       string `json:"id"`
			Function struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			} `json:"function"`
		} `json:"tool_calls"`
		ToolName   string `json:"tool_name"`
		ToolCallID string `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string       `json:"type"`
		Function ToolFunction `json:"function"`
	} `json:"tools"`
	Stream  *bool `json:"stream"`
	Options struct {
		Temperature *float64 `json:"temperature"`
	} `json:"options"`
}

func (o ollamaRequest) neutral() ChatRequest {
	req := ChatRequest{Model: o.Model, Stream: o.Stream == nil || *o.Stream, Temperature: o.Options.Temperature}
	for _, m := range o.Messages {
		cm := ChatMessage{Role: m.Role, Content: m.Content}
		for _, tc := range m.ToolCalls {
			id := tc.ID
			if id == "" {
				id = tc.Function.Name
			}
			cm.ToolCalls = append(cm.ToolCalls, ChatToolCall{ID: id, Type: "function",
				Function: FunctionCall{Name: tc.Function.Name, Arguments: orEmptyObject(string(tc.Function.Arguments))}})
		}
		if m.Role == "tool" {
			cm.ToolCallID = m.ToolCallID
			if cm.ToolCallID == "" {
				cm.ToolCallID = m.ToolName
			}
			cm.Name = m.ToolName
		}
		req.Messages = append(req.Messages, cm)
	}
	for _, t := range o.Tools {
		req.Tools = append(req.Tools, ChatTool{Type: t.Type, Function: t.Function})
	}
	return req
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	n := s.seq.Add(1)
	body, err := readBody(r)
	if err != nil {
		writeOllamaError(w, http.StatusBadRequest, "the request body could not be read")
		return
	}
	var or ollamaRequest
	if err := json.Unmarshal(body, &or); err != nil {
		writeOllamaError(w, http.StatusBadRequest, "invalid character in request body")
		return
	}
	if or.Model == "" {
		writeOllamaError(w, http.StatusBadRequest, "model is required")
		return
	}
	req := or.neutral()
	reply, err := s.decide(r, body, &req)
	if err != nil {
		writeOllamaError(w, http.StatusInternalServerError, "the replay script failed: "+err.Error())
		return
	}
	if reply.ContextExceeded {
		writeOllamaError(w, http.StatusBadRequest, "the input length exceeds the context length")
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		msg := reply.ErrorMessage
		if msg == "" {
			msg = strings.ToLower(http.StatusText(reply.Status)) + " (replayed)"
		}
		writeOllamaError(w, reply.Status, msg)
		return
	}
	o := ollamaReply{model: req.Model, reply: reply}
	// Ollama gives every call an id of its own.
	o.reply.ToolCalls = withIDs(reply.ToolCalls, "call_o", n)
	if o.reply.FinishReason == FinishLength {
		o.reply.FinishReason = "length" // num_predict reached
	}
	if !req.Stream || reply.IgnoreStream {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		_ = json.NewEncoder(w).Encode(o.whole())
		return
	}
	o.stream(r.Context(), w, s.opts.chunkDelay)
}

func writeOllamaError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

type ollamaReply struct {
	model string
	reply Reply
}

func (o ollamaReply) line(content string, calls []map[string]any, done bool) map[string]any {
	msg := map[string]any{"role": "assistant", "content": content}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	out := map[string]any{"model": o.model, "created_at": time.Now().UTC().Format(time.RFC3339Nano), "message": msg, "done": done}
	if done {
		reason := o.reply.FinishReason
		if reason == "" {
			reason = "stop" // Ollama says stop after tool calls too
		}
		out["done_reason"] = reason
		out["total_duration"] = int64(1_000_000)
		out["prompt_eval_count"] = o.reply.Usage.PromptTokens
		out["eval_count"] = o.reply.Usage.CompletionTokens
	}
	return out
}

func (o ollamaReply) calls() []map[string]any {
	var out []map[string]any
	for i, tc := range o.reply.ToolCalls {
		fn := map[string]any{"index": i, "name": tc.Name, "arguments": json.RawMessage(orEmptyObject(tc.Arguments))}
		call := map[string]any{"function": fn}
		if tc.ID != "" {
			call["id"] = tc.ID
		}
		out = append(out, call)
	}
	return out
}

// whole is the non-streamed answer: one object with done true.
func (o ollamaReply) whole() map[string]any { return o.line(o.reply.Text, o.calls(), true) }

func (o ollamaReply) stream(ctx context.Context, w http.ResponseWriter, delay time.Duration) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	out := newPaced(ctx, w, delay)
	send := func(v any, pause bool) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		return out.raw(append(b, '\n'), pause)
	}
	for _, piece := range splitText(o.reply.Text) {
		if !send(o.line(piece, nil, false), true) {
			return
		}
	}
	if calls := o.calls(); len(calls) > 0 {
		if !send(o.line("", calls, false), false) {
			return
		}
	}
	switch {
	case o.reply.StreamError:
		msg := o.reply.ErrorMessage
		if msg == "" {
			msg = "an error was encountered while running the model (replayed)"
		}
		send(map[string]string{"error": msg}, false)
	case o.reply.TruncateStream:
	default:
		send(o.line("", nil, true), false)
	}
}
