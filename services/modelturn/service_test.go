package modelturn_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/modelturn"
)

func replay(t *testing.T, script modeltest.ScriptFunc, opts ...modeltest.Option) *modeltest.OpenAIServer {
	t.Helper()
	s, err := modeltest.NewOpenAI(script, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func say(text string) modeltest.ScriptFunc {
	return func(modeltest.ChatRequest) (modeltest.Reply, error) {
		return modeltest.Reply{Text: text, Usage: modeltest.Usage{PromptTokens: 2048, CompletionTokens: 20, CachedTokens: 1024}}, nil
	}
}

func newService(t *testing.T, cfg modelturn.Config) *modelturn.Service {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(t.Output(), nil))
	}
	s, err := modelturn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Stop(context.Background()) })
	return s
}

// serveOnNATS builds a service on an embedded NATS server and starts it.
func serveOnNATS(t *testing.T, cfg modelturn.Config) (*modelturn.Service, *natstest.Server) {
	t.Helper()
	ns := natstest.Start(t)
	cfg.NATS = ns.Connect()
	s := newService(t, cfg)
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return s, ns
}

func userTurn(runID string) contracts.ModelTurnRequest {
	return contracts.ModelTurnRequest{RunID: runID, Turn: 1, TimeoutMs: 10_000, Messages: []contracts.Message{
		{Role: contracts.RoleSystem, Content: "You investigate read-only."},
		{Role: contracts.RoleUser, Content: "Why did orders dip?"},
	}}
}

func TestUnconfiguredServiceAnswersEveryTurnWithAFailure(t *testing.T) {
	s := newService(t, modelturn.Config{})
	if _, _, _, ok := s.Configured(); ok {
		t.Fatal("configured without a provider")
	}
	reply := s.Turn(context.Background(), userTurn("r1"))
	f := reply.Failure
	if f == nil || f.Reason != contracts.ReasonModelUnavailable || f.Retryable ||
		!strings.HasPrefix(f.Message, "no model is configured: set LLM_PROVIDER") {
		t.Fatalf("reply %+v", reply)
	}
	if p := s.Probe(context.Background(), contracts.ModelProbeRequest{}); p.Failure == nil || p.Failure.Reason != contracts.ReasonModelUnavailable {
		t.Fatalf("probe %+v", p)
	}
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	for _, cfg := range []modelturn.Config{
		{Provider: "anthropic-typo"},
		{Provider: modelturn.ProviderOpenAI, APIKey: "k"},
		{Provider: modelturn.ProviderOpenAI, Model: "gpt-test"},
		{Provider: modelturn.ProviderOpenAI, Model: "gpt-test", APIURL: "not a url"},
	} {
		if s, err := modelturn.New(cfg); err == nil {
			_ = s.Stop(context.Background())
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}

func TestConfigFromEnvReadsOnlyLLMVariables(t *testing.T) {
	t.Setenv("LLM_PROVIDER", " OpenAI ")
	t.Setenv("LLM_MODEL", "gpt-test")
	t.Setenv("LLM_API_KEY", "sk-sonde")
	t.Setenv("LLM_API_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_API_KEY", "sk-ambient")
	cfg := modelturn.ConfigFromEnv()
	if cfg.Provider != "openai" || cfg.Model != "gpt-test" || cfg.APIKey != "sk-sonde" || cfg.APIURL != "http://127.0.0.1:1/v1" {
		t.Fatalf("config %+v", cfg)
	}
}

func TestAmbientOpenAIEnvironmentNeverAuthenticates(t *testing.T) {
	elsewhere := replay(t, say("wrong server"))
	t.Setenv("OPENAI_API_KEY", "sk-ambient")
	t.Setenv("OPENAI_BASE_URL", elsewhere.URL())
	t.Setenv("OPENAI_ORG_ID", "org-ambient")
	t.Setenv("OPENAI_PROJECT_ID", "proj-ambient")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Ambient: yes")

	for _, key := range []string{"sk-sonde", ""} {
		srv := replay(t, say("ok"))
		s := newService(t, modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-test", APIKey: key, APIURL: srv.URL()})
		if reply := s.Turn(context.Background(), userTurn("r1")); reply.Failure != nil {
			t.Fatalf("turn failed: %+v", reply.Failure)
		}
		reqs := srv.Requests()
		if len(reqs) != 1 {
			t.Fatalf("the configured server saw %d requests", len(reqs))
		}
		h := reqs[0].Header
		want := ""
		if key != "" {
			want = "Bearer " + key
		}
		if got := h.Get("Authorization"); got != want {
			t.Errorf("key %q: Authorization %q, want %q", key, got, want)
		}
		for _, name := range []string{"OpenAI-Organization", "OpenAI-Project", "X-Ambient"} {
			if v := h.Get(name); v != "" {
				t.Errorf("ambient header %s: %q", name, v)
			}
		}
	}
	if n := len(elsewhere.Requests()); n != 0 {
		t.Fatalf("OPENAI_BASE_URL received %d requests", n)
	}
}

func TestTurnTimeoutIsTheRequestsWhenShorter(t *testing.T) {
	srv := replay(t, say("an answer that arrives far too slowly to be of use"), modeltest.WithChunkDelay(2*time.Second))
	s := newService(t, modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-test", APIKey: "k", APIURL: srv.URL()})
	req := userTurn("r1")
	req.TimeoutMs = 150
	start := time.Now()
	reply := s.Turn(context.Background(), req)
	if reply.Failure == nil || reply.Failure.Reason != contracts.ReasonModelTimeout || !reply.Failure.Retryable {
		t.Fatalf("reply %+v", reply)
	}
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Fatalf("a 150 ms turn took %s", d)
	}
}

func request(t *testing.T, nc *nats.Conn, subject string, in, out any) {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := nc.Request(subject, b, 10*time.Second)
	if err != nil {
		t.Fatalf("request %s: %v", subject, err)
	}
	if err := json.Unmarshal(msg.Data, out); err != nil {
		t.Fatalf("reply %s: %v", msg.Data, err)
	}
}

func TestServesTurnsAndDeltasOverNATS(t *testing.T) {
	text := "Orders fell in March; signups fell with them, which explains most of the dip."
	srv := replay(t, say(text))
	_, ns := serveOnNATS(t, modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-test", APIKey: "k", APIURL: srv.URL()})
	client := ns.Connect()

	var mu sync.Mutex
	var deltas []contracts.ModelDelta
	sub, err := client.Subscribe(contracts.ModelDeltaSubject("run-7"), func(m *nats.Msg) {
		var d contracts.ModelDelta
		if err := json.Unmarshal(m.Data, &d); err != nil {
			t.Errorf("delta %s: %v", m.Data, err)
		}
		mu.Lock()
		deltas = append(deltas, d)
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := client.Flush(); err != nil {
		t.Fatal(err)
	}

	req := userTurn("run-7")
	req.Turn = 4
	var reply contracts.ModelTurnReply
	request(t, client, contracts.SubjectModelTurn, req, &reply)
	if reply.Failure != nil || reply.Text != text || reply.Provider != "openai" || reply.Model != "gpt-test" || reply.Demo {
		t.Fatalf("reply %+v", reply)
	}
	if reply.Usage != (contracts.Usage{InputTokens: 2048, OutputTokens: 20, CachedTokens: 1024}) {
		t.Fatalf("usage %+v", reply.Usage)
	}
	// Deltas were published before the reply, on the same connection; the
	// subscription's handler runs on its own goroutine, so the last of them
	// may still be on its way to it when the reply is read: wait for them.
	joinDeltas := func() (int, string) {
		mu.Lock()
		defer mu.Unlock()
		var joined strings.Builder
		for _, d := range deltas {
			if d.RunID != "run-7" || d.Turn != 4 {
				t.Fatalf("delta %+v", d)
			}
			joined.WriteString(d.Text)
		}
		return len(deltas), joined.String()
	}
	n, joined := joinDeltas()
	for deadline := time.Now().Add(2 * time.Second); joined != text && time.Now().Before(deadline); n, joined = joinDeltas() {
		time.Sleep(10 * time.Millisecond)
	}
	if n < 3 || joined != text {
		t.Fatalf("%d deltas: %q", n, joined)
	}

	var probe contracts.ModelProbeReply
	request(t, client, contracts.SubjectModelProbe, contracts.ModelProbeRequest{}, &probe)
	if probe.Failure != nil || probe.Provider != "openai" || probe.Model != "gpt-test" {
		t.Fatalf("probe %+v", probe)
	}

	var info struct {
		Name      string `json:"name"`
		Endpoints []struct {
			Subject    string `json:"subject"`
			QueueGroup string `json:"queue_group"`
		} `json:"endpoints"`
	}
	request(t, client, "$SRV.INFO."+modelturn.ServiceName, struct{}{}, &info)
	subjects := map[string]string{}
	for _, e := range info.Endpoints {
		subjects[e.Subject] = e.QueueGroup
	}
	if info.Name != modelturn.ServiceName || subjects[contracts.SubjectModelTurn] != contracts.QueueModelTurn ||
		subjects[contracts.SubjectModelProbe] != contracts.QueueModelTurn {
		t.Fatalf("service info %+v", info)
	}
}

func TestFailuresTravelInTheReply(t *testing.T) {
	srv := replay(t, func(modeltest.ChatRequest) (modeltest.Reply, error) {
		return modeltest.Reply{Status: 401, ErrorCode: "invalid_api_key", ErrorMessage: "Incorrect API key provided: sk-wr***"}, nil
	})
	_, ns := serveOnNATS(t, modelturn.Config{Provider: modelturn.ProviderOpenAI, Model: "gpt-test", APIKey: "sk-wrong", APIURL: srv.URL()})
	var reply contracts.ModelTurnReply
	request(t, ns.Connect(), contracts.SubjectModelTurn, userTurn("r2"), &reply)
	if f := reply.Failure; f == nil || f.Reason != contracts.ReasonModelUnauthorized || f.Retryable ||
		strings.Contains(f.Message, "Incorrect") {
		t.Fatalf("reply %+v", reply)
	}

	// A request that is not JSON still gets a ModelTurnReply.
	msg, err := ns.Connect().Request(contracts.SubjectModelTurn, []byte("{"), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var bad contracts.ModelTurnReply
	if err := json.Unmarshal(msg.Data, &bad); err != nil || bad.Failure == nil || bad.Failure.Reason != contracts.ReasonInternal {
		t.Fatalf("reply to bad JSON %s", msg.Data)
	}
}

func TestUnconfiguredServiceStillServes(t *testing.T) {
	s, ns := serveOnNATS(t, modelturn.Config{})
	var probe contracts.ModelProbeReply
	request(t, ns.Connect(), contracts.SubjectModelProbe, contracts.ModelProbeRequest{}, &probe)
	if probe.Failure == nil || !strings.Contains(probe.Failure.Message, "LLM_PROVIDER") {
		t.Fatalf("probe %+v", probe)
	}
	if err := s.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.Stop(context.Background()); err != nil { // idempotent
		t.Fatal(err)
	}
}
