package modelturn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/demoscript"
	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/natstest"
	"github.com/sondehq/sonde/services/modelturn"
)

// Rows the demo shop database returns for the demo's readings.
var demoRows = map[string]string{
	demoscript.MonthlyOrdersSQL: "month | orders | paid_revenue_eur\n" +
		"2025-01 | 126 | 22579.48\n2025-02 | 128 | 25275.22\n2025-03 | 46 | 8605.45\n2025-04 | 134 | 27304.86",
	demoscript.MonthlySignupsSQL: "month | new_customers\n2025-01 | 25\n2025-02 | 25\n2025-03 | 9\n2025-04 | 26",
}

var investigationTools = []contracts.ToolSpec{
	{Name: "inspect_schema", Description: "Columns of a table.", Parameters: json.RawMessage(`{"type":"object","properties":{"schema":{"type":"string"},"table":{"type":"string"}},"additionalProperties":false}`)},
	{Name: "run_read_query", Description: "Run one read-only statement.", Parameters: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"},"reason":{"type":"string"}},"required":["sql"],"additionalProperties":false}`)},
	{Name: "inspect_plan", Description: "Estimated plan.", Parameters: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"]}`)},
	{Name: "compose_report", Description: "Finish with claims citing evidence.", Parameters: json.RawMessage(`{"type":"object","properties":{"claims":{"type":"array"}},"required":["claims"]}`)},
}

func TestDemoProviderDrivesARecordedInvestigationThroughTheSDK(t *testing.T) {
	ns := natstest.Start(t)
	s := newService(t, modelturn.Config{Provider: modelturn.ProviderDemo, NATS: ns.Connect()})
	if p, m, demo, ok := s.Configured(); p != "demo" || m != "sonde-demo-replay" || !demo || !ok {
		t.Fatalf("configured %s %s %t %t", p, m, demo, ok)
	}
	ctx := context.Background()
	req := contracts.ModelTurnRequest{RunID: "demo-run", TimeoutMs: 30_000, Tools: investigationTools, Messages: []contracts.Message{
		{Role: contracts.RoleSystem, Content: "You investigate the connected database read-only. " + fence.Instructions},
		{Role: contracts.RoleUser, Content: "Why did orders dip this spring?"},
	}}

	var produced []string // correlation ids of the readings, in order
	var claims []contracts.Claim
	var tools []string
	for turn := 1; turn <= 6; turn++ {
		req.Turn = turn
		reply := s.Turn(ctx, req)
		if reply.Failure != nil {
			t.Fatalf("turn %d: %+v", turn, reply.Failure)
		}
		if !reply.Demo || reply.Provider != "demo" || reply.Model != "sonde-demo-replay" {
			t.Fatalf("turn %d is not marked as the demo: %+v", turn, reply)
		}
		if !strings.Contains(reply.Text, "Demonstration replay") {
			t.Fatalf("turn %d text %q", turn, reply.Text)
		}
		if reply.Usage.InputTokens <= 0 || reply.Usage.OutputTokens <= 0 {
			t.Fatalf("turn %d usage %+v", turn, reply.Usage)
		}
		req.Messages = append(req.Messages, contracts.Message{Role: contracts.RoleAssistant, Content: reply.Text, ToolCalls: reply.ToolCalls})
		if len(reply.ToolCalls) == 0 {
			if reply.FinishReason != "stop" {
				t.Fatalf("closing finish reason %q", reply.FinishReason)
			}
			break
		}
		if reply.FinishReason != "tool_calls" {
			t.Fatalf("turn %d finish reason %q", turn, reply.FinishReason)
		}
		for _, call := range reply.ToolCalls {
			tools = append(tools, call.Name)
			var content string
			switch call.Name {
			case "inspect_schema":
				content = fence.Wrap("schema of orders", "column | type\nordered_at | TEXT\nstatus | TEXT\ntotal_cents | INTEGER")
			case "run_read_query":
				var a struct{ SQL, Reason string }
				if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
					t.Fatal(err)
				}
				rows, ok := demoRows[a.SQL]
				if !ok {
					t.Fatalf("unexpected statement %q", a.SQL)
				}
				id := fmt.Sprintf("c_%08x", 0xbeef00+len(produced))
				produced = append(produced, id)
				content = fmt.Sprintf("Result stored as {\"source\":\"artifact\",\"correlationId\":%q} — 4 rows. Cite it exactly in that shape.\n", id) +
					fence.Wrap("rows of run_read_query", rows)
			case "compose_report":
				var a struct{ Claims []contracts.Claim }
				if err := json.Unmarshal([]byte(call.Arguments), &a); err != nil {
					t.Fatal(err)
				}
				claims = a.Claims
				content = "Report composed."
			}
			req.Messages = append(req.Messages, contracts.Message{Role: contracts.RoleTool, ToolCallID: call.ID, Content: content})
		}
	}
	if want := []string{"inspect_schema", "run_read_query", "run_read_query", "compose_report"}; !reflect.DeepEqual(tools, want) {
		t.Fatalf("tools %v, want %v", tools, want)
	}
	cited := map[string]bool{}
	for _, c := range claims {
		for _, e := range c.Evidence {
			if e.Source != contracts.EvidenceArtifact {
				t.Fatalf("evidence %+v", e)
			}
			cited[e.CorrelationID] = true
		}
	}
	if len(cited) != len(produced) {
		t.Fatalf("report cites %v, the run produced %v", cited, produced)
	}
	for _, id := range produced {
		if !cited[id] {
			t.Fatalf("report cites %v, the run produced %v", cited, produced)
		}
	}
	if !strings.Contains(claims[0].Text, "Orders fell to 46 in 2025-03") {
		t.Fatalf("first claim %q", claims[0].Text)
	}

	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	var probe contracts.ModelProbeReply
	request(t, ns.Connect(), contracts.SubjectModelProbe, contracts.ModelProbeRequest{}, &probe)
	if !probe.Demo || probe.Provider != "demo" || probe.Model != "sonde-demo-replay" || probe.Failure != nil {
		t.Fatalf("probe %+v", probe)
	}
}
