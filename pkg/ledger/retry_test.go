package ledger_test

import (
	"context"
	"net"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/natstest"
)

// restartable is a JetStream server whose store outlives restarts, and a
// client connection that follows it to whatever port it listens on next.
type restartable struct {
	t    *testing.T
	dir  string
	srv  *natstest.Server
	addr atomic.Value // host:port of the server now
}

func startRestartable(t *testing.T) *restartable {
	r := &restartable{t: t, dir: t.TempDir()}
	r.start()
	return r
}

func (r *restartable) start() {
	r.srv = natstest.StartIn(r.t, r.dir)
	u, err := url.Parse(r.srv.ClientURL())
	if err != nil {
		r.t.Fatal(err)
	}
	r.addr.Store(u.Host)
}

// Dial dials the server's current address, whatever address nats.go asks.
func (r *restartable) Dial(network, _ string) (net.Conn, error) {
	return net.Dial(network, r.addr.Load().(string))
}

// connect opens a client that reconnects across restarts.
func (r *restartable) connect() *nats.Conn {
	nc, err := nats.Connect(r.srv.ClientURL(), nats.SetCustomDialer(r), nats.MaxReconnects(-1),
		nats.ReconnectWait(20*time.Millisecond), nats.ReconnectBufSize(8<<20))
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(nc.Close)
	return nc
}

// TestAppendRetriesAcrossAServerThatStopsAnswering (issue 17, item 14): an
// append made while JetStream does not answer (here its server restarts, as
// a cluster node does while its stream elects a leader) is tried again,
// bounded, until the server is back; it lands once, at its position.
// Before, the first try's "no response from stream" or timeout failed the
// append and the drive waited out its lease.
func TestAppendRetriesAcrossAServerThatStopsAnswering(t *testing.T) {
	r := startRestartable(t)
	js, err := jetstream.New(r.connect())
	if err != nil {
		t.Fatal(err)
	}
	l := open(t, js, ledger.WithWriter("w"), ledger.WithAppendRetry(30*time.Second, 300*time.Millisecond))
	ctx := context.Background()
	first, err := l.Append(ctx, "r1", 0, entry(t, contracts.KindRunStarted, contracts.RunStarted{Objective: "x"}))
	if err != nil {
		t.Fatal(err)
	}
	r.srv.Stop()
	done := make(chan error, 1)
	go func() {
		_, err := l.Append(ctx, "r1", first, entry(t, contracts.KindClosingStatement, contracts.ClosingStatement{Turn: 1, Text: "during"}))
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond) // several tries go unanswered
	r.start()
	if err := <-done; err != nil {
		t.Fatalf("the append made while the server was down failed: %v", err)
	}
	es, err := l.Read(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[1].Kind != contracts.KindClosingStatement {
		t.Fatalf("the ledger holds %d entries, want the header and the one append", len(es))
	}
}

// TestAppendRetryIsBounded: a stream that never answers again fails the
// append once the bound is spent, rather than holding the drive for ever.
func TestAppendRetryIsBounded(t *testing.T) {
	r := startRestartable(t)
	js, err := jetstream.New(r.connect())
	if err != nil {
		t.Fatal(err)
	}
	l := open(t, js, ledger.WithWriter("w"), ledger.WithAppendRetry(time.Second, 200*time.Millisecond))
	r.srv.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := l.Append(ctx, "r1", 0, entry(t, contracts.KindRunStarted, contracts.RunStarted{Objective: "x"})); err == nil {
		t.Fatal("an append to a server that is gone succeeded")
	}
	if ctx.Err() != nil {
		t.Fatal("the append outlived its bound and ran until its caller gave up")
	}
}
