package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/modelturn"
	"github.com/sondehq/sonde/services/orchestrator"
	"github.com/sondehq/sonde/services/sonde/internal/supervise"
)

// Service names accepted by --services, besides one executor-<engine> per
// engine this build serves.
const (
	svcGateway      = "gateway"
	svcOrchestrator = "orchestrator"
	svcModelTurn    = "modelturn"
)

// executorServices maps each executor service name to its engine.
func executorServices() map[string]contracts.Engine {
	out := map[string]contracts.Engine{}
	for e := range executor.Openers {
		out[executor.ServiceName(e)] = e
	}
	return out
}

// executorNames lists the executor services in name order.
var executorNames = func() []string {
	var names []string
	for name := range executorServices() {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}()

// allServices lists every service.
var allServices = append([]string{svcGateway, svcOrchestrator, svcModelTurn}, executorNames...)

type serveOptions struct {
	dataDir     string
	httpAddr    string
	connections string
	natsURL     string
	natsListen  string
	storeMB     int64
	natsUser    string
	natsPass    string
	natsCreds   string
	natsAdmin   bool
	passOnArgs  bool // --nats-password was given on the command line
	services    string
	logLevel    string
	noDemo      bool
	jsReplicas  int
	execMemMB   int64  // memory budget of each executor, MiB
	executors   string // executorsChild or executorsInProcess
	supervised  bool   // this process is an executor child of another serve
	threadCtx   bool   // --thread-context: continuing runs carry their conversation
	contextMax  int    // --context-max-chars: the schema snapshot's bound
	capturesMax int    // --captures-held: inventories kept for later runs
	flags       *pflag.FlagSet
}

// --executors values.
const (
	executorsChild     = "child"
	executorsInProcess = "in-process"
)

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run Sonde's services: all of them on an embedded NATS server by default",
		Long: `serve starts, in one process, an embedded NATS server with JetStream (file store
under --data-dir) and every service: gateway, orchestrator, modelturn and the
SQLite executor. On first start it creates a demo SQLite shop database under
--data-dir and registers it as connection "demo". Each engine's executor runs
in a supervised child process of serve (--executors child, the default), so
a crash in native code (a SQL parser, a driver) ends only that child, which
is started again; --executors in-process keeps them in this process.

With --nats URL it joins an external NATS server instead, and --services runs
any subset (e.g. --services gateway,orchestrator), which is how each piece is
scaled separately. On a NATS server with per-service users
(deploy/nats/nats-server.conf) each process authenticates with --nats-user and
SONDE_NATS_PASSWORD, or --nats-creds. Each process creates the JetStream
resources its services use when they are missing and leaves existing ones as
they are; run it once with --nats-admin --services none as the admin user to
provision (and later update) every resource.

Every flag can also be set as SONDE_<FLAG> (SONDE_DATA_DIR, SONDE_HTTP, …);
a flag on the command line wins over the variable. The model is configured
with LLM_PROVIDER, LLM_MODEL, LLM_API_KEY and LLM_API_URL.`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.passOnArgs = cmd.Flags().Changed("nats-password")
			o.flags = cmd.Flags()
			return serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", ".sonde", "directory for the embedded NATS store and the demo database")
	f.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "gateway listen address")
	f.StringVar(&o.connections, "connections", "", "connections YAML file (read by executors only)")
	f.StringVar(&o.natsURL, "nats", "", "external NATS server URL; empty runs an embedded server")
	f.StringVar(&o.natsListen, "nats-listen", "", "also serve the embedded NATS server on this TCP address")
	f.Int64Var(&o.storeMB, "store-limit-mb", 0, "most MiB the embedded NATS server's JetStream store may take (0: three quarters of the disk space free at start)")
	f.StringVar(&o.natsUser, "nats-user", "", "NATS user on the external server (--nats); its password comes from SONDE_NATS_PASSWORD")
	f.StringVar(&o.natsPass, "nats-password", "", "password of --nats-user; prefer SONDE_NATS_PASSWORD, since a command line is visible to other users (ps)")
	f.StringVar(&o.natsCreds, "nats-creds", "", "NATS credentials file (user JWT and NKey seed) for the external server, instead of --nats-user")
	f.BoolVar(&o.natsAdmin, "nats-admin", false, "provision: create and update every JetStream resource to this declaration (run as the NATS admin user; with --services none, provision and exit)")
	f.StringVar(&o.services, "services", strings.Join(allServices, ","), "services to run: "+strings.Join(allServices, ",")+` ("executors" for every executor; "none" with --nats-admin only provisions)`)
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&o.noDemo, "no-demo", false, "do not create or register the demo database")
	f.IntVar(&o.jsReplicas, "js-replicas", 1, "replicas of Sonde's JetStream streams, buckets and object store (3 on a cluster)")
	f.Int64Var(&o.execMemMB, "executor-memory-mb", executor.DefaultMemoryBudget>>20, "memory budget of each executor's operations in MiB, shared by its concurrent reads (docs/configuration.md)")
	f.StringVar(&o.executors, "executors", executorsChild, `where executors run: "child" (each engine's executor in a supervised child process, so a crash in native code cannot take down the rest) or "in-process"`)
	f.IntVar(&o.contextMax, "context-max-chars", 6000, "characters of relations a run's schema snapshot names (the most relevant to the objective first; the rest are counted)")
	f.IntVar(&o.capturesMax, "captures-held", 8, "connections whose inventory the orchestrator keeps for later runs on the same database (0: read it for every run)")
	f.BoolVar(&o.threadCtx, "thread-context", true, "a run started with previousRunId carries its conversation (earlier objectives, the newest report); false starts every run without it (docs/configuration.md)")
	f.BoolVar(&o.supervised, "supervised", false, "internal: this process is an executor child of sonde serve")
	_ = f.MarkHidden("supervised")
	bindEnv(cmd)
	return cmd
}

// parseServices reads --services; "none" alone names no service (provisioning
// only) and yields an empty, non-nil list.
func parseServices(s string) ([]string, error) {
	if strings.TrimSpace(s) == "none" {
		return []string{}, nil
	}
	var out []string
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		names := []string{name}
		if name == "executor" || name == "executors" {
			names = executorNames
		}
		for _, name := range names {
			if !slices.Contains(allServices, name) {
				return nil, fmt.Errorf("unknown service %q in --services (known: %s)", name, strings.Join(allServices, ", "))
			}
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	if len(out) == 0 {
		return nil, errors.New("--services names no service")
	}
	return out, nil
}

func newLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: %w", level, err)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

func serve(ctx context.Context, o serveOptions) error {
	log, err := newLogger(o.logLevel)
	if err != nil {
		return err
	}
	services, err := parseServices(o.services)
	if err != nil {
		return err
	}
	runs := func(name string) bool { return slices.Contains(services, name) }
	if err := checkNATSAuth(o, len(services) == 0); err != nil {
		return err
	}
	if o.passOnArgs {
		log.Warn("--nats-password on the command line is visible to other users of this machine (ps); prefer SONDE_NATS_PASSWORD")
	}
	switch o.executors {
	case executorsChild, executorsInProcess:
	default:
		return fmt.Errorf("--executors %q: use %q or %q", o.executors, executorsChild, executorsInProcess)
	}
	if o.contextMax < 500 || o.contextMax > 200_000 {
		return fmt.Errorf("--context-max-chars %d: use 500 to 200000 (the default, 6000, suits most models)", o.contextMax)
	}
	if o.supervised {
		// An executor child ends with its parent.
		var cancel context.CancelFunc
		ctx, cancel = supervise.ParentContext(ctx)
		defer cancel()
	}

	// Configuration is validated before anything starts.
	var conns []connections.Connection
	execs := executorServices()
	runsExecutor := slices.ContainsFunc(services, func(n string) bool { _, ok := execs[n]; return ok })
	if o.connections != "" {
		if !runsExecutor {
			return errors.New("--connections is read by executors only; this process runs none")
		}
		if conns, err = connections.Load(o.connections); err != nil {
			return err
		}
	}
	mtCfg := modelturn.ConfigFromEnv()
	mtCfg.Logger = log
	var gwCfg gateway.Config
	if runs(svcGateway) {
		if gwCfg, err = gatewayConfig(o, log); err != nil {
			return err
		}
	}

	// Executors run in supervised child processes when this process runs
	// anything besides one executor (the embedded NATS server, another
	// service): a crash in native code (a parser, a driver) then ends only
	// that child, which is started again.
	children := o.executors == executorsChild && !o.supervised && runsExecutor &&
		(o.natsURL == "" || len(services) > 1)
	// Before NATS starts: a data directory (or the store in it) that cannot
	// be written stops serve now, with the directory and the cause.
	var dirs []string
	if o.natsURL == "" || (runs(executor.ServiceName(contracts.EngineSQLite)) && !o.noDemo) {
		dirs = append(dirs, o.dataDir)
	}
	if o.natsURL == "" {
		dirs = append(dirs, filepath.Join(o.dataDir, "nats"))
	}
	for _, dir := range dirs {
		if err := natsx.CheckWritableDir(dir); err != nil {
			return fmt.Errorf("--data-dir: %w", err)
		}
	}
	nc, shutdownNATS, childConn, err := connectNATS(o, log, children)
	if err != nil {
		return err
	}
	defer shutdownNATS()
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream: %w", err)
	}
	startCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if o.jsReplicas < 1 || o.jsReplicas > 5 {
		return fmt.Errorf("--js-replicas %d: use 1 to 5", o.jsReplicas)
	}
	if o.natsURL == "" && o.jsReplicas != 1 {
		return errors.New("--js-replicas applies to an external cluster (--nats); the embedded server is a single node")
	}
	if err := ensureResources(startCtx, o, services, js, log); err != nil {
		return err
	}
	if len(services) == 0 {
		log.Info("JetStream resources provisioned; --services none runs no service")
		return nil
	}

	if runs(executor.ServiceName(contracts.EngineSQLite)) && !o.noDemo {
		demo, err := ensureDemo(o.dataDir)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(conns, func(c connections.Connection) bool { return c.ID == demo.ID }) {
			conns = append(conns, demo)
		}
	}
	b := &serviceList{o: o, log: log, nc: nc, childConn: childConn, children: children, conns: conns,
		mtCfg: mtCfg, gwCfg: gwCfg}
	list, err := b.build(services)
	if err != nil {
		return err
	}
	return runServices(ctx, log, list, func() {
		if !runs(svcGateway) {
			log.Info("sonde serving", "services", services)
			return
		}
		log.Info("sonde serving", "services", services, "http", o.httpAddr, "executorProcesses", len(b.supervised))
	})
}

// service is one piece serve runs. Start returns once it serves (ctx bounds
// only the start); Stop drains it: what is in flight finishes, or ctx's
// deadline cuts it. Stop is called at most once, only after a Start that
// succeeded.
type service interface {
	Start(ctx context.Context) error
	Stop(ctx context.Context) error
}

// unit is a service as serve runs it: its name in the logs and how long its
// start may take.
type unit struct {
	name         string
	svc          service
	startTimeout time.Duration
}

// Bounds of a start and of a stop of one service. A stop's own drain grace
// (the executor's, modelturn's, the gateway's) is shorter: stopTimeout only
// catches a stop that hangs.
const (
	startTimeout = 30 * time.Second
	stopTimeout  = time.Minute
)

// runServices starts the units in order, calls serving once every one
// serves, and stops them in reverse order when ctx ends; when one fails to
// start, the ones already started are stopped and its error returned.
func runServices(ctx context.Context, log *slog.Logger, units []unit, serving func()) error {
	var started []unit
	defer func() {
		for i := len(started) - 1; i >= 0; i-- {
			u := started[i]
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), stopTimeout)
			if err := u.svc.Stop(sctx); err != nil {
				log.Warn("stop", "service", u.name, "err", err)
			}
			cancel()
		}
	}()
	for _, u := range units {
		sctx, cancel := context.WithTimeout(ctx, cmp.Or(u.startTimeout, startTimeout))
		err := u.svc.Start(sctx)
		cancel()
		if err != nil {
			return err
		}
		started = append(started, u)
	}
	serving()
	<-ctx.Done()
	return nil
}

// step is a service made of two functions, for the pieces of serve that
// are not a service of their own (an executor child, a wait); a nil one does
// nothing.
type step struct {
	start, stop func(ctx context.Context) error
}

// Start runs start.
func (s step) Start(ctx context.Context) error {
	if s.start == nil {
		return nil
	}
	return s.start(ctx)
}

// Stop runs stop.
func (s step) Stop(ctx context.Context) error {
	if s.stop == nil {
		return nil
	}
	return s.stop(ctx)
}

// serviceList builds the services one serve runs, in the order they start:
// the executor children first (they take longest to be ready), the
// in-process executors, modelturn, the orchestrator, the wait for the
// children, and the gateway last, so that nothing is told Sonde is up
// before it is.
type serviceList struct {
	o          serveOptions
	log        *slog.Logger
	nc         *nats.Conn
	childConn  childNATS
	children   bool
	conns      []connections.Connection
	mtCfg      modelturn.Config
	gwCfg      gateway.Config
	supervised []*supervise.Process // the executor children, once started
}

func (b *serviceList) build(services []string) ([]unit, error) {
	runs := func(name string) bool { return slices.Contains(services, name) }
	execs := executorServices()
	var list []unit
	for _, name := range services {
		eng, ok := execs[name]
		if !ok {
			continue
		}
		if b.children {
			if !slices.ContainsFunc(b.conns, func(c connections.Connection) bool { return c.Engine == eng }) {
				b.log.Info("no connection of this engine; its executor does not run", "service", name)
				continue
			}
			list = append(list, unit{name: name, svc: b.child(name)})
			continue
		}
		ex, err := executor.New(executor.Config{Engine: eng, Connections: b.conns, Logger: b.log,
			MemoryBudget: b.o.execMemMB << 20, NATS: b.nc})
		if err != nil {
			return nil, err
		}
		list = append(list, unit{name: name, svc: ex})
	}
	if runs(svcModelTurn) {
		cfg := b.mtCfg
		cfg.NATS = b.nc
		mt, err := modelturn.New(cfg)
		if err != nil {
			return nil, err
		}
		list = append(list, unit{name: svcModelTurn, svc: mt})
	}
	if runs(svcOrchestrator) {
		orc, err := orchestrator.New(orchestrator.Config{Logger: b.log, NoThreadContext: !b.o.threadCtx,
			ContextMaxChars: b.o.contextMax, CapturesHeld: capturesHeld(b.o.capturesMax), NATS: b.nc})
		if err != nil {
			return nil, err
		}
		list = append(list, unit{name: svcOrchestrator, svc: orc})
	}
	// The executor children started first; they are waited for last, while
	// the other services started.
	list = append(list, unit{name: "executor processes", startTimeout: childReadyTimeout, svc: step{start: b.childrenReady}})
	if b.o.supervised {
		list = append(list, unit{name: "supervised", svc: step{start: func(context.Context) error { return supervise.ReportReady() }}})
	}
	if runs(svcGateway) {
		cfg := b.gwCfg
		cfg.Ready = b.ready
		gw, err := gateway.New(cfg, b.nc)
		if err != nil {
			return nil, err
		}
		list = append(list, unit{name: svcGateway, svc: gw})
	}
	return list, nil
}

// child is the executor service name running in a supervised child process.
func (b *serviceList) child(name string) service {
	var p *supervise.Process
	return step{
		start: func(context.Context) error {
			var err error
			if p, err = startExecutorChild(b.o, name, b.childConn, b.log); err != nil {
				return err
			}
			b.supervised = append(b.supervised, p)
			return nil
		},
		stop: func(context.Context) error {
			p.Stop()
			return nil
		},
	}
}

// childrenReady waits until every executor child serves.
func (b *serviceList) childrenReady(ctx context.Context) error {
	for _, p := range b.supervised {
		if err := p.WaitReady(ctx); err != nil {
			return err
		}
	}
	return nil
}

// ready is the gateway's readiness condition beyond its own: NATS connected
// and every executor child serving.
func (b *serviceList) ready(context.Context) error {
	if !b.nc.IsConnected() {
		return errors.New("NATS is not connected")
	}
	for _, p := range b.supervised {
		if err := p.Ready(); err != nil {
			return err
		}
	}
	return nil
}

// gatewayConfig is the gateway's configuration from the flags and the
// SONDE_API_TOKENS, SONDE_CORS_ORIGINS and SONDE_ALLOWED_HOSTS variables.
func gatewayConfig(o serveOptions, log *slog.Logger) (gateway.Config, error) {
	tokens, err := gateway.ParseTokens(os.Getenv("SONDE_API_TOKENS"))
	if err != nil {
		return gateway.Config{}, fmt.Errorf("SONDE_API_TOKENS: %w", err)
	}
	cfg := gateway.Config{Listen: o.httpAddr, Tokens: tokens, Logger: log, Disabled: agentsDisabled()}
	if cfg.CORSOrigins, err = gateway.ParseCORSOrigins(os.Getenv("SONDE_CORS_ORIGINS")); err != nil {
		return gateway.Config{}, fmt.Errorf("SONDE_CORS_ORIGINS: %w", err)
	}
	if cfg.AllowedHosts, err = gateway.ParseAllowedHosts(os.Getenv("SONDE_ALLOWED_HOSTS")); err != nil {
		return gateway.Config{}, fmt.Errorf("SONDE_ALLOWED_HOSTS: %w", err)
	}
	return cfg, nil
}

// agentsDisabled reads SONDE_AGENT_ENABLED: an operator's off-switch.
func agentsDisabled() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("SONDE_AGENT_ENABLED"))) {
	case "false", "off", "0", "no":
		return true
	}
	return false
}

// childNATS is how executor child processes reach NATS: the embedded
// server's loopback listener with a user and password made for this start,
// or the external server with this process's own credentials.
type childNATS struct {
	url, user, password, creds string
}

// connectNATS connects to the external server, or starts the embedded one.
// With children, the embedded server also listens on loopback (or on
// --nats-listen) and every client authenticates: this process and its
// children with passwords generated per start, which never appear in an
// argument list or a log; clients without credentials on --nats-listen keep
// working as before.
func connectNATS(o serveOptions, log *slog.Logger, children bool) (*nats.Conn, func(), childNATS, error) {
	if o.natsURL != "" {
		if o.natsListen != "" {
			return nil, nil, childNATS{}, errors.New("--nats-listen applies to the embedded server; it cannot be used with --nats")
		}
		var opts []nats.Option
		switch {
		case o.natsCreds != "":
			opts = append(opts, nats.UserCredentials(o.natsCreds))
		case o.natsUser != "":
			opts = append(opts, nats.UserInfo(o.natsUser, o.natsPass))
		}
		nc, err := natsx.Connect(o.natsURL, "sonde", opts...)
		if err != nil {
			return nil, nil, childNATS{}, err
		}
		return nc, nc.Close, childNATS{url: o.natsURL, user: o.natsUser, password: o.natsPass, creds: o.natsCreds}, nil
	}
	if o.storeMB < 0 {
		return nil, nil, childNATS{}, fmt.Errorf("--store-limit-mb %d: give a number of MiB, or 0 for the server's own limit", o.storeMB)
	}
	cfg := natsx.EmbeddedConfig{StoreDir: filepath.Join(o.dataDir, "nats"), Listen: o.natsListen, Logger: log, MaxStore: o.storeMB << 20}
	var self []nats.Option
	var child childNATS
	if children {
		parentPass := natsx.NewPassword()
		child = childNATS{user: "executor", password: natsx.NewPassword()}
		cfg.Users = []natsx.EmbeddedUser{{Name: "sonde", Password: parentPass}, {Name: child.user, Password: child.password}}
		self = append(self, nats.UserInfo("sonde", parentPass))
		if cfg.Listen == "" {
			cfg.Listen = "127.0.0.1:0"
		} else {
			cfg.Users = append(cfg.Users, natsx.EmbeddedUser{Name: "anonymous", Password: natsx.NewPassword()})
			cfg.NoAuthUser = "anonymous"
		}
	}
	emb, err := natsx.StartEmbedded(cfg)
	if err != nil {
		return nil, nil, childNATS{}, err
	}
	nc, err := emb.Connect("sonde", self...)
	if err != nil {
		emb.Shutdown(context.Background())
		return nil, nil, childNATS{}, err
	}
	if o.natsListen != "" {
		log.Info("embedded NATS listening", "url", emb.ClientURL())
	}
	if children {
		child.url = emb.LoopbackURL()
		log.Debug("embedded NATS serves the executor processes on loopback", "url", child.url)
	}
	return nc, func() {
		nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		emb.Shutdown(ctx)
	}, child, nil
}

// childReadyTimeout bounds the wait for every executor child to serve at
// start; opening its connections is most of it.
const childReadyTimeout = 90 * time.Second

// childOwnFlags are the flags of serve an executor child gets its own values
// for; it inherits every other flag's value from this process.
var childOwnFlags = map[string]bool{
	"services": true, "nats": true, "nats-user": true, "nats-password": true, "nats-creds": true,
	"nats-listen": true, "nats-admin": true, "http": true, "js-replicas": true, "executors": true,
	"supervised": true, "help": true,
}

// startExecutorChild runs one executor service as a supervised child: this
// program again, as `serve --supervised --services <service> --nats <url>`.
func startExecutorChild(o serveOptions, service string, cn childNATS, log *slog.Logger) (*supervise.Process, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("executor processes: cannot find this program to run it again: %w (--executors in-process runs executors in this process)", err)
	}
	return supervise.Start(log, supervise.Spec{Name: service, Path: exe,
		Args: childArgs(o.flags, service, cn), Env: childEnviron(o.flags, cn.password)}), nil
}

// childArgs is an executor child's command line. It carries no secret: the
// NATS password travels in the environment (childEnviron).
func childArgs(flags *pflag.FlagSet, service string, cn childNATS) []string {
	args := []string{"serve", "--supervised", "--executors=" + executorsInProcess, "--services=" + service, "--nats=" + cn.url}
	if cn.user != "" {
		args = append(args, "--nats-user="+cn.user)
	}
	if cn.creds != "" {
		args = append(args, "--nats-creds="+cn.creds)
	}
	if flags == nil {
		return args
	}
	flags.VisitAll(func(f *pflag.Flag) {
		if childOwnFlags[f.Name] || f.Hidden {
			return
		}
		v := f.Value.String()
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			v = strings.Join(sv.GetSlice(), ",")
		}
		args = append(args, "--"+f.Name+"="+v)
	})
	return args
}

// childEnviron is an executor child's environment: this process's, less
// what an executor must not hold (the model's and the gateway's settings and
// secrets) and the SONDE_* variables of serve's flags (the child gets those
// on its command line), plus the NATS password.
func childEnviron(flags *pflag.FlagSet, password string) []string {
	drop := map[string]bool{"SONDE_API_TOKENS": true, "SONDE_AGENT_ENABLED": true}
	if flags != nil {
		flags.VisitAll(func(f *pflag.Flag) {
			drop["SONDE_"+strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))] = true
		})
	}
	drop["SONDE_NATS_PASSWORD"] = true
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if drop[k] || strings.HasPrefix(k, "LLM_") {
			continue
		}
		env = append(env, kv)
	}
	if password != "" {
		env = append(env, "SONDE_NATS_PASSWORD="+password)
	}
	return env
}

// checkNATSAuth validates the NATS credential and provisioning flags before
// anything starts.
func checkNATSAuth(o serveOptions, noServices bool) error {
	if o.natsURL == "" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"--nats-user", o.natsUser != ""}, {"--nats-password", o.natsPass != ""}, {"--nats-creds", o.natsCreds != ""}, {"--nats-admin", o.natsAdmin}} {
			if f.set {
				return fmt.Errorf("%s applies to an external NATS server (--nats); the embedded server needs no credentials and provisions itself", f.name)
			}
		}
	}
	switch {
	case o.natsCreds != "" && (o.natsUser != "" || o.natsPass != ""):
		return errors.New("--nats-creds and --nats-user/SONDE_NATS_PASSWORD are two ways to authenticate; give one")
	case o.natsUser != "" && o.natsPass == "":
		return fmt.Errorf("--nats-user %q needs a password: set SONDE_NATS_PASSWORD", o.natsUser)
	case o.natsUser == "" && o.natsPass != "":
		return errors.New("a NATS password (SONDE_NATS_PASSWORD or --nats-password) needs --nats-user")
	case noServices && !o.natsAdmin:
		return errors.New("--services none only provisions JetStream resources; it needs --nats-admin")
	}
	if o.natsCreds != "" {
		if _, err := os.Stat(o.natsCreds); err != nil {
			return fmt.Errorf("--nats-creds: %w", err)
		}
	}
	return nil
}

// ensureResources declares Sonde's JetStream resources (natsx.Resources). The
// embedded server's process owns it and applies every declaration, as does an
// external process given --nats-admin; any other process creates only the
// resources its services use that are missing, and leaves existing ones as
// they are, so it needs no permission beyond its own.
func ensureResources(ctx context.Context, o serveOptions, services []string, js jetstream.JetStream, log *slog.Logger) error {
	res := natsx.Resources{Replicas: o.jsReplicas, Logger: log, Admin: o.natsURL == "" || o.natsAdmin}
	if !res.Admin {
		res.Only = []string{}
		for _, svc := range services {
			for _, name := range natsx.Needs(svc) {
				if !slices.Contains(res.Only, name) {
					res.Only = append(res.Only, name)
				}
			}
		}
	}
	err := res.Ensure(ctx, js)
	var missing *natsx.MissingError
	if errors.As(err, &missing) {
		return fmt.Errorf("%w; provision Sonde's resources once as the NATS admin user (sonde serve --nats URL --nats-user admin --nats-admin --services none, password in SONDE_NATS_PASSWORD) or create %s yourself", err, missing.Name)
	}
	return err
}

// ensureDemo creates the demo database on first start and returns its connection.
func ensureDemo(dataDir string) (connections.Connection, error) {
	if err := os.MkdirAll(dataDir, 0o750); err != nil {
		return connections.Connection{}, fmt.Errorf("--data-dir: %w", err)
	}
	path, err := filepath.Abs(filepath.Join(dataDir, "demo.sqlite"))
	if err != nil {
		return connections.Connection{}, err
	}
	if err := demodb.Ensure(path); err != nil {
		return connections.Connection{}, fmt.Errorf("demo database: %w", err)
	}
	return connections.Connection{
		ID: "demo", Engine: "sqlite", Path: path, Demo: true,
		Description: "Demo shop (SQLite): customers, products, orders, order_items, payments",
	}, nil
}

// capturesHeld maps the flag's 0 ("none") onto the orchestrator's negative
// (its zero means the default).
func capturesHeld(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
