package natsx_test

import (
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sondehq/sonde/pkg/natsx"
)

// TestConnectionsReconnectForever: both ways of connecting keep trying for
// as long as the process lives (the client's default closes the connection
// for good after 60 attempts), and a client of a server that went away and
// came back on the same address is connected again.
func TestConnectionsReconnectForever(t *testing.T) {
	dir := t.TempDir()
	e, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: dir, Listen: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	addr := e.ClientURL()
	in, err := e.Connect("in-process")
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	tcp, err := natsx.Connect(addr, "tcp", nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer tcp.Close()
	for name, nc := range map[string]*nats.Conn{"in-process": in, "tcp": tcp} {
		if nc.Opts.MaxReconnect >= 0 || nc.Opts.ReconnectBufSize <= 0 {
			t.Errorf("%s: MaxReconnect %d, ReconnectBufSize %d", name, nc.Opts.MaxReconnect, nc.Opts.ReconnectBufSize)
		}
	}

	e.Shutdown(t.Context())
	deadline := time.Now().Add(20 * time.Second)
	for tcp.Status() == nats.CONNECTED && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	e2, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: dir, Listen: strings.TrimPrefix(addr, "nats://")})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Shutdown(t.Context())
	for tcp.Status() != nats.CONNECTED && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if tcp.Status() != nats.CONNECTED {
		t.Fatalf("the TCP client is %v after the server came back", tcp.Status())
	}
	if err := tcp.Flush(); err != nil {
		t.Fatalf("reconnected client: %v", err)
	}
}
