package openaichat

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
)

// replay starts a replay server answering every request with reply.
func replay(t *testing.T, reply modeltest.Reply, opts ...modeltest.Option) *modeltest.OpenAIServer {
	t.Helper()
	s, err := modeltest.NewOpenAI(modeltest.ScriptFunc(func(modeltest.ChatRequest) (modeltest.Reply, error) {
		return reply, nil
	}), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func client(t *testing.T, baseURL string) *Client {
	t.Helper()
	c, err := New(Config{Model: "gpt-test", APIKey: "sk-test", BaseURL: baseURL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var schema = json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"],"additionalProperties":false}`)

func request() contracts.ModelTurnRequest {
	return contracts.ModelTurnRequest{
		RunID: "run1", Turn: 3,
		Messages: []contracts.Message{
			{Role: contracts.RoleSystem, Content: "You investigate read-only."},
			{Role: contracts.RoleUser, Content: "Why did orders dip?"},
			{Role: contracts.RoleAssistant, Content: "Looking.", ToolCalls: []contracts.ModelToolCall{
				{ID: "call_1", Name: "inspect_schema", Arguments: `{"table":"orders"}`},
				{ID: "call_2", Name: "run_read_query", Arguments: `{"sql":"SELECT 1"}`},
			}},
			{Role: contracts.RoleTool, ToolCallID: "call_1", Content: "columns"},
			{Role: contracts.RoleTool, ToolCallID: "call_2", Content: `Result stored as {"source":"artifact","correlationId":"c_1"}`},
		},
		Tools: []contracts.ToolSpec{
			{Name: "run_read_query", Description: "Run one read-only statement.", Parameters: schema},
			{Name: "inspect_schema", Description: "Columns of a table."},
		},
	}
}

func turn(t *testing.T, c *Client, req contracts.ModelTurnRequest) (contracts.ModelTurnReply, []string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var mu sync.Mutex
	var deltas []string
	reply, err := c.Turn(ctx, req, func(s string) {
		mu.Lock()
		deltas = append(deltas, s)
		mu.Unlock()
	})
	return reply, deltas, err
}

func TestTextTurnStreamsDeltas(t *testing.T) {
	text := "Demonstration of a streamed answer that arrives in several pieces."
	s := replay(t, modeltest.Reply{Text: text, Usage: modeltest.Usage{PromptTokens: 50, CompletionTokens: 12}})
	reply, deltas, err := turn(t, client(t, s.URL()), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != text || reply.FinishReason != "stop" || len(reply.ToolCalls) != 0 {
		t.Fatalf("reply %+v", reply)
	}
	if len(deltas) < 3 || strings.Join(deltas, "") != text {
		t.Fatalf("deltas %q", deltas)
	}
	if reply.Usage != (contracts.Usage{InputTokens: 50, OutputTokens: 12}) {
		t.Fatalf("usage %+v", reply.Usage)
	}
}

func TestRequestCarriesTranscriptToolsAndUsageOption(t *testing.T) {
	s := replay(t, modeltest.Reply{Text: "ok"})
	if _, _, err := turn(t, client(t, s.URL()), request()); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests: the SDK retried", len(reqs))
	}
	r := reqs[0]
	if r.Model != "gpt-test" || !r.Stream || r.StreamOptions == nil || !r.StreamOptions.IncludeUsage {
		t.Fatalf("request %+v", r)
	}
	roles := []string{}
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if strings.Join(roles, ",") != "system,user,assistant,tool,tool" {
		t.Fatalf("roles %v", roles)
	}
	a := r.Messages[2]
	if a.Content != "Looking." || len(a.ToolCalls) != 2 || a.ToolCalls[1].ID != "call_2" ||
		a.ToolCalls[1].Type != "function" || a.ToolCalls[1].Function.Arguments != `{"sql":"SELECT 1"}` {
		t.Fatalf("assistant message %+v", a)
	}
	if r.Messages[4].ToolCallID != "call_2" || len(r.LastToolResults()) != 2 {
		t.Fatalf("tool messages %+v", r.Messages[3:])
	}
	if len(r.Tools) != 2 || r.Tools[0].Type != "function" || r.Tools[0].Function.Name != "run_read_query" ||
		r.Tools[0].Function.Description == "" {
		t.Fatalf("tools %+v", r.Tools)
	}
	if got := mustCompact(t, r.Tools[0].Function.Parameters); got != mustCompact(t, schema) {
		t.Fatalf("parameters %s, want %s", got, schema)
	}
	if !strings.Contains(string(r.Tools[1].Function.Parameters), `"type":"object"`) {
		t.Fatalf("a tool without a schema is declared %s", r.Tools[1].Function.Parameters)
	}
	if r.Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("authorization %q", r.Header.Get("Authorization"))
	}
}

func mustCompact(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func TestNoToolsSendsNoToolsArray(t *testing.T) {
	s := replay(t, modeltest.Reply{Text: "plan"})
	req := request()
	req.Tools = nil
	req.Messages = req.Messages[:2]
	if _, _, err := turn(t, client(t, s.URL()), req); err != nil {
		t.Fatal(err)
	}
	if s.Requests()[0].Tools != nil {
		t.Fatal("an empty tools array was sent")
	}
}

func TestSingleToolCall(t *testing.T) {
	args := `{"sql":"SELECT substr(ordered_at, 1, 7) AS month, COUNT(*) FROM orders GROUP BY month","reason":"trend"}`
	s := replay(t, modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_x", Name: "run_read_query", Arguments: args}}})
	reply, deltas, err := turn(t, client(t, s.URL()), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.FinishReason != "tool_calls" || len(reply.ToolCalls) != 1 || len(deltas) != 0 {
		t.Fatalf("reply %+v deltas %q", reply, deltas)
	}
	if got := reply.ToolCalls[0]; got != (contracts.ModelToolCall{ID: "call_x", Name: "run_read_query", Arguments: args}) {
		t.Fatalf("call %+v", got)
	}
}

func TestParallelToolCallsKeepTheirOrder(t *testing.T) {
	calls := []modeltest.ToolCall{
		{ID: "call_a", Name: "inspect_schema", Arguments: `{"table":"orders"}`},
		{ID: "call_b", Name: "inspect_schema", Arguments: `{"table":"customers"}`},
		{ID: "call_c", Name: "run_read_query", Arguments: `{"sql":"SELECT count(*) FROM payments WHERE method = 'card'"}`},
	}
	s := replay(t, modeltest.Reply{Text: "Three readings at once.", ToolCalls: calls})
	reply, _, err := turn(t, client(t, s.URL()), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "Three readings at once." || len(reply.ToolCalls) != 3 {
		t.Fatalf("reply %+v", reply)
	}
	for i, c := range calls {
		if got := reply.ToolCalls[i]; got.ID != c.ID || got.Name != c.Name || got.Arguments != c.Arguments {
			t.Errorf("call %d: %+v, want %+v", i, got, c)
		}
	}
}

func TestUsageReportsCachedTokens(t *testing.T) {
	s := replay(t, modeltest.Reply{Text: "ok", Usage: modeltest.Usage{PromptTokens: 4096, CompletionTokens: 80, CachedTokens: 3072}})
	reply, _, err := turn(t, client(t, s.URL()), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Usage != (contracts.Usage{InputTokens: 4096, OutputTokens: 80, CachedTokens: 3072}) {
		t.Fatalf("usage %+v", reply.Usage)
	}
}

func TestNonStreamedBodyIsReadAsTheAnswer(t *testing.T) {
	s := replay(t, modeltest.Reply{Text: "one body", IgnoreStream: true,
		ToolCalls: []modeltest.ToolCall{{ID: "c1", Name: "inspect_schema", Arguments: `{}`}},
		Usage:     modeltest.Usage{PromptTokens: 9, CompletionTokens: 3}})
	reply, deltas, err := turn(t, client(t, s.URL()), request())
	if err != nil {
		t.Fatal(err)
	}
	if reply.Text != "one body" || reply.FinishReason != "tool_calls" || len(reply.ToolCalls) != 1 ||
		reply.Usage.InputTokens != 9 || strings.Join(deltas, "") != "one body" {
		t.Fatalf("reply %+v deltas %q", reply, deltas)
	}
}

func wantFailure(t *testing.T, err error, reason contracts.FailureReason, retryable bool) *failure.Error {
	t.Helper()
	var f *failure.Error
	if !errors.As(err, &f) {
		t.Fatalf("error %v is not a classified failure", err)
	}
	if f.Reason != reason || f.Retryable != retryable {
		t.Fatalf("failure %s retryable=%t, want %s retryable=%t", f.Reason, f.Retryable, reason, retryable)
	}
	return f
}

func TestVendorErrorsAreClassifiedByTypeAndCode(t *testing.T) {
	const vendorText = "Incorrect API key provided: sk-test***. You can find your API key at https://platform.openai.com"
	cases := []struct {
		name      string
		status    int
		code      string
		reason    contracts.FailureReason
		retryable bool
	}{
		{"unauthorized", 401, "invalid_api_key", contracts.ReasonModelUnauthorized, false},
		{"forbidden", 403, "", contracts.ReasonModelUnauthorized, false},
		{"unknown model", 404, "model_not_found", contracts.ReasonModelNotFound, false},
		{"model code on 400", 400, "model_not_found", contracts.ReasonModelNotFound, false},
		{"rate limited", 429, "rate_limit_exceeded", contracts.ReasonModelRateLimited, true},
		{"no quota", 429, "insufficient_quota", contracts.ReasonModelRateLimited, false},
		{"context", 400, "context_length_exceeded", contracts.ReasonModelContextExceeded, false},
		{"server error", 500, "", contracts.ReasonModelUnavailable, true},
		{"overloaded", 503, "", contracts.ReasonModelUnavailable, true},
		{"bad request", 400, "invalid_value", contracts.ReasonModelUnavailable, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := replay(t, modeltest.Reply{Status: tc.status, ErrorCode: tc.code, ErrorMessage: vendorText})
			_, _, err := turn(t, client(t, s.URL()), request())
			f := wantFailure(t, err, tc.reason, tc.retryable)
			if strings.Contains(f.Message, "Incorrect") || strings.Contains(err.Error(), "Incorrect") {
				t.Fatalf("vendor text leaked: %q", f.Message)
			}
			if n := len(s.Requests()); n != 1 {
				t.Fatalf("%d requests: the SDK retried", n)
			}
		})
	}
}

func TestTruncatedStreamIsAFailure(t *testing.T) {
	for name, reply := range map[string]modeltest.Reply{
		"text":      {Text: "an answer cut short in the middle of", TruncateStream: true},
		"tool call": {ToolCalls: []modeltest.ToolCall{{Name: "run_read_query", Arguments: `{"sql":"SELECT 1"}`}}, TruncateStream: true},
	} {
		t.Run(name, func(t *testing.T) {
			s := replay(t, reply)
			_, _, err := turn(t, client(t, s.URL()), request())
			if f := wantFailure(t, err, contracts.ReasonModelUnavailable, true); !strings.Contains(f.Message, "cut short") {
				t.Fatalf("failure %q", f.Message)
			}
		})
	}
}

func TestUnreachableServerIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, _, err = turn(t, client(t, "http://"+addr+"/v1"), request())
	wantFailure(t, err, contracts.ReasonModelUnavailable, true)
}

func TestDeadlineIsATimeout(t *testing.T) {
	s := replay(t, modeltest.Reply{Text: "a slow answer that takes a long time to arrive"}, modeltest.WithChunkDelay(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := client(t, s.URL()).Turn(ctx, request(), nil)
	wantFailure(t, err, contracts.ReasonModelTimeout, true)
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("timeout took %s", d)
	}
}

func TestBadTranscriptIsRefusedBeforeTheCall(t *testing.T) {
	s := replay(t, modeltest.Reply{Text: "never"})
	req := request()
	req.Messages = append(req.Messages, contracts.Message{Role: "narrator", Content: "x"})
	_, _, err := turn(t, client(t, s.URL()), req)
	wantFailure(t, err, contracts.ReasonInternal, false)
	if len(s.Requests()) != 0 {
		t.Fatal("the call was made")
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{BaseURL: "http://x/v1"}); err == nil {
		t.Error("no model accepted")
	}
	if _, err := New(Config{Model: "m", BaseURL: "ftp://x"}); err == nil {
		t.Error("ftp URL accepted")
	}
}

func TestErrorEventInsideTheStreamIsClassified(t *testing.T) {
	for code, want := range map[string]struct {
		reason    contracts.FailureReason
		retryable bool
	}{
		"server_error":        {contracts.ReasonModelUnavailable, true},
		"rate_limit_exceeded": {contracts.ReasonModelRateLimited, true},
		"insufficient_quota":  {contracts.ReasonModelRateLimited, false},
	} {
		t.Run(code, func(t *testing.T) {
			s := replay(t, modeltest.Reply{Text: "partial text, then the stream fails", StreamError: true,
				ErrorCode: code, ErrorMessage: "vendor words"})
			_, _, err := turn(t, client(t, s.URL()), request())
			if f := wantFailure(t, err, want.reason, want.retryable); strings.Contains(f.Message, "vendor words") {
				t.Fatalf("vendor text leaked: %q", f.Message)
			}
		})
	}
}
