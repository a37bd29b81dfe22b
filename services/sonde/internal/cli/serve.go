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
scaled separately.

Every flag can also be set as SONDE_<FLAG> (SONDE_DATA_DIR, SONDE_HTTP, …);
a flag on the command line wins over the variable. The model is configured
with LLM_PROVIDER, LLM_MODEL, LLM_API_KEY and LLM_API_URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return serve(cmd.Context(), o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.dataDir, "data-dir", ".sonde", "directory for the embedded NATS store and the demo database")
	f.StringVar(&o.httpAddr, "http", "127.0.0.1:8080", "gateway listen address")
	f.StringVar(&o.connections, "connections", "", "connections YAML file (read by executors only)")
	f.StringVar(&o.natsURL, "nats", "", "external NATS server URL; empty runs an embedded server")
	f.StringVar(&o.natsListen, "nats-listen", "", "also serve the embedded NATS server on this TCP address")
	f.StringVar(&o.services, "services", strings.Join(allServices, ","), "services to run: "+strings.Join(allServices, ",")+` ("executors" for every executor)`)
	f.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error")
	f.BoolVar(&o.noDemo, "no-demo", false, "do not create or register the demo database")
	f.IntVar(&o.jsReplicas, "js-replicas", 1, "replicas of Sonde's JetStream streams, buckets and object store (3 on a cluster)")
	bindEnv(cmd)
	return cmd
}

func parseServices(s string) ([]string, error) {
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
	if err := (natsx.Resources{Replicas: o.jsReplicas}).Ensure(startCtx, js); err != nil {
		return err
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
		nc, err := natsx.Connect(o.natsURL, "sonde")
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
