package cli

import (
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

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/natsx"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/modelturn"
	"github.com/sondehq/sonde/services/orchestrator"
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
	natsUser    string
	natsPass    string
	natsCreds   string
	natsAdmin   bool
	passOnArgs  bool // --nats-password was given on the command line
	services    string
	logLevel    string
	noDemo      bool
	jsReplicas  int
}

func newServeCmd() *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run Sonde's services: all of them on an embedded NATS server by default",
		Long: `serve starts, in one process, an embedded NATS server with JetStream (file store
under --data-dir) and every service: gateway, orchestrator, modelturn and the
SQLite executor. On first start it creates a demo SQLite shop database under
--data-dir and registers it as connection "demo".

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
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.passOnArgs = cmd.Flags().Changed("nats-password")
			return serve(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", ".sonde", "directory for the embedded NATS store and the demo database")
	f.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "gateway listen address")
	f.StringVar(&o.connections, "connections", "", "connections YAML file (read by executors only)")
	f.StringVar(&o.natsURL, "nats", "", "external NATS server URL; empty runs an embedded server")
	f.StringVar(&o.natsListen, "nats-listen", "", "also serve the embedded NATS server on this TCP address")
	f.StringVar(&o.natsUser, "nats-user", "", "NATS user on the external server (--nats); its password comes from SONDE_NATS_PASSWORD")
	f.StringVar(&o.natsPass, "nats-password", "", "password of --nats-user; prefer SONDE_NATS_PASSWORD, since a command line is visible to other users (ps)")
	f.StringVar(&o.natsCreds, "nats-creds", "", "NATS credentials file (user JWT and NKey seed) for the external server, instead of --nats-user")
	f.BoolVar(&o.natsAdmin, "nats-admin", false, "provision: create and update every JetStream resource to this declaration (run as the NATS admin user; with --services none, provision and exit)")
	f.StringVar(&o.services, "services", strings.Join(allServices, ","), "services to run: "+strings.Join(allServices, ",")+` ("executors" for every executor; "none" with --nats-admin only provisions)`)
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&o.noDemo, "no-demo", false, "do not create or register the demo database")
	f.IntVar(&o.jsReplicas, "js-replicas", 1, "replicas of Sonde's JetStream streams, buckets and object store (3 on a cluster)")
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
		tokens, err := gateway.ParseTokens(os.Getenv("SONDE_API_TOKENS"))
		if err != nil {
			return fmt.Errorf("SONDE_API_TOKENS: %w", err)
		}
		gwCfg = gateway.Config{Listen: o.httpAddr, Tokens: tokens, Logger: log, Disabled: agentsDisabled()}
	}

	nc, shutdownNATS, err := connectNATS(o, log)
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

	// Services stop in the reverse order they started.
	var started []func()
	defer func() {
		for i := len(started) - 1; i >= 0; i-- {
			started[i]()
		}
	}()
	if runs(executor.ServiceName(contracts.EngineSQLite)) && !o.noDemo {
		demo, err := ensureDemo(o.dataDir)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(conns, func(c connections.Connection) bool { return c.ID == demo.ID }) {
			conns = append(conns, demo)
		}
	}
	for _, name := range services {
		eng, ok := execs[name]
		if !ok {
			continue
		}
		ex, err := executor.New(executor.Config{Engine: eng, Connections: conns, Logger: log})
		if err != nil {
			return err
		}
		if err := ex.Start(startCtx, nc); err != nil {
			return err
		}
		started = append(started, func() {
			if err := ex.Stop(); err != nil {
				log.Warn("stop executor", "engine", eng, "err", err)
			}
		})
	}
	if runs(svcModelTurn) {
		mt, err := modelturn.New(mtCfg)
		if err != nil {
			return err
		}
		if err := mt.Start(startCtx, nc); err != nil {
			return err
		}
		started = append(started, mt.Stop)
	}
	if runs(svcOrchestrator) {
		orc, err := orchestrator.New(orchestrator.Config{Logger: log})
		if err != nil {
			return err
		}
		if err := orc.Start(startCtx, nc); err != nil {
			return err
		}
		started = append(started, orc.Stop)
	}
	if !runs(svcGateway) {
		log.Info("sonde serving", "services", services)
		<-ctx.Done()
		return nil
	}
	gwCfg.Ready = func(context.Context) error {
		if !nc.IsConnected() {
			return errors.New("NATS is not connected")
		}
		return nil
	}
	gw, err := gateway.New(gwCfg, nc)
	if err != nil {
		return err
	}
	log.Info("sonde serving", "services", services, "http", o.httpAddr)
	if err := gw.Serve(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// agentsDisabled reads SONDE_AGENT_ENABLED: an operator's off-switch.
func agentsDisabled() bool {
	switch strings.ToLower(strings.TrimSpace(os.Getenv("SONDE_AGENT_ENABLED"))) {
	case "false", "off", "0", "no":
		return true
	}
	return false
}

func connectNATS(o serveOptions, log *slog.Logger) (*nats.Conn, func(), error) {
	if o.natsURL != "" {
		if o.natsListen != "" {
			return nil, nil, errors.New("--nats-listen applies to the embedded server; it cannot be used with --nats")
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
			return nil, nil, err
		}
		return nc, nc.Close, nil
	}
	if err := os.MkdirAll(o.dataDir, 0o750); err != nil {
		return nil, nil, fmt.Errorf("--data-dir: %w", err)
	}
	emb, err := natsx.StartEmbedded(natsx.EmbeddedConfig{StoreDir: filepath.Join(o.dataDir, "nats"), Listen: o.natsListen})
	if err != nil {
		return nil, nil, err
	}
	nc, err := emb.Connect("sonde")
	if err != nil {
		emb.Shutdown(context.Background())
		return nil, nil, err
	}
	if u := emb.ClientURL(); u != "" {
		log.Info("embedded NATS listening", "url", u)
	}
	return nc, func() {
		nc.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		emb.Shutdown(ctx)
	}, nil
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
