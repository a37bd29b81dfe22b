package modelturn_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn"
)

// vendor starts one provider's replay server and configures the service
// for it: each provider's real SDK talks to its vendor's wire format.
type vendor struct {
	provider string
	start    func(modeltest.Script, ...modeltest.Option) (*modeltest.Server, error)
	// cached reports whether the vendor reports cached tokens.
	cached bool
}

var vendors = []vendor{
	{modelturn.ProviderOpenAI, modeltest.NewOpenAI, true},
	{modelturn.ProviderAnthropic, modeltest.NewAnthropic, true},
	{modelturn.ProviderGemini, modeltest.NewGemini, true},
	{modelturn.ProviderOllama, modeltest.NewOllama, false},
}

func (v vendor) serve(t *testing.T, script modeltest.ScriptFunc, opts ...modeltest.Option) (*modelturn.Service, *modeltest.Server) {
	t.Helper()
	srv, err := v.start(script, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	s := newService(t, modelturn.Config{Provider: v.provider, Model: "m-" + v.provider, APIKey: "sonde-key", APIURL: srv.URL()})
	return s, srv
}

func fixed(r modeltest.Reply) modeltest.ScriptFunc {
	return func(modeltest.ChatRequest) (modeltest.Reply, error) { return r, nil }
}

// toolTurn is a transcript with a completed tool call, so every adapter maps
// assistant calls and tool results.
func toolTurn() contracts.ModelTurnRequest {
	req := userTurn("run-1")
	req.Tools = []contracts.ToolSpec{{Name: "run_read_query", Description: "Run one read-only statement.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"]}`)}}
	req.Messages = append(req.Messages,
		contracts.Message{Role: contracts.RoleAssistant, ToolCalls: []contracts.ModelToolCall{{ID: "call_a", Name: "run_read_query", Arguments: `{"sql":"SELECT 1"}`}}},
		contracts.Message{Role: contracts.RoleTool, ToolCallID: "call_a", Content: `{"rows":[[1]]}`},
	)
	return req
}

func TestEveryProviderThroughItsSDK(t *testing.T) {
	for _, v := range vendors {
		t.Run(v.provider, func(t *testing.T) {
			t.Run("text turn", func(t *testing.T) {
				s, srv := v.serve(t, fixed(modeltest.Reply{Text: "Orders fell in March because signups fell.",
					Usage: modeltest.Usage{PromptTokens: 2048, CompletionTokens: 20, CachedTokens: 1024}}))
				reply := s.Turn(context.Background(), toolTurn())
				if reply.Failure != nil || reply.Text != "Orders fell in March because signups fell." || reply.FinishReason != "stop" {
					t.Fatalf("reply %+v", reply)
				}
				want := contracts.Usage{InputTokens: 2048, OutputTokens: 20, CachedTokens: 1024}
				if !v.cached {
					want.CachedTokens = 0
				}
				if reply.Usage != want {
					t.Fatalf("usage %+v, want %+v", reply.Usage, want)
				}
				req := srv.Requests()[0]
				if !req.Stream || len(req.Tools) != 1 || req.Tools[0].Function.Name != "run_read_query" {
					t.Fatalf("request %+v", req)
				}
				results := req.LastToolResults()
				if len(results) != 1 || results[0].Tool != "run_read_query" || results[0].Content != `{"rows":[[1]]}` {
					t.Fatalf("tool results %+v in %+v", results, req.Messages)
				}
				if req.Messages[0].Role != "system" || req.Messages[0].Content != "You investigate read-only." {
					t.Fatalf("system prompt %+v", req.Messages[0])
				}
			})
			t.Run("planning turn without tools", func(t *testing.T) {
				s, srv := v.serve(t, fixed(modeltest.Reply{Text: "```postgres\nSELECT 1\n```"}))
				req := userTurn("run-plan")
				req.Tools = []contracts.ToolSpec{}
				reply := s.Turn(context.Background(), req)
				if reply.Failure != nil || !strings.Contains(reply.Text, "SELECT 1") {
					t.Fatalf("reply %+v", reply)
				}
				got := srv.Requests()[0]
				if len(got.Tools) != 0 || strings.Contains(string(got.Body), "run_read_query") {
					t.Fatalf("a planning turn reached %s with tools: %s", v.provider, got.Body)
				}
			})
			t.Run("single tool call", func(t *testing.T) {
				s, _ := v.serve(t, fixed(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: "run_read_query", Arguments: `{"sql":"SELECT count(*) FROM orders"}`}}}))
				reply := s.Turn(context.Background(), toolTurn())
				if reply.Failure != nil || len(reply.ToolCalls) != 1 || reply.FinishReason != "tool_calls" {
					t.Fatalf("reply %+v", reply)
				}
				tc := reply.ToolCalls[0]
				var args map[string]string
				if tc.ID == "" || tc.Name != "run_read_query" || json.Unmarshal([]byte(tc.Arguments), &args) != nil || args["sql"] != "SELECT count(*) FROM orders" {
					t.Fatalf("call %+v", tc)
				}
			})
			t.Run("parallel tool calls", func(t *testing.T) {
				s, _ := v.serve(t, fixed(modeltest.Reply{Text: "Two readings.", ToolCalls: []modeltest.ToolCall{
					{Name: "inspect_schema", Arguments: `{"table":"orders"}`},
					{Name: "run_read_query", Arguments: `{"sql":"SELECT 2"}`},
				}}))
				reply := s.Turn(context.Background(), toolTurn())
				if reply.Failure != nil || len(reply.ToolCalls) != 2 || reply.ToolCalls[0].Name != "inspect_schema" || reply.ToolCalls[1].Name != "run_read_query" {
					t.Fatalf("reply %+v", reply)
				}
				if reply.ToolCalls[0].ID == reply.ToolCalls[1].ID || reply.Text != "Two readings." {
					t.Fatalf("calls %+v", reply.ToolCalls)
				}
			})
			t.Run("deltas arrive before the reply", func(t *testing.T) {
				var mu sync.Mutex
				var got []string
				s, _ := v.serve(t, fixed(modeltest.Reply{Text: "one two three four five six seven eight nine ten"}))
				reply := modelturn.TurnWithDeltas(s, context.Background(), toolTurn(), func(text string) {
					mu.Lock()
					got = append(got, text)
					mu.Unlock()
				})
				if reply.Failure != nil || len(got) < 2 || strings.Join(got, "") != reply.Text {
					t.Fatalf("deltas %q, reply %+v", got, reply)
				}
			})
			t.Run("truncated stream", func(t *testing.T) {
				s, _ := v.serve(t, fixed(modeltest.Reply{Text: "cut short here", TruncateStream: true}))
				assertFailure(t, s.Turn(context.Background(), toolTurn()), contracts.ReasonModelUnavailable, true)
			})
			t.Run("mid-stream error", func(t *testing.T) {
				typ := map[string]string{modelturn.ProviderAnthropic: "overloaded_error", modelturn.ProviderGemini: "UNAVAILABLE"}[v.provider]
				s, _ := v.serve(t, fixed(modeltest.Reply{Text: "partial", StreamError: true, ErrorType: typ}))
				reply := s.Turn(context.Background(), toolTurn())
				if reply.Failure == nil || !reply.Failure.Retryable ||
					(reply.Failure.Reason != contracts.ReasonModelUnavailable && reply.Failure.Reason != contracts.ReasonModelRateLimited) {
					t.Fatalf("reply %+v", reply)
				}
			})
			t.Run("buffered body", func(t *testing.T) {
				s, _ := v.serve(t, fixed(modeltest.Reply{Text: "one body", IgnoreStream: true,
					Usage: modeltest.Usage{PromptTokens: 10, CompletionTokens: 2}}))
				reply := s.Turn(context.Background(), toolTurn())
				if reply.Failure != nil || reply.Text != "one body" || reply.Usage.InputTokens != 10 {
					t.Fatalf("reply %+v", reply)
				}
			})
			t.Run("failure classes", func(t *testing.T) {
				for _, c := range failureCases(v.provider) {
					t.Run(c.name, func(t *testing.T) {
						s, _ := v.serve(t, fixed(c.reply))
						assertFailure(t, s.Turn(context.Background(), toolTurn()), c.reason, c.retryable)
					})
				}
			})
			t.Run("timeout", func(t *testing.T) {
				s, _ := v.serve(t, fixed(modeltest.Reply{Text: "an answer that arrives far too slowly to be of use"}), modeltest.WithChunkDelay(2*time.Second))
				req := toolTurn()
				req.TimeoutMs = 300
				assertFailure(t, s.Turn(context.Background(), req), contracts.ReasonModelTimeout, true)
			})
			t.Run("ambient vendor variables never authenticate", func(t *testing.T) {
				for _, k := range []string{"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY", "OLLAMA_API_KEY"} {
					t.Setenv(k, "ambient-secret")
				}
				srv, err := v.start(fixed(modeltest.Reply{Text: "ok"}))
				if err != nil {
					t.Fatal(err)
				}
				defer srv.Close()
				t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
				t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
				t.Setenv("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:1")
				t.Setenv("OLLAMA_HOST", "http://127.0.0.1:1")
				for _, key := range []string{"", "sonde-key"} {
					s := newService(t, modelturn.Config{Provider: v.provider, Model: "m", APIKey: key, APIURL: srv.URL()})
					if reply := s.Turn(context.Background(), userTurn("r1")); reply.Failure != nil {
						t.Fatalf("key %q: %+v", key, reply.Failure)
					}
				}
				for _, req := range srv.Requests() {
					for name, vals := range req.Header {
						for _, val := range vals {
							if strings.Contains(val, "ambient-secret") {
								t.Fatalf("header %s carried the ambient key", name)
							}
						}
					}
				}
				last := srv.Requests()[len(srv.Requests())-1].Header
				if !strings.Contains(last.Get("Authorization")+last.Get("X-Api-Key")+last.Get("X-Goog-Api-Key"), "sonde-key") {
					t.Fatalf("the configured key was not sent: %v", last)
				}
			})
		})
	}
}

type failureCase struct {
	name      string
	reply     modeltest.Reply
	reason    contracts.FailureReason
	retryable bool
}

func failureCases(provider string) []failureCase {
	cases := []failureCase{
		{"unauthorized", modeltest.Reply{Status: http.StatusUnauthorized}, contracts.ReasonModelUnauthorized, false},
		{"forbidden", modeltest.Reply{Status: http.StatusForbidden}, contracts.ReasonModelUnauthorized, false},
		{"not found", modeltest.Reply{Status: http.StatusNotFound}, contracts.ReasonModelNotFound, false},
		{"rate limited", modeltest.Reply{Status: http.StatusTooManyRequests}, contracts.ReasonModelRateLimited, true},
		{"server error", modeltest.Reply{Status: http.StatusInternalServerError}, contracts.ReasonModelUnavailable, true},
		{"refused request", modeltest.Reply{Status: http.StatusBadRequest}, contracts.ReasonModelUnavailable, false},
		{"gateway timeout", modeltest.Reply{Status: http.StatusGatewayTimeout}, contracts.ReasonModelTimeout, true},
	}
	switch provider {
	case modelturn.ProviderOpenAI:
		cases = append(cases,
			failureCase{"quota", modeltest.Reply{Status: http.StatusTooManyRequests, ErrorCode: "insufficient_quota"}, contracts.ReasonModelRateLimited, false},
			failureCase{"context", modeltest.Reply{Status: http.StatusBadRequest, ErrorCode: "context_length_exceeded"}, contracts.ReasonModelContextExceeded, false})
	case modelturn.ProviderAnthropic:
		cases = append(cases,
			failureCase{"overloaded", modeltest.Reply{Status: 529}, contracts.ReasonModelRateLimited, true},
			failureCase{"billing", modeltest.Reply{Status: http.StatusBadRequest, ErrorType: "billing_error"}, contracts.ReasonModelRateLimited, false},
			failureCase{"spend limit", modeltest.Reply{Status: http.StatusTooManyRequests, ErrorCode: "enforced_spend_limit_reached"}, contracts.ReasonModelRateLimited, false},
			failureCase{"context", modeltest.Reply{Status: http.StatusRequestEntityTooLarge}, contracts.ReasonModelContextExceeded, false},
			failureCase{"context window stop", modeltest.Reply{Text: "x", FinishReason: "model_context_window_exceeded"}, contracts.ReasonModelContextExceeded, false})
	case modelturn.ProviderGemini:
		cases = append(cases,
			failureCase{"invalid key 400", modeltest.Reply{Status: http.StatusBadRequest, ErrorCode: "API_KEY_INVALID"}, contracts.ReasonModelUnauthorized, false},
			failureCase{"daily quota", modeltest.Reply{Status: http.StatusTooManyRequests, ErrorCode: "GenerateRequestsPerDayPerProjectPerModel-FreeTier"}, contracts.ReasonModelRateLimited, false},
			failureCase{"unavailable", modeltest.Reply{Status: http.StatusServiceUnavailable}, contracts.ReasonModelUnavailable, true})
	case modelturn.ProviderOllama:
		cases = append(cases,
			failureCase{"bad gateway", modeltest.Reply{Status: http.StatusBadGateway}, contracts.ReasonModelUnavailable, true})
	}
	return cases
}

func assertFailure(t *testing.T, reply contracts.ModelTurnReply, reason contracts.FailureReason, retryable bool) {
	t.Helper()
	if reply.Failure == nil || reply.Failure.Reason != reason || reply.Failure.Retryable != retryable {
		t.Fatalf("reply %+v failure %+v, want %s retryable=%t", reply, reply.Failure, reason, retryable)
	}
	if strings.Contains(reply.Failure.Message, "replayed") {
		t.Fatalf("the vendor's message reached the reply: %q", reply.Failure.Message)
	}
}

func TestUnreachableServerIsUnavailableForEveryProvider(t *testing.T) {
	for _, v := range vendors {
		s := newService(t, modelturn.Config{Provider: v.provider, Model: "m", APIKey: "k", APIURL: "http://127.0.0.1:1"})
		assertFailure(t, s.Turn(context.Background(), userTurn("r")), contracts.ReasonModelUnavailable, true)
	}
}

func TestRetryableFailureIsTriedAgain(t *testing.T) {
	for _, v := range vendors {
		t.Run(v.provider, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			s, _ := v.serve(t, func(modeltest.ChatRequest) (modeltest.Reply, error) {
				mu.Lock()
				defer mu.Unlock()
				calls++
				if calls == 1 {
					return modeltest.Reply{Status: http.StatusServiceUnavailable}, nil
				}
				return modeltest.Reply{Text: "second time lucky"}, nil
			})
			if reply := s.Turn(context.Background(), toolTurn()); reply.Failure != nil || reply.Text != "second time lucky" || calls != 2 {
				t.Fatalf("reply %+v after %d calls", reply, calls)
			}
		})
	}
}

func TestNotRetryableFailureIsNotTriedAgain(t *testing.T) {
	calls := 0
	s, _ := vendors[1].serve(t, func(modeltest.ChatRequest) (modeltest.Reply, error) {
		calls++
		return modeltest.Reply{Status: http.StatusUnauthorized}, nil
	})
	s.Turn(context.Background(), toolTurn())
	if calls != 1 {
		t.Fatalf("%d calls", calls)
	}
}

func TestPromptCachingMarksTheStablePrefix(t *testing.T) {
	s, srv := vendors[1].serve(t, fixed(modeltest.Reply{Text: "ok"}))
	s.Turn(context.Background(), toolTurn())
	body := string(srv.Requests()[0].Body)
	if strings.Count(body, `"cache_control":{"type":"ephemeral"}`) != 1 || !strings.Contains(body, `"system":[{"text":"You investigate read-only.","cache_control"`) {
		t.Fatalf("anthropic request does not mark the system prompt for caching: %s", body)
	}
}

func TestOllamaNeverTruncatesSilently(t *testing.T) {
	s, srv := vendors[3].serve(t, fixed(modeltest.Reply{Text: "ok"}))
	s.Turn(context.Background(), toolTurn())
	var body struct {
		Options  map[string]any `json:"options"`
		Truncate *bool          `json:"truncate"`
		Shift    *bool          `json:"shift"`
	}
	if err := json.Unmarshal(srv.Requests()[0].Body, &body); err != nil {
		t.Fatal(err)
	}
	if body.Truncate == nil || *body.Truncate || body.Shift == nil || *body.Shift || body.Options["num_ctx"] == nil {
		t.Fatalf("request %s", srv.Requests()[0].Body)
	}
}

func TestProbeEstablishesCapabilitiesOnTheWire(t *testing.T) {
	call := func(args string) modeltest.ScriptFunc {
		return fixed(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: modelturn.ProbeTool, Arguments: args}}})
	}
	all := []string{contracts.CapabilityToolCalling, contracts.CapabilityStructuredOutput, contracts.CapabilityStreaming}
	cases := []struct {
		name                         string
		script                       modeltest.ScriptFunc
		verified, missing, disproved []string
		failed                       bool
	}{
		{"calls tools", call(modelturn.ProbeArguments), all, nil, nil, false},
		{"ignores tools", fixed(modeltest.Reply{Text: "I would rather talk."}),
			[]string{contracts.CapabilityStreaming}, all[:2], all[:1], false},
		{"breaks the schema", call(`{"word":"probe","count":"three"}`),
			[]string{contracts.CapabilityToolCalling, contracts.CapabilityStreaming}, all[1:2], all[1:2], false},
		{"refuses", fixed(modeltest.Reply{Status: http.StatusBadRequest, ErrorMessage: "model does not support tools"}),
			nil, all, all[:1], false},
		{"answers without streaming", fixed(modeltest.Reply{IgnoreStream: true, ToolCalls: []modeltest.ToolCall{{Name: modelturn.ProbeTool, Arguments: modelturn.ProbeArguments}}}),
			all[:2], all[2:], all[2:], false},
		{"bad key says nothing about the model", fixed(modeltest.Reply{Status: http.StatusUnauthorized}), nil, nil, nil, true},
		{"5xx says nothing about the model", fixed(modeltest.Reply{Status: http.StatusInternalServerError}), nil, nil, nil, true},
	}
	for _, v := range vendors {
		for _, c := range cases {
			t.Run(v.provider+"/"+c.name, func(t *testing.T) {
				s, _ := v.serve(t, c.script)
				p := s.Probe(context.Background(), contracts.ModelProbeRequest{Capabilities: true})
				if (p.Failure != nil) != c.failed || !slices.Equal(p.Verified, c.verified) || !slices.Equal(p.Missing, c.missing) || !slices.Equal(p.Disproved, c.disproved) {
					t.Fatalf("probe %+v failure %+v", p, p.Failure)
				}
				if p.Message == "" || p.Tuning == nil {
					t.Fatalf("probe %+v", p)
				}
			})
		}
	}
}

func TestProbeCachesOnlyPositiveVerdicts(t *testing.T) {
	var mu sync.Mutex
	calls, capable := 0, false
	s, _ := vendors[0].serve(t, func(modeltest.ChatRequest) (modeltest.Reply, error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if !capable {
			return modeltest.Reply{Text: "no tools for me"}, nil
		}
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: modelturn.ProbeTool, Arguments: modelturn.ProbeArguments}}}, nil
	})
	ask := func() contracts.ModelProbeReply {
		return s.Probe(context.Background(), contracts.ModelProbeRequest{Capabilities: true})
	}
	if p := ask(); len(p.Missing) == 0 {
		t.Fatalf("probe %+v", p)
	}
	mu.Lock()
	capable = true
	mu.Unlock()
	if p := ask(); len(p.Missing) != 0 || calls != 2 {
		t.Fatalf("a refusal was cached: %+v after %d calls", p, calls)
	}
	if p := ask(); len(p.Missing) != 0 || calls != 2 {
		t.Fatalf("a positive verdict was not cached: %+v after %d calls", p, calls)
	}
	if p := s.Probe(context.Background(), contracts.ModelProbeRequest{}); p.Verified != nil || calls != 2 {
		t.Fatalf("a plain probe called the model: %+v", p)
	}
}

func TestDemoAnswersTheProbe(t *testing.T) {
	s := newService(t, modelturn.Config{Provider: modelturn.ProviderDemo})
	if p := s.Probe(context.Background(), contracts.ModelProbeRequest{Capabilities: true}); len(p.Missing) != 0 || !p.Demo || len(p.Verified) != 3 {
		t.Fatalf("probe %+v", p)
	}
}
