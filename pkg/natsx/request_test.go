package natsx_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/sondehq/sonde/pkg/natsx"
)

// startConn starts an embedded server and connects to it.
func startConn(t *testing.T) *nats.Conn {
	t.Helper()
	e, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	nc, err := e.Connect(t.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

type echoReq struct {
	Say string `json:"say"`
}

// TestRequestOutcomes: each of the three outcomes is told by its error's
// type, never its text: a subject nobody serves is not delivered (safe to
// retry), one served by a responder that never answers is unanswered (it
// may have run), one answered is replied, its body decoded, and a reply
// carrying a micro service error or an undecodable body is replied too.
func TestRequestOutcomes(t *testing.T) {
	nc := startConn(t)
	ctx := context.Background()

	t.Run("not delivered", func(t *testing.T) {
		err := natsx.Request(ctx, nc, "nobody.serves", echoReq{Say: "hi"}, nil, natsx.WithTimeout(5*time.Second))
		var re *natsx.RequestError
		if !errors.Is(err, natsx.ErrNotDelivered) || errors.Is(err, natsx.ErrUnanswered) || !errors.As(err, &re) || re.Delivered {
			t.Fatalf("no responder gave %v, want a not-delivered *RequestError", err)
		}
		if !natsx.SafeToRetry(err) || !errors.Is(err, nats.ErrNoResponders) {
			t.Errorf("not delivered: SafeToRetry %v, cause %v; want safe, nats.ErrNoResponders", natsx.SafeToRetry(err), re.Err)
		}
	})

	t.Run("unanswered", func(t *testing.T) {
		got := make(chan []byte, 1)
		sub, err := nc.Subscribe("silent.responder", func(m *nats.Msg) { got <- m.Data })
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		err = natsx.Request(ctx, nc, "silent.responder", echoReq{Say: "hi"}, nil, natsx.WithTimeout(100*time.Millisecond))
		var re *natsx.RequestError
		if !errors.Is(err, natsx.ErrUnanswered) || errors.Is(err, natsx.ErrNotDelivered) || !errors.As(err, &re) || !re.Delivered {
			t.Fatalf("a silent responder gave %v, want an unanswered *RequestError", err)
		}
		if natsx.SafeToRetry(err) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("unanswered: SafeToRetry %v, cause %v; want not safe, context.DeadlineExceeded", natsx.SafeToRetry(err), re.Err)
		}
		// The responder did get it: that is why it may have run.
		if b := <-got; string(b) != `{"say":"hi"}` {
			t.Errorf("the responder read %s", b)
		}
	})

	t.Run("cancelled", func(t *testing.T) {
		sub, err := nc.Subscribe("slow.responder", func(*nats.Msg) {})
		if err != nil {
			t.Fatal(err)
		}
		defer sub.Unsubscribe()
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err = natsx.Request(cctx, nc, "slow.responder", nil, nil)
		if !errors.Is(err, natsx.ErrUnanswered) || !errors.Is(err, context.Canceled) {
			t.Fatalf("a cancelled request gave %v, want unanswered (context.Canceled)", err)
		}
	})

	svc, err := micro.AddService(nc, micro.Config{Name: "echo", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Stop()
	if err := svc.AddEndpoint("echo", micro.HandlerFunc(func(r micro.Request) {
		var in echoReq
		_ = json.Unmarshal(r.Data(), &in)
		_ = r.RespondJSON(echoReq{Say: in.Say + "!"})
	})); err != nil {
		t.Fatal(err)
	}
	if err := svc.AddEndpoint("fail", micro.HandlerFunc(func(r micro.Request) {
		_ = r.Error("503", "not now", nil)
	})); err != nil {
		t.Fatal(err)
	}
	if err := svc.AddEndpoint("garbled", micro.HandlerFunc(func(r micro.Request) {
		_ = r.Respond([]byte("not json"))
	})); err != nil {
		t.Fatal(err)
	}

	t.Run("replied", func(t *testing.T) {
		var out echoReq
		if err := natsx.Request(ctx, nc, "echo", echoReq{Say: "hi"}, &out, natsx.WithTimeout(5*time.Second)); err != nil {
			t.Fatal(err)
		}
		if out.Say != "hi!" {
			t.Errorf("reply %+v, want hi!", out)
		}
	})

	t.Run("service error", func(t *testing.T) {
		var out echoReq
		err := natsx.Request(ctx, nc, "fail", echoReq{}, &out, natsx.WithTimeout(5*time.Second))
		var se *natsx.ServiceError
		if !errors.As(err, &se) || se.Code != "503" || se.Description != "not now" {
			t.Fatalf("a micro error reply gave %v, want a *ServiceError 503", err)
		}
		if errors.Is(err, natsx.ErrUnanswered) || errors.Is(err, natsx.ErrNotDelivered) || natsx.SafeToRetry(err) {
			t.Errorf("a service error is a reply: %v", err)
		}
	})

	t.Run("undecodable", func(t *testing.T) {
		var out echoReq
		err := natsx.Request(ctx, nc, "garbled", echoReq{}, &out, natsx.WithTimeout(5*time.Second))
		var re *natsx.ReplyError
		if !errors.As(err, &re) || errors.Is(err, natsx.ErrUnanswered) || natsx.SafeToRetry(err) {
			t.Fatalf("an undecodable reply gave %v, want a *ReplyError", err)
		}
		// Unread, the same reply is fine.
		if err := natsx.Request(ctx, nc, "garbled", echoReq{}, nil, natsx.WithTimeout(5*time.Second)); err != nil {
			t.Errorf("an unread reply gave %v", err)
		}
	})

	t.Run("unencodable", func(t *testing.T) {
		err := natsx.Request(ctx, nc, "echo", func() {}, nil)
		var re *natsx.RequestError
		if err == nil || errors.As(err, &re) || natsx.SafeToRetry(err) {
			t.Fatalf("an unencodable request gave %v, want an encoding error, no outcome", err)
		}
	})
}
