// Package stacktest starts a whole Sonde stack in one test process: a real
// embedded NATS server with JetStream, the SQLite executor on a real demo
// database, modelturn (the demo replay, or a vendor's real SDK — openai-go,
// anthropic-sdk-go, genai or ollama's api — against a scripted replay server
// of that vendor's wire format), the orchestrator and the gateway over HTTP.
package stacktest

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/executor"
	"github.com/sondehq/sonde/services/executor/connections"
	"github.com/sondehq/sonde/services/executor/demodb"
	"github.com/sondehq/sonde/services/gateway"
	"github.com/sondehq/sonde/services/gateway/client"
	"github.com/sondehq/sonde/services/modelturn"
	"github.com/sondehq/sonde/services/orchestrator"
)

// Options choose the parts of a stack.
type Options struct {
	// Script drives the model through a vendor's real SDK and a replay
	// server of that vendor's wire format; nil uses the demo provider.
	Script modeltest.Script
	// Vendor is the wire format and SDK a Script is driven through:
	// modeltest.VendorOpenAI (the default, openai-go), VendorAnthropic
	// (anthropic-sdk-go), VendorGemini (genai) or VendorOllama (ollama's
	// api).
	Vendor string
	// ModelOptions configure the replay server (e.g. its context window).
	ModelOptions []modeltest.Option
	// Tokens configures gateway authentication; nil runs as the local admin.
	Tokens map[string]contracts.Actor
	// Orchestrator configures the orchestrator; Logger is filled in.
	Orchestrator orchestrator.Config
	// NoOrchestrator leaves it out, so a test can start its own.
	NoOrchestrator bool
	// ModelTuningPath is the operator's model-tuning document
	// (AGENT_MODEL_TUNING_PATH) for a scripted model, named "scripted".
	ModelTuningPath string
	// ModelTurn, when set, adjusts modelturn's configuration (heartbeat,
	// drain) before it starts; StartModelTurn uses it too.
	ModelTurn func(*modelturn.Config)
	// Executor, when set, adjusts the SQLite executor's configuration before
	// it starts; StartExecutor uses it too.
	Executor func(*executor.Config)
	// Connections are further connections: SQLite ones join the demo's
	// executor; every other engine among them gets an executor of its own.
	Connections []connections.Connection
	// Connect, when set, replaces the embedded server: each service gets the
	// connection Connect returns for its name ("executor-sqlite",
	// "modelturn", "orchestrator", "gateway"), e.g. to a server of the
	// test's own as that service's NATS user, and Stack.NATS is nil. The
	// resources must already exist.
	Connect func(t testing.TB, service string) *nats.Conn
}

// Stack is a running Sonde.
type Stack struct {
	// NATS is the embedded server; nil when Options.Connect is set.
	NATS   *natstest.Server
	DBPath string
	URL    string
	// Model is the replay server a Script answers through.
	Model  *modeltest.Server
	Orch   *orchestrator.Service
	Logger *slog.Logger
	// ExecutorConn is the SQLite executor's NATS connection, so a test can
	// cut it while a statement runs.
	ExecutorConn *nats.Conn
	// Executor is the SQLite executor, so a test can stop it.
	Executor *executor.Service
	// ModelTurn is the modelturn service and ModelConn its NATS connection,
	// so a test can stop it or cut it off mid-turn.
	ModelTurn *modelturn.Service
	ModelConn *nats.Conn

	mcfg  modelturn.Config
	excfg executor.Config
}

// Vendors are the wire formats a scripted model can be driven through, in
// the order reports list them.
var Vendors = []string{modeltest.VendorOpenAI, modeltest.VendorAnthropic, modeltest.VendorGemini, modeltest.VendorOllama}

// vendors maps each wire format (and "", the default) to its replay server
// and the modelturn provider whose SDK speaks it.
var vendors = map[string]struct {
	start    func(modeltest.Script, ...modeltest.Option) (*modeltest.Server, error)
	provider string
}{
	"":                        {modeltest.NewOpenAI, modelturn.ProviderOpenAI},
	modeltest.VendorOpenAI:    {modeltest.NewOpenAI, modelturn.ProviderOpenAI},
	modeltest.VendorAnthropic: {modeltest.NewAnthropic, modelturn.ProviderAnthropic},
	modeltest.VendorGemini:    {modeltest.NewGemini, modelturn.ProviderGemini},
	modeltest.VendorOllama:    {modeltest.NewOllama, modelturn.ProviderOllama},
}

// Logger discards logs unless -v is given.
func Logger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// Start starts a stack that stops when the test ends.
func Start(t testing.TB, o Options) *Stack {
	t.Helper()
	s := &Stack{Logger: Logger(t)}
	connect := o.Connect
	if connect == nil {
		s.NATS = natstest.Start(t)
		connect = func(testing.TB, string) *nats.Conn { return s.NATS.Connect() }
	}
	s.DBPath = filepath.Join(t.TempDir(), "demo.sqlite")
	if err := demodb.Ensure(s.DBPath); err != nil {
		t.Fatal(err)
	}
	s.excfg = executor.Config{
		Connections: []connections.Connection{{ID: "demo", Engine: contracts.EngineSQLite, Path: s.DBPath, Demo: true}},
		Logger:      s.Logger,
	}
	others := map[contracts.Engine][]connections.Connection{}
	for _, c := range o.Connections {
		if c.Engine == contracts.EngineSQLite {
			s.excfg.Connections = append(s.excfg.Connections, c)
			continue
		}
		others[c.Engine] = append(others[c.Engine], c)
	}
	if o.Executor != nil {
		o.Executor(&s.excfg)
	}
	s.ExecutorConn = connect(t, executor.ServiceName(contracts.EngineSQLite))
	s.Executor = s.StartExecutor(t, s.ExecutorConn)
	for engine, conns := range others {
		ex, err := executor.New(executor.Config{Engine: engine, Connections: conns, Logger: s.Logger,
			NATS: connect(t, executor.ServiceName(engine))})
		if err != nil {
			t.Fatal(err)
		}
		if err := ex.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	}

	mcfg := modelturn.Config{Provider: modelturn.ProviderDemo, Logger: s.Logger}
	var err error
	if o.Script != nil {
		v, ok := vendors[o.Vendor]
		if !ok {
			t.Fatalf("stacktest: unknown vendor %q", o.Vendor)
		}
		// The scripted model passes the start path's capability gate.
		s.Model, err = v.start(modelturn.ProbeAware(o.Script), o.ModelOptions...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Model.Close() })
		mcfg = modelturn.Config{Provider: v.provider, Model: "scripted", APIKey: "test-key", APIURL: s.Model.URL(), Logger: s.Logger,
			TuningPath: o.ModelTuningPath}
	}
	if o.ModelTurn != nil {
		o.ModelTurn(&mcfg)
	}
	s.mcfg = mcfg
	s.ModelConn = connect(t, "modelturn")
	s.ModelTurn = s.StartModelTurn(t, s.ModelConn)

	if !o.NoOrchestrator {
		s.Orch = s.StartOrchestrator(t, connect(t, "orchestrator"), o.Orchestrator)
	}

	gw, err := gateway.New(gateway.Config{Listen: "127.0.0.1:0", Tokens: o.Tokens, Logger: s.Logger}, connect(t, "gateway"))
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(gw.Handler())
	t.Cleanup(hs.Close)
	s.URL = hs.URL
	return s
}

// StartExecutor starts a SQLite executor on nc with the stack's
// configuration (another replica, or a restart), stopped when the test ends.
func (s *Stack) StartExecutor(t testing.TB, nc *nats.Conn) *executor.Service {
	t.Helper()
	cfg := s.excfg
	cfg.NATS = nc
	ex, err := executor.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ex.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ex.Stop(context.Background()) })
	return ex
}

// StartModelTurn starts a modelturn service on nc with the stack's
// configuration (another replica, or a restart), stopped when the test ends.
func (s *Stack) StartModelTurn(t testing.TB, nc *nats.Conn) *modelturn.Service {
	t.Helper()
	cfg := s.mcfg
	cfg.NATS = nc
	mt, err := modelturn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := mt.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mt.Stop(context.Background()) })
	return mt
}

// StartOrchestrator starts an orchestrator on nc with opts (its test seams),
// stopped when the test ends.
func (s *Stack) StartOrchestrator(t testing.TB, nc *nats.Conn, cfg orchestrator.Config, opts ...orchestrator.Option) *orchestrator.Service {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = s.Logger
	}
	cfg.NATS = nc
	o, err := orchestrator.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = o.Stop(context.Background()) })
	return o
}

// Client is an HTTP client of the stack's gateway.
func (s *Stack) Client(token string) *client.Client { return client.New(s.URL, token) }

// Follow streams a run until run-finished and returns every entry.
func Follow(t testing.TB, c *client.Client, runID string) []contracts.Entry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var got []contracts.Entry
	if err := c.Stream(ctx, runID, 0, func(e contracts.Entry) error {
		got = append(got, e)
		return nil
	}); err != nil {
		t.Fatalf("stream %s: %v (after %d entries)", runID, err, len(got))
	}
	return got
}
