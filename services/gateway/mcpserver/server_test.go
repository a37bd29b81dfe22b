package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sondehq/sonde/services/gateway/client"
)

// connect serves a server on b over the SDK's in-memory transport and
// returns the official client's session. The whole stack's tests (both real
// transports, the real gateway) are in services/sonde/internal/cli.
func connect(t *testing.T, b Backend) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := New(b, Options{}).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

func structuredError(t *testing.T, res *mcp.CallToolResult) Error {
	t.Helper()
	if !res.IsError {
		t.Fatalf("not a tool error: %+v", res)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var e struct{ Error Error }
	if err := json.Unmarshal(raw, &e); err != nil || e.Error.Code == "" {
		t.Fatalf("tool error without a structured code: %s", raw)
	}
	return e.Error
}

// TestBadArgumentsAreToolErrors: arguments that are missing, of the wrong
// type, out of bounds or unknown never reach the backend (there is none
// here) and come back as INVALID_ARGUMENTS tool errors with a fix, never as
// protocol errors.
func TestBadArgumentsAreToolErrors(t *testing.T) {
	cs := connect(t, nil)
	cases := []struct {
		tool string
		args any
	}{
		{"run_query", map[string]any{}},
		{"run_query", map[string]any{"connection_id": "demo"}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": 1}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "limit": 0}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "limit": 1001}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "limit": 1.5}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "timeout_ms": 10001}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "params": []any{[]any{1}}}},
		{"run_query", map[string]any{"connection_id": "demo", "sql": "SELECT 1", "sqll": "x"}},
		{"run_query", map[string]any{"connection_id": " ", "sql": "SELECT 1"}},
		{"list_tables", map[string]any{"connection_id": ""}},
		{"describe_table", map[string]any{"connection_id": "demo", "table": " "}},
		{"explain_query", map[string]any{"sql": "SELECT 1"}},
		{"start_investigation", map[string]any{"connection_id": "demo", "objective": "   "}},
		{"get_run", map[string]any{"run_id": ""}},
		{"get_run", map[string]any{"run_id": "r", "wait_seconds": 121}},
		{"get_run", map[string]any{"run_id": "r", "wait_seconds": -1}},
		{"get_run", map[string]any{"run_id": "r", "cited_rows": 51}},
		{"list_connections", map[string]any{"extra": true}},
	}
	for _, c := range cases {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			t.Fatalf("%s(%v): protocol error %v", c.tool, c.args, err)
		}
		e := structuredError(t, res)
		if e.Code != CodeInvalidArguments || e.Reason == "" || e.Fix == "" {
			t.Errorf("%s(%v): %+v, want %s with a reason and a fix", c.tool, c.args, e, CodeInvalidArguments)
		}
	}
}

// TestAPanicIsAToolError: a tool that panics (here: no backend at all)
// answers an INTERNAL tool error and the server keeps serving.
func TestAPanicIsAToolError(t *testing.T) {
	cs := connect(t, nil)
	for range 2 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_connections", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		if e := structuredError(t, res); e.Code != CodeInternal {
			t.Fatalf("%+v", e)
		}
	}
}

// TestInputSchemasDescribeEveryArgument: every tool's schema is a closed
// object whose every property says what it is.
func TestInputSchemasDescribeEveryArgument(t *testing.T) {
	cs := connect(t, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 7 {
		t.Fatalf("%d tools", len(res.Tools))
	}
	for _, tl := range res.Tools {
		raw, _ := json.Marshal(tl.InputSchema)
		var s struct {
			Type                 string
			AdditionalProperties any `json:"additionalProperties"`
			Properties           map[string]struct{ Description string }
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatal(err)
		}
		if s.Type != "object" || s.AdditionalProperties != false {
			t.Errorf("%s: schema %s is not a closed object", tl.Name, raw)
		}
		for p, d := range s.Properties {
			if d.Description == "" {
				t.Errorf("%s.%s has no description", tl.Name, p)
			}
		}
		if tl.Annotations == nil || tl.Annotations.Title == "" {
			t.Errorf("%s has no annotations", tl.Name)
		}
	}
}

// TestErrorClassification: the gateway's answers keep their code, reason,
// fix and status; an unreachable gateway says so.
func TestErrorClassification(t *testing.T) {
	ae := &client.APIError{Status: http.StatusUnprocessableEntity, Code: "not_a_select", Message: "DELETE writes", Fix: "send a SELECT"}
	if e := asError(fmt.Errorf("run_query: %w", ae)); *e != (Error{Code: "not_a_select", Reason: "DELETE writes", Fix: "send a SELECT", Status: 422}) {
		t.Fatalf("%+v", e)
	}
	_, err := client.New("http://127.0.0.1:1", "").Connections(context.Background())
	if e := asError(err); e.Code != CodeGatewayUnreachable || e.Fix == "" {
		t.Fatalf("unreachable gateway: %+v (%v)", e, err)
	}
	if !strings.Contains(asError(err).Error(), "fix:") {
		t.Fatal("the text of an error does not carry its fix")
	}
}
