// Package wire watches the HTTP exchange of one model call for what the
// vendors' SDKs do not report: whether a streaming request was answered with
// a stream at all, or with one buffered JSON body. Like net/http/httptrace,
// the watch travels in the request's context, so it reaches the transport
// through any SDK that passes its context on.
package wire

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
)

// MaxBody bounds a buffered body kept for the adapter to read.
const MaxBody = 16 << 20

// Watch records what one call's successful response looked like.
type Watch struct {
	mu        sync.Mutex
	responded bool
	streamed  bool
	body      []byte
}

type watchKey struct{}

// WithWatch returns ctx carrying w.
func WithWatch(ctx context.Context, w *Watch) context.Context {
	return context.WithValue(ctx, watchKey{}, w)
}

// Ensure returns ctx and the watch it carries, attaching a new one when it
// carries none. A caller that attached its own (the capability probe) reads
// the same watch the adapter fills.
func Ensure(ctx context.Context) (context.Context, *Watch) {
	if w, ok := ctx.Value(watchKey{}).(*Watch); ok {
		return ctx, w
	}
	w := &Watch{}
	return WithWatch(ctx, w), w
}

// Streamed reports that a 200 response arrived as a stream (not JSON).
func (w *Watch) Streamed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.streamed
}

// Buffered returns the body of a 200 response that arrived as one JSON
// document, or nil.
func (w *Watch) Buffered() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body
}

// Responded reports that a 200 response arrived at all.
func (w *Watch) Responded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.responded
}

// observe inspects a response. A 200 JSON body is read and kept, and the
// SDK is handed an empty body in its place.
func (w *Watch) observe(res *http.Response) error {
	if res.StatusCode != http.StatusOK || res.Body == nil {
		return nil
	}
	media, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if media != "application/json" {
		w.mu.Lock()
		w.responded, w.streamed = true, true
		w.mu.Unlock()
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(res.Body, MaxBody))
	_ = res.Body.Close()
	if err != nil {
		return fmt.Errorf("read buffered body: %w", err)
	}
	w.mu.Lock()
	w.responded, w.body = true, body
	if w.body == nil {
		w.body = []byte{}
	}
	w.mu.Unlock()
	res.Body = io.NopCloser(bytes.NewReader(nil))
	return nil
}

// Transport is an http.RoundTripper that fills the Watch its request's
// context carries, and sets the credential header to exactly what Sonde
// configured: every header named in Strip is removed from the request, and
// Set's headers are set, so nothing an SDK picked up from the environment
// can authenticate a call.
type Transport struct {
	Base  http.RoundTripper
	Strip []string
	Set   http.Header
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if len(t.Strip) > 0 || len(t.Set) > 0 {
		req = req.Clone(req.Context())
		for _, h := range t.Strip {
			req.Header.Del(h)
		}
		for k, v := range t.Set {
			req.Header[k] = append([]string(nil), v...)
		}
	}
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	res, err := base.RoundTrip(req)
	if err != nil {
		return res, err
	}
	if w, ok := req.Context().Value(watchKey{}).(*Watch); ok {
		if err := w.observe(res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// Client returns an HTTP client over a Transport on a fresh clone of the
// default transport.
func Client(strip []string, set http.Header) *http.Client {
	return &http.Client{Transport: &Transport{
		Base:  http.DefaultTransport.(*http.Transport).Clone(),
		Strip: strip,
		Set:   set,
	}}
}

// From returns the watch ctx carries, or nil.
func From(ctx context.Context) *Watch {
	w, _ := ctx.Value(watchKey{}).(*Watch)
	return w
}
