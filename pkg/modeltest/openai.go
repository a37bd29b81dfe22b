package modeltest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// NewOpenAI starts a replay server for the OpenAI chat-completions wire
// format on 127.0.0.1 at a free port. Its URL ends in /v1, the form the
// openai-go SDK takes as its base URL.
func NewOpenAI(script Script, opts ...Option) (*OpenAIServer, error) {
	return newServer(VendorOpenAI, script, opts, func(s *Server, mux *http.ServeMux) {
		mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
		mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "invalid_request_error", "", "Unknown request URL: "+r.Method+" "+r.URL.Path)
		})
	})
}

// OpenAIServer is a Server speaking the OpenAI chat-completions format.
type OpenAIServer = Server

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	n := s.seq.Add(1)
	w.Header().Set("x-request-id", "req_replay_"+strconv.FormatInt(n, 10))
	body, err := readBody(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "The request body could not be read.")
		return
	}
	var req ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "We could not parse the JSON body of your request.")
		return
	}
	if req.Model == "" {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "you must provide a model parameter")
		return
	}
	reply, err := s.decide(r, body, &req)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "server_error", "", "The replay script failed: "+err.Error())
		return
	}
	if reply.ContextExceeded {
		prompt := promptTokens(body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. "+
				"Please reduce the length of the messages.", s.windowOf(prompt), prompt),
			"type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded",
		}})
		return
	}
	if reply.Status != 0 && reply.Status != http.StatusOK {
		typ := reply.ErrorType
		if typ == "" {
			typ = errorTypeFor(reply.Status)
		}
		msg := reply.ErrorMessage
		if msg == "" {
			msg = http.StatusText(reply.Status) + " (replayed)"
		}
		writeError(w, reply.Status, typ, reply.ErrorCode, msg)
		return
	}

	c := completion{
		id:      "chatcmpl-replay" + strconv.FormatInt(n, 10),
		created: time.Now().Unix(),
		model:   req.Model,
		reply:   reply,
	}
	c.reply.ToolCalls = withIDs(c.reply.ToolCalls, "call_r", n)
	if !req.Stream || reply.IgnoreStream {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c.body())
		return
	}
	includeUsage := req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	c.stream(r.Context(), w, includeUsage, s.opts.chunkDelay)
}

// errorTypeFor is the error type OpenAI sends with a status.
func errorTypeFor(status int) string {
	switch {
	case status == http.StatusTooManyRequests:
		return "requests"
	case status >= 500:
		return "server_error"
	default:
		return "invalid_request_error"
	}
}

func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody(typ, code, msg))
}

// errorBody is OpenAI's error envelope; an empty code is sent as null.
func errorBody(typ, code, msg string) map[string]any {
	var codeJSON any
	if code != "" {
		codeJSON = code
	}
	if typ == "" {
		typ = "server_error"
	}
	if msg == "" {
		msg = "The server had an error while processing your request (replayed)."
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": codeJSON}}
}
