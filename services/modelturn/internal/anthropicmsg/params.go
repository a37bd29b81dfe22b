package anthropicmsg

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/sondehq/sonde/contracts"
)

// params maps a turn request onto a Messages request. The system prompt and
// the tool declarations — the stable prefix of every turn of a run, sent
// byte-identical each time — end in one cache breakpoint (cache_control
// ephemeral), so the provider caches them and reports the cached tokens.
func (c *Client) params(req contracts.ModelTurnRequest) (anthropic.MessageNewParams, error) {
	// No temperature: the API version this SDK speaks (2026-10-21) has no
	// sampling parameters, so the model samples as Anthropic sets it.
	p := anthropic.MessageNewParams{Model: anthropic.Model(c.model), MaxTokens: c.maxTokens}
	var system []string
	var rest []contracts.Message
	for _, m := range req.Messages {
		if m.Role == contracts.RoleSystem {
			system = append(system, m.Content)
			continue
		}
		rest = append(rest, m)
	}
	if len(system) > 0 {
		p.System = []anthropic.TextBlockParam{{Text: strings.Join(system, "\n\n")}}
	}
	tools, err := tools(req.Tools)
	if err != nil {
		return p, err
	}
	p.Tools = tools
	switch {
	case len(p.System) > 0:
		p.System[len(p.System)-1].CacheControl = anthropic.NewCacheControlEphemeralParam()
	case len(p.Tools) > 0:
		p.Tools[len(p.Tools)-1].OfTool.CacheControl = anthropic.NewCacheControlEphemeralParam()
	}
	msgs, err := messages(rest)
	if err != nil {
		return p, err
	}
	p.Messages = msgs
	return p, nil
}

// messages maps the transcript. Anthropic takes tool results as blocks of a
// user message, so tool messages (and any user text after them) are merged
// into the user message that follows the assistant's calls.
func messages(in []contracts.Message) ([]anthropic.MessageParam, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("the transcript has no user message")
	}
	var out []anthropic.MessageParam
	push := func(user bool, blocks ...anthropic.ContentBlockParamUnion) {
		if n := len(out); n > 0 {
			switch last := out[n-1]; {
			case user && last.OfUser != nil:
				last.OfUser.Content = append(last.OfUser.Content, blocks...)
				return
			case !user && last.OfAssistant != nil:
				last.OfAssistant.Content = append(last.OfAssistant.Content, blocks...)
				return
			}
		}
		if user {
			out = append(out, anthropic.NewUserMessage(blocks...))
		} else {
			out = append(out, anthropic.NewAssistantMessage(blocks...))
		}
	}
	for i, m := range in {
		switch m.Role {
		case contracts.RoleUser:
			push(true, anthropic.NewTextBlock(nonEmpty(m.Content)))
		case contracts.RoleAssistant:
			var blocks []anthropic.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, anthropic.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, anthropic.NewToolUseBlock(tc.ID, input(tc.Arguments), tc.Name))
			}
			if len(blocks) == 0 {
				blocks = append(blocks, anthropic.NewTextBlock(nonEmpty("")))
			}
			push(false, blocks...)
		case contracts.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool message names no call", i)
			}
			push(true, anthropic.NewToolResultBlock(m.ToolCallID, nonEmpty(m.Content), false))
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// nonEmpty stands in for empty text, which the Messages API refuses.
func nonEmpty(s string) string {
	if s == "" {
		return "(empty)"
	}
	return s
}

// input is a call's arguments as the object the API takes; arguments that
// are not a JSON object are sent as an empty one.
func input(args string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(args), &obj) != nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(args)
}

// tools declares each tool with its JSON Schema as input_schema.
func tools(in []contracts.ToolSpec) ([]anthropic.ToolUnionParam, error) {
	out := make([]anthropic.ToolUnionParam, 0, len(in))
	for _, t := range in {
		schema := anthropic.ToolInputSchemaParam{}
		if len(t.Parameters) > 0 {
			var m map[string]any
			if err := json.Unmarshal(t.Parameters, &m); err != nil {
				return nil, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Name, err)
			}
			schema.Properties = m["properties"]
			if req, ok := m["required"].([]any); ok {
				for _, r := range req {
					if s, ok := r.(string); ok {
						schema.Required = append(schema.Required, s)
					}
				}
			}
			delete(m, "properties")
			delete(m, "required")
			delete(m, "type")
			if len(m) > 0 {
				schema.ExtraFields = m
			}
		}
		tp := anthropic.ToolParam{Name: t.Name, InputSchema: schema}
		if t.Description != "" {
			tp.Description = anthropic.String(t.Description)
		}
		out = append(out, anthropic.ToolUnionParam{OfTool: &tp})
	}
	return out, nil
}
