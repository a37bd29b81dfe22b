package geminichat

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"google.golang.org/genai"
)

// params maps a turn request onto contents and a config. The system prompt
// travels as the systemInstruction and the tools as function declarations
// whose parametersJsonSchema is the tool's JSON Schema verbatim: the same
// bytes every turn, which is what Gemini's implicit prompt caching keys on;
// the cached part is reported as cachedContentTokenCount.
func params(req contracts.ModelTurnRequest) ([]*genai.Content, *genai.GenerateContentConfig, error) {
	config := &genai.GenerateContentConfig{}
	var system []string
	names := map[string]string{} // call id → tool name, for function responses
	var contents []*genai.Content
	push := func(role string, parts ...*genai.Part) {
		if n := len(contents); n > 0 && contents[n-1].Role == role {
			contents[n-1].Parts = append(contents[n-1].Parts, parts...)
			return
		}
		contents = append(contents, &genai.Content{Role: role, Parts: parts})
	}
	for i, m := range req.Messages {
		switch m.Role {
		case contracts.RoleSystem:
			system = append(system, m.Content)
		case contracts.RoleUser:
			push(genai.RoleUser, &genai.Part{Text: m.Content})
		case contracts.RoleAssistant:
			var parts []*genai.Part
			if m.Content != "" {
				parts = append(parts, &genai.Part{Text: m.Content})
			}
			for _, tc := range m.ToolCalls {
				var args map[string]any
				if json.Unmarshal([]byte(tc.Arguments), &args) != nil {
					args = map[string]any{}
				}
				names[tc.ID] = tc.Name
				part := &genai.Part{FunctionCall: &genai.FunctionCall{ID: tc.ID, Name: tc.Name, Args: args}}
				if tc.Signature != "" {
					// The signature Gemini issued on this call, back on its part.
					sig, err := base64.StdEncoding.DecodeString(tc.Signature)
					if err != nil {
						return nil, nil, fmt.Errorf("message %d: call %s: the signature is not base64: %w", i, tc.ID, err)
					}
					part.ThoughtSignature = sig
				}
				parts = append(parts, part)
			}
			if len(parts) == 0 {
				parts = append(parts, &genai.Part{Text: " "})
			}
			push(genai.RoleModel, parts...)
		case contracts.RoleTool:
			if m.ToolCallID == "" {
				return nil, nil, fmt.Errorf("message %d: a tool message names no call", i)
			}
			name, ok := names[m.ToolCallID]
			if !ok {
				return nil, nil, fmt.Errorf("message %d: a tool message answers no call of this transcript", i)
			}
			push(genai.RoleUser, &genai.Part{FunctionResponse: &genai.FunctionResponse{
				ID: m.ToolCallID, Name: name, Response: map[string]any{"output": m.Content},
			}})
		default:
			return nil, nil, fmt.Errorf("message %d: unknown role %q", i, m.Role)
		}
	}
	if len(contents) == 0 {
		return nil, nil, fmt.Errorf("the transcript has no user message")
	}
	if len(system) > 0 {
		config.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: strings.Join(system, "\n\n")}}}
	}
	if len(req.Tools) > 0 {
		tool := &genai.Tool{}
		for _, t := range req.Tools {
			var schema any = map[string]any{"type": "object", "properties": map[string]any{}}
			if len(t.Parameters) > 0 {
				var m map[string]any
				if err := json.Unmarshal(t.Parameters, &m); err != nil {
					return nil, nil, fmt.Errorf("tool %s: parameters are not a JSON object: %w", t.Name, err)
				}
				schema = m
			}
			tool.FunctionDeclarations = append(tool.FunctionDeclarations, &genai.FunctionDeclaration{
				Name: t.Name, Description: t.Description, ParametersJsonSchema: schema,
			})
		}
		config.Tools = []*genai.Tool{tool}
	}
	return contents, config, nil
}
