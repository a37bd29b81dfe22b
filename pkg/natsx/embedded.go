// Package natsx holds Sonde's NATS plumbing shared by every service: the
// embedded server of `sonde serve`, connecting, and declaring the JetStream
// streams, buckets and object stores every service relies on.
package natsx

import (
	"context"
	"errors"
	"fmt"
	neturl "net/url"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// DefaultSyncInterval is how often the embedded file store fsyncs. The
// server's default (2 minutes) can lose acknowledged ledger entries on power
// loss; a short interval bounds that window. SyncAlways is stronger and slower.
const DefaultSyncInterval = 100 * time.Millisecond

// EmbeddedConfig configures the embedded single-node server.
type EmbeddedConfig struct {
	// StoreDir is where JetStream keeps its file store. Required.
	StoreDir string
	// Listen, when non-empty ("127.0.0.1:4222"), also serves clients over TCP;
	// empty keeps the server in-process only.
	Listen string
	// SyncInterval overrides DefaultSyncInterval; SyncAlways fsyncs every write.
	SyncInterval time.Duration
	SyncAlways   bool
}

// Embedded is a running in-process NATS server with JetStream.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a NATS server with JetStream in this process and waits
// until it accepts connections.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("natsx: embedded server needs a store directory")
	}
	opts := &server.Options{
		ServerName:   "sonde-embedded",
		JetStream:    true,
		StoreDir:     cfg.StoreDir,
		NoSigs:       true,
		NoLog:        true,
		DontListen:   cfg.Listen == "",
		SyncInterval: cfg.SyncInterval,
		SyncAlways:   cfg.SyncAlways,
	}
	if opts.SyncInterval == 0 {
		opts.SyncInterval = DefaultSyncInterval
	}
	if cfg.Listen != "" {
		host, port, err := splitHostPort(cfg.Listen)
		if err != nil {
			return nil, err
		}
		if port == 0 {
			port = server.RANDOM_PORT // nats-server reads 0 as its default port, 4222
		}
		opts.Host, opts.Port = host, port
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsx: configure embedded server: %w", err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(15 * time.Second) {
		srv.Shutdown()
		return nil, errors.New("natsx: embedded server did not become ready within 15s")
	}
	return &Embedded{srv: srv}, nil
}

// Connect opens an in-process client connection to the embedded server.
func (e *Embedded) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.InProcessServer(e.srv), nats.Name(name)}, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("natsx: connect in-process: %w", err)
	}
	return nc, nil
}

// ClientURL is the TCP URL clients in other processes use, or "" when the
// server does not listen.
func (e *Embedded) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// Shutdown stops the server and waits for it to finish, flushing the store.
func (e *Embedded) Shutdown(ctx context.Context) {
	e.srv.Shutdown()
	done := make(chan struct{})
	go func() { e.srv.WaitForShutdown(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// Connect dials an external NATS server by URL. Credentials come as options
// (nats.UserInfo, nats.UserCredentials). An error names the server without
// any password in its URL, and the user, never the password.
func Connect(url, name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append([]nats.Option{nats.Name(name), nats.MaxReconnects(-1)}, opts...)
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		who := ""
		var o nats.Options
		for _, opt := range opts {
			_ = opt(&o)
		}
		switch {
		case o.User != "":
			who = fmt.Sprintf(" as user %q", o.User)
		case o.UserJWT != nil:
			who = " with a credentials file"
		}
		if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
			return nil, fmt.Errorf("natsx: connect %s%s: the server refused the credentials: %w", redactURLs(url), who, err)
		}
		return nil, fmt.Errorf("natsx: connect %s%s: %w", redactURLs(url), who, err)
	}
	return nc, nil
}

// redactURLs hides the password of each URL in a comma-separated server list.
func redactURLs(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := neturl.Parse(p); err == nil {
			parts[i] = u.Redacted()
		} else if strings.Contains(p, "@") {
			parts[i] = "<unparsable URL>"
		}
	}
	return strings.Join(parts, ",")
}
