// Package natsx holds Sonde's NATS plumbing shared by every service: the
// embedded server of `sonde serve`, connecting, and declaring the JetStream
// streams, buckets and object stores every service relies on.
package natsx

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
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
	// StoreDir is where JetStream keeps its file store. Required; it must be
	// a writable directory (created when missing).
	StoreDir string
	// Listen, when non-empty ("127.0.0.1:4222", port 0 for a free one), also
	// serves clients over TCP; empty keeps the server in-process only.
	Listen string
	// Users, when not empty, makes every client authenticate as one of them,
	// the in-process ones included (pass nats.UserInfo to Connect).
	Users []EmbeddedUser
	// NoAuthUser names the member of Users that a client presenting no
	// credentials is served as; empty refuses such a client.
	NoAuthUser string
	// Logger receives the server's errors and warnings; nil discards them.
	Logger *slog.Logger
	// SyncInterval overrides DefaultSyncInterval; SyncAlways fsyncs every write.
	SyncInterval time.Duration
	SyncAlways   bool
	// MaxStore bounds JetStream's file store in bytes. Zero leaves the
	// server's own limit, three quarters of the disk space free when it
	// starts — fixed from then on, so a disk that was nearly full at start
	// keeps a tiny limit and one that fills up later runs out before the
	// limit is reached. Set it to say what the store may take.
	MaxStore int64
}

// EmbeddedUser is a user of the embedded server, allowed every subject.
type EmbeddedUser struct {
	Name     string
	Password string
}

// NewPassword returns a random password (128 bits) for an EmbeddedUser.
func NewPassword() string { return rand.Text() }

// Embedded is a running in-process NATS server with JetStream.
type Embedded struct {
	srv *server.Server
}

// readyTimeout bounds how long StartEmbedded waits for the server.
const readyTimeout = 15 * time.Second

// StartEmbedded starts a NATS server with JetStream in this process and waits
// until it accepts connections. A server that cannot start (its store is not
// writable, its port is taken) fails at once with the server's own reason.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	if cfg.StoreDir == "" {
		return nil, errors.New("natsx: embedded server needs a store directory")
	}
	if err := CheckWritableDir(cfg.StoreDir); err != nil {
		return nil, fmt.Errorf("natsx: JetStream store: %w", err)
	}
	opts := &server.Options{
		ServerName:        "sonde-embedded",
		JetStream:         true,
		StoreDir:          cfg.StoreDir,
		NoSigs:            true,
		NoLog:             true,
		DontListen:        cfg.Listen == "",
		SyncInterval:      cfg.SyncInterval,
		SyncAlways:        cfg.SyncAlways,
		JetStreamMaxStore: cfg.MaxStore,
	}
	if cfg.MaxStore < 0 {
		return nil, fmt.Errorf("natsx: JetStream store limit %d is negative", cfg.MaxStore)
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
	for _, u := range cfg.Users {
		if u.Name == "" || u.Password == "" {
			return nil, errors.New("natsx: an embedded server user needs a name and a password")
		}
		opts.Users = append(opts.Users, &server.User{Username: u.Name, Password: u.Password})
	}
	if cfg.NoAuthUser != "" {
		if !slices.ContainsFunc(cfg.Users, func(u EmbeddedUser) bool { return u.Name == cfg.NoAuthUser }) {
			return nil, fmt.Errorf("natsx: no-auth user %q is not one of the users", cfg.NoAuthUser)
		}
		opts.NoAuthUser = cfg.NoAuthUser
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("natsx: configure embedded server: %w", err)
	}
	sl := &serverLog{log: cfg.Logger, fatal: make(chan string, 1)}
	if sl.log == nil {
		sl.log = slog.New(slog.DiscardHandler)
	}
	srv.SetLoggerV2(sl, false, false, false)
	go srv.Start()
	deadline := time.Now().Add(readyTimeout)
	for !srv.ReadyForConnections(100 * time.Millisecond) {
		select {
		case reason := <-sl.fatal:
			srv.Shutdown()
			return nil, fmt.Errorf("natsx: embedded server: %s", reason)
		default:
		}
		if time.Now().After(deadline) {
			srv.Shutdown()
			return nil, fmt.Errorf("natsx: embedded server did not become ready within %s", readyTimeout)
		}
	}
	return &Embedded{srv: srv}, nil
}

// CheckWritableDir creates dir when missing and proves it writable by
// creating and removing a file in it: permission bits alone do not tell
// (root ignores them; a read-only mount refuses root too). The error names
// the directory and the cause.
func CheckWritableDir(dir string) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("%s is a file, not a directory: %w", dir, syscall.ENOTDIR)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("directory %s cannot be created: %w", dir, errors.Unwrap(err))
	}
	f, err := os.CreateTemp(dir, ".sonde-write-check-*")
	if err != nil {
		cause := err
		var pe *fs.PathError
		if errors.As(err, &pe) {
			cause = pe.Err
		}
		return fmt.Errorf("directory %s is not writable: %w", dir, cause)
	}
	name := f.Name()
	err = f.Close()
	if rmErr := os.Remove(name); err == nil {
		err = rmErr
	}
	if err != nil {
		return fmt.Errorf("directory %s is not writable: %w", dir, err)
	}
	return nil
}

// serverLog passes the server's errors and warnings to a slog logger and
// hands its first fatal error to StartEmbedded, which would otherwise only
// see the server never become ready.
type serverLog struct {
	log   *slog.Logger
	fatal chan string
}

func (l *serverLog) Noticef(string, ...any) {}
func (l *serverLog) Debugf(string, ...any)  {}
func (l *serverLog) Tracef(string, ...any)  {}
func (l *serverLog) Warnf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.HasPrefix(msg, "Plaintext passwords detected") {
		// The users' passwords are random, drawn per start and held in
		// memory only; hashing them would protect nothing.
		return
	}
	l.log.Warn("embedded NATS: " + msg)
}
func (l *serverLog) Errorf(format string, v ...any) {
	l.log.Error("embedded NATS: " + fmt.Sprintf(format, v...))
}
func (l *serverLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.log.Error("embedded NATS: " + msg)
	select {
	case l.fatal <- msg:
	default:
	}
}

// ReconnectOptions are the options every connection Sonde opens starts
// with: reconnect for as long as the process lives (the client's default
// gives up after about two minutes and closes the connection for good),
// a short wait between attempts, and a reconnect buffer for what is
// published meanwhile. A connection closed anyway (a protocol error the
// client does not survive, such as a line over the server's
// max_control_line, which input checked by contracts.CheckID can no longer
// cause) stays closed: the gateway's /healthz then answers 503.
func ReconnectOptions() []nats.Option {
	return []nats.Option{
		nats.MaxReconnects(-1),
		nats.ReconnectWait(500 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second),
		nats.ReconnectBufSize(8 << 20),
	}
}

// Connect opens an in-process client connection to the embedded server,
// with ReconnectOptions (opts may override them).
func (e *Embedded) Connect(name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append(append([]nats.Option{nats.InProcessServer(e.srv), nats.Name(name)}, ReconnectOptions()...), opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		return nil, fmt.Errorf("natsx: connect in-process: %w", err)
	}
	return nc, nil
}

// ClientURL is the TCP URL clients in other processes use, or "" when the
// server does not listen. It carries no credentials.
func (e *Embedded) ClientURL() string {
	if e.srv.Addr() == nil {
		return ""
	}
	return e.srv.ClientURL()
}

// LoopbackURL is the URL a process on this machine dials: ClientURL, with
// 127.0.0.1 (or ::1) in place of a wildcard listen address; "" when the
// server does not listen.
func (e *Embedded) LoopbackURL() string {
	addr, ok := e.srv.Addr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	if !addr.IP.IsUnspecified() {
		return e.srv.ClientURL()
	}
	ip := net.IPv4(127, 0, 0, 1)
	if addr.IP.To4() == nil {
		ip = net.IPv6loopback
	}
	return "nats://" + net.JoinHostPort(ip.String(), strconv.Itoa(addr.Port))
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

// Connect dials an external NATS server by URL, with ReconnectOptions (opts
// may override them). Credentials come as options (nats.UserInfo,
// nats.UserCredentials). An error names the server without any password in
// its URL, and the user, never the password.
func Connect(url, name string, opts ...nats.Option) (*nats.Conn, error) {
	opts = append(append([]nats.Option{nats.Name(name)}, ReconnectOptions()...), opts...)
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
