package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// streamRun answers GET /api/agent/runs/{id}/stream: the run's ledger, one
// entry at a time as it is appended, until and including run-finished or
// until the caller goes away. ?from=N resumes after position N. NDJSON by
// default; server-sent events when the caller accepts text/event-stream
// (then Last-Event-ID also resumes).
func (g *Gateway) streamRun(c echo.Context) error {
	a, err := actor(c)
	if err != nil {
		return err
	}
	r := c.Request()
	sse := strings.Contains(r.Header.Get("Accept"), api.ContentTypeSSE)
	from, err := streamFrom(r, sse)
	if err != nil {
		return err
	}
	runID := c.Param("id")
	ctx := r.Context()
	rec, err := g.ownedRun(ctx, a, runID)
	if err != nil {
		return err
	}
	l, err := g.openLedger(ctx)
	if err != nil {
		return unavailable("the run ledger cannot be reached", "retry shortly; check NATS")
	}

	// A live stream ends with its request, or when the server shuts down.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.drain, cancel)()

	w := c.Response()
	h := w.Header()
	if sse {
		h.Set(echo.HeaderContentType, api.ContentTypeSSE)
	} else {
		h.Set(echo.HeaderContentType, api.ContentTypeNDJSON)
	}
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	w.Flush()

	// A run that had finished when we looked has nothing more to come: stop at
	// its last entry even if run-finished lies before from.
	finished := rec.Status.Terminal()
	if finished && from >= uint64(rec.Entries) {
		return nil
	}
	// Entries and keep-alives are written from two goroutines; one at a time.
	var mu sync.Mutex
	write := func(b []byte) error {
		mu.Lock()
		defer mu.Unlock()
		if _, err := w.Write(b); err != nil {
			return err
		}
		w.Flush()
		return nil
	}
	// The keep-alives stop, and are known to have stopped, before the
	// handler returns and the response is finished.
	hbCtx, stopHB := context.WithCancel(ctx)
	hbDone := make(chan struct{})
	go func() { defer close(hbDone); heartbeat(hbCtx, g.cfg.StreamHeartbeat, sse, write) }()
	defer func() { stopHB(); <-hbDone }()
	var buf bytes.Buffer
	err = l.Tail(ctx, runID, from, func(e contracts.Entry) (bool, error) {
		buf.Reset()
		if err := writeEntry(&buf, e, sse); err != nil {
			return false, err
		}
		if err := write(buf.Bytes()); err != nil {
			return false, err
		}
		done := e.Kind == contracts.KindRunFinished || (finished && e.Seq >= uint64(rec.Entries))
		return !done, nil
	})
	if err != nil && !errors.Is(err, context.Canceled) && ctx.Err() == nil {
		// The header is sent; the caller sees the stream end and may resume.
		g.log.Warn("stream ended early", "run", runID, "err", err)
	}
	return nil
}

// heartbeat writes a keep-alive every interval until ctx ends: a blank line
// (NDJSON readers skip whitespace between values) or an SSE comment.
func heartbeat(ctx context.Context, interval time.Duration, sse bool, write func([]byte) error) {
	beat := []byte("\n")
	if sse {
		beat = []byte(": keep-alive\n\n")
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if write(beat) != nil {
				return
			}
		}
	}
}

// streamFrom reads the position to resume after: ?from=N, or for SSE the
// Last-Event-ID header.
func streamFrom(r *http.Request, sse bool) (uint64, error) {
	v := r.URL.Query().Get("from")
	if v == "" && sse {
		v = r.Header.Get("Last-Event-ID")
	}
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0, badRequest(contracts.CodeBadRequest, fmt.Sprintf("from %q is not a position", v),
			"pass the seq of the last entry you received, or 0 for the whole ledger")
	}
	return n, nil
}

func writeEntry(buf *bytes.Buffer, e contracts.Entry, sse bool) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("gateway: encode entry %d: %w", e.Seq, err)
	}
	if sse {
		fmt.Fprintf(buf, "id: %d\nevent: %s\ndata: %s\n\n", e.Seq, e.Kind, b)
		return nil
	}
	buf.Write(b)
	buf.WriteByte('\n')
	return nil
}
