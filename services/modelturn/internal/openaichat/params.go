package openaichat

import (
	"encoding/json"
	"fmt"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"
	"github.com/sondehq/sonde/contracts"
)

// params maps a turn request onto a streamed chat-completions request that
// asks for usage in the stream.
func (c *Client) params(req contracts.ModelTurnRequest) (openai.ChatCompletionNewParams, error) {
	msgs, err := messages(req.Messages)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	tools, err := tools(req.Tools)
	if err != nil {
		return openai.ChatCompletionNewParams{}, err
	}
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(c.model),
		Messages:      msgs,
		Tools:         tools,
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	if c.temperature != nil {
		p.Temperature = openai.Float(*c.temperature)
	}
	return p, nil
}

// messages maps the transcript, role by role.
func messages(in []contracts.Message) ([]openai.ChatCompletionMessageParamUnion, error) {
	if len(in) == 0 {
		return nil, fmt.Errorf("the transcript is empty")
	}
	out := make([]openai.ChatCompletionMessageParamUnion, 0, len(in))
	for i, m := range in {
		switch m.Role {
		case contracts.RoleSystem:
			out = append(out, openai.SystemMessage(m.Content))
		case contracts.RoleUser:
			out = append(out, openai.UserMessage(m.Content))
		case contracts.RoleAssistant:
			a := openai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" {
				a.Content.OfString = openai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
						ID: tc.ID,
						Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
							Name:      tc.Name,
							Arguments: tc.Arguments,
						},
					},
				})
			}
			out = append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case contracts.RoleTool:
			if m.ToolCallID == "" {
				return nil, fmt.Errorf("message %d: a tool message names no call", i)
			}
			out = append(out, openai.ToolMessage(m.Content, m.ToolCallID))
		default:
			return nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	return out, nil
}

// tools declares each tool as a function whose parameters are its JSON Schema.
func tools(in []contracts.ToolSpec) ([]openai.ChatCompletionToolUnionParam, error) {
	if len(in) == 0 {
		return nil, nil // an empty "tools" array is refused by OpenAI
	}
	out := make([]openai.ChatCompletionToolUnionParam, 0, len(in))
	for _, t := range in {
		params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
		if len(t.Parameters) > 0 {
			params = shared.FunctionParameters{}
			if err := json.Unmarshal(t.Parameters, &params); err != nil {
				return nil, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Name, err)
			}
		}
		def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: params}
		if t.Description != "" {
			def.Description = openai.String(t.Description)
		}
		out = append(out, openai.ChatCompletionFunctionTool(def))
	}
	return out, nil
}
