package modeltest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// NewGemini starts a replay server for the Gemini API's
// models/{model}:streamGenerateContent (and :generateContent) on 127.0.0.1
// at a free port. A streamed reply is server-sent events of
// GenerateContentResponse objects (alt=sse), the last carrying the
// candidate's finishReason and usageMetadata; an error is the API's
// {"error":{"code","message","status","details"}} envelope.
//
// In a Reply, ErrorType is the error's status ("INVALID_ARGUMENT",
// "RESOURCE_EXHAUSTED", …; empty picks the one the API sends with the HTTP
// status) and ErrorCode is sent as the reason of a google.rpc.ErrorInfo
// detail (e.g. "API_KEY_INVALID") — except with status 429, where it is the
// quotaId of a google.rpc.QuotaFailure violation (e.g.
// "GenerateRequestsPerDayPerProjectPerModel-FreeTier"); a 429 without one
// carries a google.rpc.RetryInfo instead. Usage is reported with
// cachedContentTokenCount.
func NewGemini(script Script, opts ...Option) (*Server, error) {
	return newServer(VendorGemini, script, opts, func(s *Server, mux *http.ServeMux) {
		mux.HandleFunc("POST /{version}/models/{call}", s.geminiGenerate)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeGeminiError(w, http.StatusNotFound, "", "", "Not found: "+r.URL.Path)
		})
	})
}

type geminiPart struct {
	Text string `json:"text,omitempty"`
	// ThoughtSignature is the opaque token Gemini puts on a part it
	// issued (the first functionCall of a turn among them), base64.
	ThoughtSignature string `json:"thoughtSignature,omitempty"`
	FunctionCall     *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall,omitempty"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse,omitempty"`
}

type geminiContent struct {
	Role  string       `json:"role"`
	Parts []geminiPart `json:"parts"`
}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Description          string          `json:"description"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	GenerationConfig struct {
		Temperature *float64 `json:"temperature"`
	} `json:"generationConfig"`
}

// neutral maps a generateContent request onto a ChatRequest.
func (g geminiRequest) neutral(model string, stream bool) ChatRequest {
	req := ChatRequest{Model: model, Stream: stream, Temperature: g.GenerationConfig.Temperature}
	if g.SystemInstruction != nil {
		var b strings.Builder
		for _, p := range g.SystemInstruction.Parts {
			b.WriteString(p.Text)
		}
		req.Messages = append(req.Messages, ChatMessage{Role: "system", Content: b.String()})
	}
	for _, c := range g.Contents {
		var text strings.Builder
		var calls []ChatToolCall
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				id := p.FunctionCall.ID
				if id == "" {
					id = p.FunctionCall.Name
				}
				args := string(p.FunctionCall.Args)
				if args == "" || args == "null" {
					args = "{}"
				}
				calls = append(calls, ChatToolCall{ID: id, Type: "function", Function: FunctionCall{Name: p.FunctionCall.Name, Arguments: args},
					Signature: p.ThoughtSignature})
			case p.FunctionResponse != nil:
				id := p.FunctionResponse.ID
				if id == "" {
					id = p.FunctionResponse.Name
				}
				req.Messages = append(req.Messages, ChatMessage{Role: "tool", ToolCallID: id, Content: geminiResponseText(p.FunctionResponse.Response)})
			case c.Role == "user":
				// Consecutive user messages arrive merged into one content,
				// a text part each: each is a message of its own again.
				req.Messages = append(req.Messages, ChatMessage{Role: "user", Content: p.Text})
			default:
				text.WriteString(p.Text)
			}
		}
		role := c.Role
		if role == "model" {
			role = "assistant"
		}
		if text.Len() > 0 || len(calls) > 0 {
			req.Messages = append(req.Messages, ChatMessage{Role: role, Content: text.String(), ToolCalls: calls})
		}
	}
	for _, t := range g.Tools {
		for _, fd := range t.FunctionDeclarations {
			params := fd.ParametersJSONSchema
			if len(params) == 0 {
				params = fd.Parameters
			}
			req.Tools = append(req.Tools, ChatTool{Type: "function", Function: ToolFunction{Name: fd.Name, Description: fd.Description, Parameters: params}})
		}
	}
	return req
}

// geminiResponseText is a function response as text: its "output" (or
// "content") member when that is a string, else its JSON.
func geminiResponseText(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil {
		for _, k := range []string{"output", "content"} {
			var s string
			if v, ok := m[k]; ok && json.Unmarshal(v, &s) == nil {
				return s
			}
		}
	}
	return string(raw)
}

func (s *Server) geminiGenerate(w http.ResponseWriter, r *http.Request) {
	n := s.seq.Add(1)
	model, method, ok := strings.Cut(r.PathValue("call"), ":")
	if !ok || (method != "streamGenerateContent" && method != "generateContent") {
		writeGeminiError(w, http.StatusNotFound, "", "", "Unknown method: "+r.URL.Path)
		return
	}
	body, err := readBody(r)
	if err != nil {
		writeGeminiError(w, http.StatusBadRequest, "", "", "The request body could not be read.")
		return
	}
	var gr geminiRequest
	if err := json.Unmarshal(body, &gr); err != nil || len(gr.Contents) == 0 {
		writeGeminiError(w, http.StatusBadRequest, "", "", "Invalid JSON payload received.")
		return
	}
	stream := method == "streamGenerateContent"
	if msg := s.unsigned(gr); msg != "" {
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "", msg)
		return
	}
	req := gr.neutral(model, stream)
	reply, err := s.decide(r, body, &req)
	if err != nil {
		writeGeminiError(w, http.StatusInternalServerError, "", "", "The replay script failed: "+err.Error())
		return
	}
	if reply.ContextExceeded {
		prompt := promptTokens(body)
		writeGeminiError(w, http.StatusBadRequest, "INVALID_ARGUMENT", "",
			fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", prompt, s.windowOf(prompt)))
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		writeGeminiError(w, reply.Status, reply.ErrorType, reply.ErrorCode, reply.ErrorMessage)
		return
	}
	g := geminiReply{model: model, id: "replay" + strconv.FormatInt(n, 10), reply: reply}
	if len(reply.ToolCalls) > 0 && reply.FinishReason != FinishMalformedCall {
		g.signature = s.sign(n, gr, reply.ToolCalls[0])
	}
	if !stream || reply.IgnoreStream || r.URL.Query().Get("alt") != "sse" {
		// Without alt=sse the API answers one JSON document; so does a server
		// that ignores streaming.
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		_ = json.NewEncoder(w).Encode(g.whole())
		return
	}
	g.stream(r.Context(), w, s.opts.chunkDelay)
}

// geminiStatus is the status string the API sends with an HTTP status.
func geminiStatus(code int, status string) string {
	if status != "" {
		return status
	}
	switch code {
	case http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		return "INVALID_ARGUMENT"
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusTooManyRequests:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	case http.StatusGatewayTimeout:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}

func geminiErrorBody(code int, status, reason, msg string) map[string]any {
	status = geminiStatus(code, status)
	if msg == "" {
		msg = "replayed " + status
	}
	e := map[string]any{"code": code, "message": msg, "status": status}
	switch {
	case code == http.StatusTooManyRequests && reason != "":
		e["details"] = []any{map[string]any{
			"@type":      "type.googleapis.com/google.rpc.QuotaFailure",
			"violations": []any{map[string]any{"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests", "quotaId": reason}},
		}}
	case code == http.StatusTooManyRequests:
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}}
	case reason != "":
		e["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason, "domain": "googleapis.com"}}
	}
	return map[string]any{"error": e}
}

func writeGeminiError(w http.ResponseWriter, code int, status, reason, msg string) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(geminiErrorBody(code, status, reason, msg))
}

type geminiReply struct {
	model, id string
	reply     Reply
	// signature is the thoughtSignature put on the reply's first call.
	signature string
}

func (g geminiReply) finishReason() string {
	switch g.reply.FinishReason {
	case "":
		return "STOP" // function calls end with STOP too
	case FinishLength:
		return "MAX_TOKENS"
	case FinishMalformedCall:
		return "MALFORMED_FUNCTION_CALL"
	}
	return g.reply.FinishReason
}

// malformed reports a reply Gemini could not read as a call: it carries no
// content, only the finish reason and a finishMessage quoting the call.
func (g geminiReply) malformed() bool { return g.reply.FinishReason == FinishMalformedCall }

// finishMessage is what Gemini says beside MALFORMED_FUNCTION_CALL: the
// call as the model wrote it.
func (g geminiReply) finishMessage() string {
	var b strings.Builder
	b.WriteString("Malformed function call: ")
	for _, tc := range g.reply.ToolCalls {
		b.WriteString("print(default_api." + tc.Name + "(" + tc.Arguments + "))")
	}
	if len(g.reply.ToolCalls) == 0 {
		b.WriteString(g.reply.Text)
	}
	return b.String()
}

func (g geminiReply) usage() map[string]any {
	u := g.reply.Usage
	m := map[string]any{
		"promptTokenCount":     u.PromptTokens,
		"candidatesTokenCount": u.CompletionTokens,
		"totalTokenCount":      u.PromptTokens + u.CompletionTokens,
	}
	if u.CachedTokens > 0 {
		m["cachedContentTokenCount"] = u.CachedTokens
	}
	return m
}

func (g geminiReply) response(parts []map[string]any, finish bool) map[string]any {
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	out := map[string]any{"candidates": []any{cand}, "modelVersion": g.model, "responseId": g.id}
	if finish {
		cand["finishReason"] = g.finishReason()
		out["usageMetadata"] = g.usage()
		if g.malformed() {
			delete(cand, "content")
			cand["finishMessage"] = g.finishMessage()
		}
	}
	return out
}

func (g geminiReply) callParts() []map[string]any {
	var parts []map[string]any
	for _, tc := range g.reply.ToolCalls {
		call := map[string]any{"name": tc.Name, "args": json.RawMessage(orEmptyObject(tc.Arguments))}
		if tc.ID != "" {
			call["id"] = tc.ID
		}
		part := map[string]any{"functionCall": call}
		if len(parts) == 0 && g.signature != "" {
			part["thoughtSignature"] = g.signature
		}
		parts = append(parts, part)
	}
	return parts
}

// whole is the reply as one GenerateContentResponse.
func (g geminiReply) whole() map[string]any {
	if g.malformed() {
		return g.response(nil, true)
	}
	var parts []map[string]any
	if g.reply.Text != "" {
		parts = append(parts, map[string]any{"text": g.reply.Text})
	}
	return g.response(append(parts, g.callParts()...), true)
}

// stream writes the reply as alt=sse chunks: text pieces, then every
// function call in one chunk (Gemini sends a call whole), then the finish
// chunk with usage.
func (g geminiReply) stream(ctx context.Context, w http.ResponseWriter, delay time.Duration) {
	sse := newSSE(ctx, w, "text/event-stream", delay)
	send := func(v any, pause bool) bool {
		b, err := json.Marshal(v)
		if err != nil {
			return false
		}
		return sse.raw(bytes.Join([][]byte{[]byte("data: "), b, []byte("\r\n\r\n")}, nil), pause)
	}
	if g.malformed() {
		send(g.response(nil, true), false)
		return
	}
	for _, piece := range splitText(g.reply.Text) {
		if !send(g.response([]map[string]any{{"text": piece}}, false), true) {
			return
		}
	}
	if calls := g.callParts(); len(calls) > 0 {
		if !send(g.response(calls, false), false) {
			return
		}
	}
	switch {
	case g.reply.StreamError:
		code := http.StatusInternalServerError
		switch g.reply.ErrorType {
		case "RESOURCE_EXHAUSTED":
			code = http.StatusTooManyRequests
		case "UNAVAILABLE":
			code = http.StatusServiceUnavailable
		case "INVALID_ARGUMENT":
			code = http.StatusBadRequest
		}
		send(geminiErrorBody(code, g.reply.ErrorType, g.reply.ErrorCode, g.reply.ErrorMessage), false)
	case g.reply.TruncateStream:
	default:
		send(g.response([]map[string]any{{"text": ""}}, true), false)
	}
}

// conversation names the conversation a request continues: its system
// instruction and first user text, which every later request repeats.
func (g geminiRequest) conversation() string {
	var b strings.Builder
	if g.SystemInstruction != nil {
		for _, p := range g.SystemInstruction.Parts {
			b.WriteString(p.Text)
		}
	}
	b.WriteString("\x00")
	for _, c := range g.Contents {
		if c.Role == "user" && len(c.Parts) > 0 {
			b.WriteString(c.Parts[0].Text)
			break
		}
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// modelTurns counts the request's model contents: the turns the model has
// taken, so the reply to it is model turn modelTurns()+1.
func (g geminiRequest) modelTurns() int {
	n := 0
	for _, c := range g.Contents {
		if c.Role == "model" {
			n++
		}
	}
	return n
}

// signatureKey names where a signed call stands: its conversation, the
// model turn (0-based) whose first call it is, and the call itself, its
// arguments compacted so their key order does not matter.
func signatureKey(conversation string, turn int, name, args string) string {
	var v any
	if json.Unmarshal([]byte(orEmptyObject(args)), &v) == nil {
		if b, err := json.Marshal(v); err == nil {
			args = string(b)
		}
	}
	return conversation + "\x00" + strconv.Itoa(turn) + "\x00" + name + "\x00" + args
}

// sign draws the thoughtSignature of reply n, whose first call is tc, and
// remembers where it stands: Gemini 3 signs the first function call of each
// turn it answers.
func (s *Server) sign(n int64, g geminiRequest, tc ToolCall) string {
	sig := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf("sonde-replay-thought-%d:%s", n, tc.Name)))
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.signatures == nil {
		s.signatures = map[string]string{}
	}
	s.signatures[signatureKey(g.conversation(), g.modelTurns(), tc.Name, tc.Arguments)] = sig
	return sig
}

// unsigned is the refusal Gemini 3 gives a request whose history holds a
// function call this server signed without that signature on its part (or
// with another), or "" when every signed call carries its own. A call the
// server never signed — a later call of a parallel turn, a history built by
// hand — needs none.
func (s *Server) unsigned(g geminiRequest) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	conv, turn := g.conversation(), 0
	for i, c := range g.Contents {
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall == nil {
				continue
			}
			issued, ok := s.signatures[signatureKey(conv, turn, p.FunctionCall.Name, string(p.FunctionCall.Args))]
			switch {
			case !ok:
			case p.ThoughtSignature == "":
				return fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly. "+
					"Additional data, function call `%s`, position %d.", p.FunctionCall.Name, i+1)
			case p.ThoughtSignature != issued:
				return fmt.Sprintf("Corrupted thought signature: function call `%s`, position %d.", p.FunctionCall.Name, i+1)
			}
			break // only the first call of a turn is signed
		}
		turn++
	}
	return ""
}
