// Package gateway is Sonde's HTTP API: it authenticates callers, turns their
// requests into run commands on NATS, and reads run ledgers back to them. It
// holds no database credential and no model key, and never writes a ledger.
package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/artifacts"
	"github.com/sondehq/sonde/pkg/ledger"
	"github.com/sondehq/sonde/pkg/registry"
)

// DefaultListen is the address Start listens on when Config.Listen is empty.
const DefaultListen = "127.0.0.1:8080"

// Timeouts of the requests the gateway sends on NATS.
const (
	runCommandTimeout = 10 * time.Second
	probeTimeout      = 3 * time.Second
	// capabilityProbeTimeout bounds the start path's capability probe, one
	// model call (cached once positive); past it the run starts as before.
	capabilityProbeTimeout = 30 * time.Second
	shutdownGrace          = 10 * time.Second
)

// Config configures a Gateway.
type Config struct {
	// Listen is the TCP address Start listens on (DefaultListen when empty).
	// A non-loopback address requires Tokens.
	Listen string
	// Tokens maps a bearer token to its actor (see ParseTokens). With none,
	// the gateway must listen on loopback and every caller is the local admin.
	Tokens map[string]contracts.Actor
	// Disabled means the operator switched agents off: the config probe says
	// operator_disabled and no run starts.
	Disabled bool
	// Ready, when set, is one more readiness condition for GET /readyz, on
	// top of the gateway's own (NATS connected, the ledger stream answering,
	// an orchestrator able to record runs, an executor answering for every
	// engine a published connection needs).
	Ready func(ctx context.Context) error
	// Logger receives request and error logs; nil means slog.Default().
	Logger *slog.Logger
	// CORSOrigins are the browser origins ("https://console.example.com")
	// allowed to call the API from a page served elsewhere, bearer token
	// included (see ParseCORSOrigins). Empty, the default, switches CORS off:
	// no Access-Control-* header is sent and a preflight is not answered.
	CORSOrigins []string
	// AllowedHosts are the host names (no port) the server answers for
	// besides loopback names and IP literals (see ParseAllowedHosts and
	// edge.go): needed without tokens to reach it by another name; with
	// tokens, setting it restricts the names served, which are any
	// otherwise.
	AllowedHosts []string
	// BodyReadTimeout bounds how long a request body may take to arrive;
	// zero means DefaultBodyReadTimeout. A body still arriving then is
	// answered 408.
	BodyReadTimeout time.Duration
	// StreamHeartbeat is how often a live run stream with nothing new sends a
	// keep-alive (a blank NDJSON line, an SSE comment), so proxies do not cut
	// it during a long model call; zero means DefaultStreamHeartbeat.
	StreamHeartbeat time.Duration
}

// DefaultBodyReadTimeout is Config.BodyReadTimeout's default: a 1 MiB body
// arrives well within it on any link a person would use.
const DefaultBodyReadTimeout = 30 * time.Second

// DefaultStreamHeartbeat keeps a silent run stream under common 30-60 s proxy
// idle timeouts.
const DefaultStreamHeartbeat = 15 * time.Second

// Gateway serves the HTTP API over one NATS connection.
type Gateway struct {
	cfg     Config
	log     *slog.Logger
	nc      *nats.Conn
	js      jetstream.JetStream
	handler http.Handler
	agent   agentMemo
	// echo is the router routes built from routeTable; spec is the OpenAPI
	// document built from the same table.
	echo *echo.Echo
	spec []byte
	// corsOrigins are Config.CORSOrigins as a set.
	corsOrigins map[string]bool
	// allowedHosts are Config.AllowedHosts as a set.
	allowedHosts map[string]bool

	// mcpHTTP serves /mcp, built on first use (mcp.go).
	mcpOnce sync.Once
	mcpHTTP http.Handler

	// drain ends every live stream when Stop starts shutting down.
	drain     context.Context
	stopDrain context.CancelFunc

	// res guards the lazily bound JetStream resources.
	res   sync.Mutex
	led   *ledger.Ledger
	hist  jetstream.Stream
	conns *registry.Reader
	arts  *artifacts.Store

	// mu guards the server's state.
	mu      sync.Mutex
	addr    net.Addr
	srv     *http.Server
	served  chan error // srv.Serve's result
	stopped bool

	stopOnce sync.Once
	stopErr  error
}

// New validates cfg and builds a gateway on nc. It refuses, with an
// *InsecureListenError, a non-loopback Listen address when no tokens are
// configured. It sends nothing on nc until a request arrives.
func New(cfg Config, nc *nats.Conn) (*Gateway, error) {
	if nc == nil {
		return nil, ErrNoConn
	}
	if cfg.StreamHeartbeat <= 0 {
		cfg.StreamHeartbeat = DefaultStreamHeartbeat
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.BodyReadTimeout <= 0 {
		cfg.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if len(cfg.Tokens) == 0 && !isLoopback(cfg.Listen) {
		return nil, &InsecureListenError{Listen: cfg.Listen}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("gateway: jetstream: %w", err)
	}
	g := &Gateway{cfg: cfg, log: cfg.Logger, nc: nc, js: js}
	if g.log == nil {
		g.log = slog.Default()
	}
	g.drain, g.stopDrain = context.WithCancel(context.Background())
	if g.corsOrigins, err = corsSet(cfg.CORSOrigins); err != nil {
		return nil, err
	}
	if g.allowedHosts, err = hostSet(cfg.AllowedHosts); err != nil {
		return nil, err
	}
	if g.spec, err = OpenAPI(); err != nil {
		return nil, err
	}
	g.handler = g.routes()
	return g, nil
}

// isLoopback reports whether addr (host:port) names only this machine. An
// empty host listens on every interface and is not loopback.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Handler is the gateway's HTTP handler, for tests and for mounting it in
// another server.
func (g *Gateway) Handler() http.Handler { return g.handler }

// Start listens on Config.Listen and serves in the background until Stop;
// it returns once the listener is bound (Addr answers), or with the reason
// it could not be. ctx bounds the listen only.
func (g *Gateway) Start(ctx context.Context) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.stopped {
		return errors.New("gateway: start after stop")
	}
	if g.srv != nil {
		return errors.New("gateway: already started")
	}
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", g.cfg.Listen)
	if err != nil {
		return fmt.Errorf("gateway: listen %s: %w", g.cfg.Listen, err)
	}
	srv := &http.Server{
		Handler:           g.handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	srv.RegisterOnShutdown(g.stopDrain)
	served := make(chan error, 1)
	go func() {
		err := srv.Serve(ln)
		if !errors.Is(err, http.ErrServerClosed) {
			g.log.Error("gateway stopped serving", "err", err)
		}
		served <- err
	}()
	g.addr, g.srv, g.served = ln.Addr(), srv, served
	g.log.Info("gateway listening", "addr", ln.Addr().String(), "auth", g.authMode())
	return nil
}

// Stop shuts down gracefully: it stops listening, ends every live stream,
// and lets the requests in flight finish for a few seconds (shutdownGrace)
// or until ctx ends, whichever comes first. It is safe to call more than
// once, and without Start; the gateway cannot be started again.
func (g *Gateway) Stop(ctx context.Context) error {
	g.stopOnce.Do(func() { g.stopErr = g.shutdown(ctx) })
	return g.stopErr
}

func (g *Gateway) shutdown(ctx context.Context) error {
	g.mu.Lock()
	g.stopped = true
	srv, served := g.srv, g.served
	g.mu.Unlock()
	if srv == nil {
		g.stopDrain()
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		// Past the grace, what is still open is cut.
		_ = srv.Close()
	}
	if err2 := <-served; !errors.Is(err2, http.ErrServerClosed) && err == nil {
		err = err2
	}
	if err != nil {
		return fmt.Errorf("gateway: shutdown: %w", err)
	}
	return nil
}

// Addr is the address Start listens on, or nil before it listens. With port
// 0 in Config.Listen it holds the chosen port.
func (g *Gateway) Addr() net.Addr {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.addr
}

func (g *Gateway) authMode() string {
	if len(g.cfg.Tokens) == 0 {
		return "local (loopback, no tokens)"
	}
	return fmt.Sprintf("bearer (%d tokens)", len(g.cfg.Tokens))
}

// openLedger opens the ledger once; a failure is retried on the next request.
func (g *Gateway) openLedger(ctx context.Context) (*ledger.Ledger, error) {
	g.res.Lock()
	defer g.res.Unlock()
	if g.led != nil {
		return g.led, nil
	}
	l, err := ledger.Open(ctx, g.js)
	if err != nil {
		return nil, err
	}
	g.led = l
	return l, nil
}

// registry binds the connection registry's reader once.
func (g *Gateway) registry(ctx context.Context) (*registry.Reader, error) {
	g.res.Lock()
	defer g.res.Unlock()
	if g.conns != nil {
		return g.conns, nil
	}
	kv, err := g.js.KeyValue(ctx, contracts.ConnectionsBucket)
	if err != nil {
		return nil, fmt.Errorf("gateway: bucket %s: %w", contracts.ConnectionsBucket, err)
	}
	g.conns = registry.New(kv, g.log)
	return g.conns, nil
}

// artifactStore opens the artifacts object store once.
func (g *Gateway) artifactStore(ctx context.Context) (*artifacts.Store, error) {
	g.res.Lock()
	defer g.res.Unlock()
	if g.arts != nil {
		return g.arts, nil
	}
	st, err := artifacts.New(ctx, g.js)
	if err != nil {
		return nil, err
	}
	g.arts = st
	return st, nil
}
