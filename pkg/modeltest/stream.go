package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// paced writes a streamed reply piece by piece, flushing each and, when
// asked, pausing after one the way a model's tokens arrive. Every vendor's
// streaming replay writes through it.
type paced struct {
	ctx     context.Context
	w       http.ResponseWriter
	flusher http.Flusher
	delay   time.Duration
}

// newPaced writes through w, whose headers the caller has already sent.
func newPaced(ctx context.Context, w http.ResponseWriter, delay time.Duration) *paced {
	f, _ := w.(http.Flusher)
	return &paced{ctx: ctx, w: w, flusher: f, delay: delay}
}

// newSSE sends the headers of a server-sent-event stream and returns its writer.
func newSSE(ctx context.Context, w http.ResponseWriter, contentType string, delay time.Duration) *paced {
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return newPaced(ctx, w, delay)
}

// raw writes b and flushes it, then pauses if asked; false means the caller
// went away and the stream should end.
func (p *paced) raw(b []byte, pause bool) bool {
	if _, err := p.w.Write(b); err != nil {
		return false
	}
	if p.flusher != nil {
		p.flusher.Flush()
	}
	if pause && p.delay > 0 {
		t := time.NewTimer(p.delay)
		defer t.Stop()
		select {
		case <-p.ctx.Done():
			return false
		case <-t.C:
		}
	}
	return true
}

// event writes "event: name" (when name is set) and "data: <json>".
func (p *paced) event(name string, v any, pause bool) bool {
	data, err := json.Marshal(v)
	if err != nil {
		return false
	}
	var b bytes.Buffer
	if name != "" {
		b.WriteString("event: " + name + "\n")
	}
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
	return p.raw(b.Bytes(), pause)
}
