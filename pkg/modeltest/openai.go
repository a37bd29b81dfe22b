package modeltest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// maxRequestBytes bounds a request body the server will decode.
const maxRequestBytes = 32 << 20

// Option configures an OpenAIServer.
type Option func(*options)

type options struct {
	record     bool
	chunkDelay time.Duration
	logger     *slog.Logger
}

// WithoutRecording stops the server from keeping the requests it receives, for
// long-lived use (the demo provider) where Requests is never read.
func WithoutRecording() Option { return func(o *options) { o.record = false } }

// WithChunkDelay pauses after each streamed chunk of text so a reader sees
// the text arrive over time, as it would from a real model. Tool-call
// fragments are not paced.
func WithChunkDelay(d time.Duration) Option { return func(o *options) { o.chunkDelay = d } }

// WithLogger sets where the server logs requests it could not serve.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// OpenAIServer serves the OpenAI chat-completions wire format on a loopback
// port, answering each request with what its Script decides.
type OpenAIServer struct {
	script Script
	opts   options
	ln     net.Listener
	srv    *http.Server
	seq    atomic.Int64

	mu       sync.Mutex
	requests []ChatRequest
}

// NewOpenAI starts a replay server on 127.0.0.1 at a free port.
func NewOpenAI(script Script, opts ...Option) (*OpenAIServer, error) {
	if script == nil {
		return nil, errors.New("modeltest: nil script")
	}
	o := options{record: true, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("modeltest: listen: %w", err)
	}
	s := &OpenAIServer{script: script, opts: o, ln: ln}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.chatCompletions)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "invalid_request_error", "", "Unknown request URL: "+r.Method+" "+r.URL.Path)
	})
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.logger.Error("modeltest: serve", "err", err)
		}
	}()
	return s, nil
}

// URL returns the base URL the SDK takes: "http://127.0.0.1:PORT/v1".
func (s *OpenAIServer) URL() string { return "http://" + s.ln.Addr().String() + "/v1" }

// Close stops the server and drops open connections.
func (s *OpenAIServer) Close() error {
	if err := s.srv.Close(); err != nil {
		return fmt.Errorf("modeltest: close: %w", err)
	}
	return nil
}

// Requests returns the decoded requests received so far, in arrival order.
func (s *OpenAIServer) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.requests...)
}

func (s *OpenAIServer) chatCompletions(w http.ResponseWriter, r *http.Request) {
	n := s.seq.Add(1)
	w.Header().Set("x-request-id", "req_replay_"+strconv.FormatInt(n, 10))
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil || len(body) > maxRequestBytes {
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
	req.Header = r.Header.Clone()
	if s.opts.record {
		s.mu.Lock()
		s.requests = append(s.requests, req)
		s.mu.Unlock()
	}

	reply, err := s.script.Reply(req)
	if err != nil {
		s.opts.logger.Error("modeltest: script failed", "err", err)
		writeError(w, http.StatusInternalServerError, "server_error", "", "The replay script failed: "+err.Error())
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
	for i := range c.reply.ToolCalls {
		if c.reply.ToolCalls[i].ID == "" {
			c.reply.ToolCalls[i].ID = fmt.Sprintf("call_r%d_%d", n, i)
		}
	}
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
