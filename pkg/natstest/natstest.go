// Package natstest starts a real embedded NATS server with JetStream for tests
// and declares Sonde's streams and buckets on it.
package natstest

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/pkg/natsx"
)

// Server is an embedded NATS server scoped to one test.
type Server struct {
	*natsx.Embedded
	// Dir is the file store directory; reuse it with Restart.
	Dir string
	t   testing.TB
}

// Start starts a file-backed embedded server listening on a random loopback
// port, declares Sonde's resources, and stops it when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartIn(t, t.TempDir())
}

// StartIn is Start with a chosen store directory.
func StartIn(t testing.TB, dir string) *Server {
	t.Helper()
	e, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	s := &Server{Embedded: e, Dir: dir, t: t}
	t.Cleanup(func() { s.Stop() })
	nc := s.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := (natsx.Resources{Admin: true}).Ensure(ctx, js); err != nil {
		t.Fatalf("natstest: %v", err)
	}
	return s
}

// Connect opens a client connection closed when the test ends.
func (s *Server) Connect() *nats.Conn {
	s.t.Helper()
	nc, err := s.Embedded.Connect(s.t.Name())
	if err != nil {
		s.t.Fatalf("natstest: %v", err)
	}
	s.t.Cleanup(nc.Close)
	return nc
}

// JetStream opens a client connection and its JetStream context.
func (s *Server) JetStream() jetstream.JetStream {
	s.t.Helper()
	js, err := jetstream.New(s.Connect())
	if err != nil {
		s.t.Fatalf("natstest: jetstream: %v", err)
	}
	return js
}

// Stop shuts the server down (idempotent).
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.Embedded.Shutdown(ctx)
}
