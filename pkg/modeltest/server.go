package modeltest

import (
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

// The vendors whose wire formats a Server can speak; ChatRequest.Vendor says
// which one a request arrived in.
const (
	VendorOpenAI    = "openai"
	VendorAnthropic = "anthropic"
	VendorGemini    = "gemini"
	VendorOllama    = "ollama"
)

// maxRequestBytes bounds a request body the server will decode.
const maxRequestBytes = 32 << 20

// Option configures a Server.
type Option func(*options)

type options struct {
	record     bool
	chunkDelay time.Duration
	logger     *slog.Logger
	window     int
}

// WithoutRecording stops the server from keeping the requests it receives, for
// long-lived use (the demo provider) where Requests is never read.
func WithoutRecording() Option { return func(o *options) { o.record = false } }

// WithChunkDelay pauses after each streamed chunk of text so a reader sees
// the text arrive over time, as it would from a real model. Tool-call
// fragments are not paced.
func WithChunkDelay(d time.Duration) Option { return func(o *options) { o.chunkDelay = d } }

// WithContextWindow makes the server refuse, as its vendor does, every
// request whose prompt is longer than tokens, counting a token as four
// bytes of the request body (the estimate the demo's usage uses too), before
// the script is asked.
func WithContextWindow(tokens int) Option { return func(o *options) { o.window = tokens } }

// promptTokens estimates a request body's prompt in tokens.
func promptTokens(body []byte) int { return len(body) / 4 }

// overWindow reports whether body is longer than the server's context
// window, and the estimate.
func (s *Server) overWindow(body []byte) (int, bool) {
	n := promptTokens(body)
	return n, s.opts.window > 0 && n > s.opts.window
}

// windowOf is the window a context refusal names: the server's, or, for a
// scripted refusal of a request that fits it, one just below the prompt.
func (s *Server) windowOf(prompt int) int {
	if s.opts.window > 0 && s.opts.window < prompt {
		return s.opts.window
	}
	return max(1, prompt*3/4)
}

// WithLogger sets where the server logs requests it could not serve.
func WithLogger(l *slog.Logger) Option { return func(o *options) { o.logger = l } }

// Server replays one vendor's wire format on a loopback port, answering each
// request with what its Script decides. NewOpenAI, NewAnthropic, NewGemini and
// NewOllama start one; every vendor's request is decoded into the same
// vendor-neutral ChatRequest, so one Script can drive any of them.
type Server struct {
	vendor string
	script Script
	opts   options
	ln     net.Listener
	srv    *http.Server
	seq    atomic.Int64

	mu       sync.Mutex
	requests []ChatRequest
	// signatures are the thoughtSignatures a Gemini server issued, by
	// where each signed call stands (signatureKey).
	signatures map[string]string
}

func newServer(vendor string, script Script, opts []Option, routes func(*Server, *http.ServeMux)) (*Server, error) {
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
	s := &Server{vendor: vendor, script: script, opts: o, ln: ln}
	mux := http.NewServeMux()
	routes(s, mux)
	s.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			o.logger.Error("modeltest: serve", "err", err)
		}
	}()
	return s, nil
}

// Vendor names the wire format the server speaks (VendorOpenAI, …).
func (s *Server) Vendor() string { return s.vendor }

// URL returns the base URL the vendor's SDK takes: "http://127.0.0.1:PORT/v1"
// for OpenAI, "http://127.0.0.1:PORT" for the others.
func (s *Server) URL() string {
	if s.vendor == VendorOpenAI {
		return "http://" + s.ln.Addr().String() + "/v1"
	}
	return "http://" + s.ln.Addr().String()
}

// Close stops the server and drops open connections.
func (s *Server) Close() error {
	if err := s.srv.Close(); err != nil {
		return fmt.Errorf("modeltest: close: %w", err)
	}
	return nil
}

// Requests returns the decoded requests received so far, in arrival order.
func (s *Server) Requests() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.requests...)
}

// readBody reads a request body up to maxRequestBytes.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBytes+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxRequestBytes {
		return nil, errors.New("request body too large")
	}
	return body, nil
}

// decide completes a decoded request with what every vendor shares (vendor,
// path, headers, raw body), records it, and asks the script for the reply.
func (s *Server) decide(r *http.Request, body []byte, req *ChatRequest) (Reply, error) {
	req.Vendor, req.Path, req.Header, req.Body = s.vendor, r.URL.Path, r.Header.Clone(), body
	if s.opts.record {
		s.mu.Lock()
		s.requests = append(s.requests, *req)
		s.mu.Unlock()
	}
	if _, over := s.overWindow(body); over {
		return Reply{ContextExceeded: true}, nil
	}
	reply, err := s.script.Reply(*req)
	if err != nil {
		s.opts.logger.Error("modeltest: script failed", "vendor", s.vendor, "err", err)
	}
	return reply, err
}

// withIDs gives every call without an id one of the form <prefix><n>_<i>.
func withIDs(calls []ToolCall, prefix string, n int64) []ToolCall {
	out := append([]ToolCall(nil), calls...)
	for i := range out {
		if out[i].ID == "" {
			out[i].ID = prefix + strconv.FormatInt(n, 10) + "_" + strconv.Itoa(i)
		}
	}
	return out
}
