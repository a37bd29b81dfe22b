package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/internal/engine"
)

// proxy forwards TCP connections to target until cut closes them all.
type proxy struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	t.Cleanup(func() { ln.Close(); p.cut() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(u, c); u.Close() }()
			go func() { _, _ = io.Copy(c, u); c.Close() }()
		}
	}()
	return p
}

func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// engineText are the pieces of a connection's engine text that must never
// reach a reply: host, port, role, database.
func engineText(t *testing.T, dsn string) []string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return []string{u.Hostname(), ":" + u.Port(), u.User.Username(), strings.TrimPrefix(u.Path, "/"), "dial", "failed to connect"}
}

// assertLost fails unless err is a lost connection (engine.ErrConnectionLost,
// an unavailable *contracts.DBError) whose message names nothing of dsn.
func assertLost(t *testing.T, what string, err error, dsns ...string) {
	t.Helper()
	if !errors.Is(err, engine.ErrConnectionLost) {
		t.Fatalf("%s: %v (%T), want engine.ErrConnectionLost", what, err, err)
	}
	d := dbErr(t, err)
	if d.Class != contracts.DBUnavailable {
		t.Fatalf("%s: class %s, want unavailable", what, d.Class)
	}
	for _, dsn := range dsns {
		for _, s := range engineText(t, dsn) {
			if s != "" && s != ":" && strings.Contains(d.Message+err.Error(), s) {
				t.Fatalf("%s: the error names %q: %q", what, s, d.Message)
			}
		}
	}
}

// TestConnectionLostNamesNothing (issue 17 item 13): a database that cannot
// be reached, a connection cut under a statement, and a session the server
// ends are each a lost connection, classified by type, whose reason names
// no host, port, role or database.
func TestConnectionLostNamesNothing(t *testing.T) {
	s := testServer(t)
	ctx := context.Background()

	unreachable := "postgres://sonde_nobody@127.0.0.1:1/sonde_nowhere?sslmode=disable&connect_timeout=2"
	_, err := New(ctx, connections.Connection{ID: "x", Engine: contracts.EnginePostgres, DSN: unreachable}, engine.Options{})
	assertLost(t, "an unreachable server", err, unreachable)

	// Through a proxy that is cut while a statement runs.
	u, err := url.Parse(s.agentDSN)
	if err != nil {
		t.Fatal(err)
	}
	p := startProxy(t, u.Host)
	u.Host = p.ln.Addr().String()
	e, err := New(ctx, connections.Connection{ID: "cut", Engine: contracts.EnginePostgres, DSN: u.String(),
		Readable: postgrestest.Policy().Readable}, engine.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	time.AfterFunc(300*time.Millisecond, p.cut)
	_, err = e.run(ctx, "SELECT pg_catalog.pg_sleep(5)", nil, req("", contracts.ProfileAgentReadOnly))
	assertLost(t, "a connection cut under a statement", err, u.String(), s.agentDSN)

	// The server ends the session (57P01).
	e2 := s.engine(t)
	marker := "sonde-ended-" + suffix()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		time.Sleep(300 * time.Millisecond)
		_, _ = s.admin.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE query LIKE '%' || $1 || '%' AND pid <> pg_backend_pid()`, marker)
	}()
	_, err = e2.run(ctx, "SELECT pg_catalog.pg_sleep(5), '"+marker+"'", nil, req("", contracts.ProfileAgentReadOnly))
	<-ended // the admin connection is the test's until then
	assertLost(t, "a session the server ended", err, s.agentDSN)
}

// TestClosedConnectionIsLost: a failure on a connection that is closed,
// neither the caller nor the deadline having ended it, is a lost
// connection whatever its error says; one the deadline ended is not.
func TestClosedConnectionIsLost(t *testing.T) {
	s := testServer(t)
	e := s.engine(t)
	ctx := context.Background()
	c, err := e.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	pc := c.Conn().PgConn()
	if err := pc.Close(ctx); err != nil {
		t.Fatal(err)
	}
	assertLost(t, "a closed connection", classifiedOn(ctx, ctx, pc, errors.New("conn closed")), s.agentDSN)
	ended, cancel := context.WithTimeout(ctx, 0)
	defer cancel()
	<-ended.Done()
	if err := classifiedOn(ctx, ended, pc, context.DeadlineExceeded); errors.Is(err, engine.ErrConnectionLost) {
		t.Fatalf("a statement its deadline ended: %v, want no lost connection", err)
	}
}
