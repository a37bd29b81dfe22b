package modelturn

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/modeltest"
	"github.com/sondehq/sonde/services/modelturn/internal/failure"
	"github.com/sondehq/sonde/services/modelturn/internal/wire"
)

// ProbeTool is the tool the capability probe declares and asks the model to
// call.
const ProbeTool = "sonde_probe"

// ProbeArguments are the arguments the probe asks for; they satisfy
// probeSchema.
const ProbeArguments = `{"word":"sonde","count":3}`

// probeSchema is the declared argument schema the call must honour.
const probeSchema = `{"type":"object","properties":{"word":{"type":"string","enum":["sonde"]},` +
	`"count":{"type":"integer","minimum":1,"maximum":9}},"required":["word","count"],"additionalProperties":false}`

var allCapabilities = []string{contracts.CapabilityToolCalling, contracts.CapabilityStructuredOutput, contracts.CapabilityStreaming}

// probeRequest is the one turn the probe puts to the model.
func probeRequest() contracts.ModelTurnRequest {
	return contracts.ModelTurnRequest{
		RunID: "probe",
		Messages: []contracts.Message{
			{Role: contracts.RoleSystem, Content: "You are being checked for tool use. Answer only by calling the tool " + ProbeTool + " once; write no text."},
			{Role: contracts.RoleUser, Content: "Call " + ProbeTool + " with the arguments " + ProbeArguments + "."},
		},
		Tools: []contracts.ToolSpec{{
			Name: ProbeTool, Description: "Confirms that the model can call a tool with arguments that match a declared schema.",
			Parameters: json.RawMessage(probeSchema),
		}},
	}
}

// probeCache keeps positive verdicts per model identity for the life of the
// process. Refusals are not kept: an operator can fix a server without
// changing the model's name, so they are probed again.
type probeCache struct {
	mu sync.Mutex
	ok map[string]contracts.ModelProbeReply
}

func (c *probeCache) get(id string) (contracts.ModelProbeReply, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.ok[id]
	return r, ok
}

func (c *probeCache) put(id string, r contracts.ModelProbeReply) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ok == nil {
		c.ok = map[string]contracts.ModelProbeReply{}
	}
	c.ok[id] = r
}

// identity names the model the probe talks to: a configuration change
// misses the cache by construction.
func (s *Service) identity() string {
	return strings.Join([]string{s.provider, s.apiURL, s.model}, "\x00")
}

// Probe answers what the configured model is and which settings it gets,
// or the failure when there is none. With req.Capabilities it also
// establishes on the wire, with one model call, whether the model calls
// tools, honours the declared argument schema and streams: what it watched
// succeed is Verified, what it could not establish Missing, and what it
// watched fail Disproved. A failure that says nothing about the model (a bad
// key, a quota, an unreachable server, a 5xx, a stream cut short) reaches
// no verdict: the reply carries the failure and no Missing. A positive
// verdict is cached for the life of the process; any other is not.
func (s *Service) Probe(ctx context.Context, req contracts.ModelProbeRequest) contracts.ModelProbeReply {
	reply := contracts.ModelProbeReply{Provider: s.provider, Model: s.model, Demo: s.demo}
	if s.client == nil {
		reply.Failure = &contracts.ModelFailure{Reason: contracts.ReasonModelUnavailable, Message: unconfiguredMessage}
		return reply
	}
	tuning := s.tuning
	reply.Tuning = &tuning
	if !req.Capabilities {
		return reply
	}
	if cached, ok := s.probes.get(s.identity()); ok {
		cached.Tuning = &tuning
		return cached
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ctx, w := wire.Ensure(ctx)
	out, err := s.client.Turn(ctx, probeRequest(), nil)
	s.judge(&reply, out, err, w)
	if len(reply.Verified) == len(allCapabilities) {
		s.probes.put(s.identity(), reply)
	}
	s.log.Info("model probe", "provider", s.provider, "model", s.model,
		"verified", reply.Verified, "missing", reply.Missing, "disproved", reply.Disproved, "failed", reply.Failure != nil)
	return reply
}

// judge fills reply's verdict from what the probe's call did.
func (s *Service) judge(reply *contracts.ModelProbeReply, out contracts.ModelTurnReply, err error, w *wire.Watch) {
	name := fmt.Sprintf("the %s model %q", s.provider, s.model)
	if err != nil {
		f := failure.As(err)
		if !f.Refused {
			reply.Failure = f.Model()
			reply.Message = "The probe reached no verdict on " + name + ": " + f.Message + "."
			return
		}
		// The endpoint refused a request that declares a tool: tool calling
		// was watched failing; streaming never began, so it is unobserved.
		reply.Missing = slices.Clone(allCapabilities)
		reply.Disproved = []string{contracts.CapabilityToolCalling}
		reply.Message = fmt.Sprintf("%s refused a request that declares a tool (%s); it cannot drive an agent run.",
			capitalize(name), f.Message)
		return
	}
	verified := map[string]bool{}
	var disproved []string
	var call *contracts.ModelToolCall
	for i := range out.ToolCalls {
		if out.ToolCalls[i].Name == ProbeTool {
			call = &out.ToolCalls[i]
			break
		}
	}
	if call != nil {
		verified[contracts.CapabilityToolCalling] = true
		if err := validateProbeArguments(call.Arguments); err != nil {
			disproved = append(disproved, contracts.CapabilityStructuredOutput)
		} else {
			verified[contracts.CapabilityStructuredOutput] = true
		}
	} else {
		disproved = append(disproved, contracts.CapabilityToolCalling)
	}
	if w.Buffered() != nil {
		disproved = append(disproved, contracts.CapabilityStreaming)
	} else if w.Streamed() {
		verified[contracts.CapabilityStreaming] = true
	}
	for _, c := range allCapabilities {
		if verified[c] {
			reply.Verified = append(reply.Verified, c)
		} else {
			reply.Missing = append(reply.Missing, c)
		}
	}
	reply.Disproved = disproved
	if len(reply.Missing) == 0 {
		reply.Message = capitalize(name) + " called a tool with arguments that honour its declared schema, and streamed."
		return
	}
	reply.Message = fmt.Sprintf("%s could not be established to do what an agent run needs: %s not established (%s watched failing).",
		capitalize(name), strings.Join(reply.Missing, ", "), orNone(reply.Disproved))
}

// validateProbeArguments checks the call's arguments against probeSchema.
func validateProbeArguments(args string) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(args), &m); err != nil {
		return fmt.Errorf("arguments are not a JSON object: %w", err)
	}
	if len(m) != 2 {
		return fmt.Errorf("arguments have %d members, the schema allows exactly word and count", len(m))
	}
	var word string
	if raw, ok := m["word"]; !ok || json.Unmarshal(raw, &word) != nil || word != "sonde" {
		return errors.New(`word is not the string "sonde"`)
	}
	raw, ok := m["count"]
	if !ok {
		return errors.New("count is missing")
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		return errors.New("count is not a number")
	}
	i, err := n.Int64()
	if err != nil || i < 1 || i > 9 {
		return errors.New("count is not an integer from 1 to 9")
	}
	return nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func orNone(xs []string) string {
	if len(xs) == 0 {
		return "none"
	}
	return strings.Join(xs, ", ")
}

// ProbeAware wraps a replay script so that it answers the capability probe
// the way a capable model would and leaves every other request to script.
// The demo provider uses it, and so can end-to-end tests whose scripted
// model must pass the start path's capability gate.
func ProbeAware(script modeltest.Script) modeltest.Script { return demoScript{script} }

// demoScript answers the capability probe the way a capable model would and
// leaves every other request to the next script.
type demoScript struct{ next modeltest.Script }

func (d demoScript) Reply(req modeltest.ChatRequest) (modeltest.Reply, error) {
	if req.HasTool(ProbeTool) {
		return modeltest.Reply{ToolCalls: []modeltest.ToolCall{{Name: ProbeTool, Arguments: ProbeArguments}},
			Usage: modeltest.Usage{PromptTokens: 120, CompletionTokens: 12}}, nil
	}
	return d.next.Reply(req)
}
