package modeltest

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"time"
	"unicode/utf8"
)

// The JSON shapes OpenAI sends, field for field.

type chunkJSON struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"`
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chunkChoiceJSON `json:"choices"`
	// Usage is null on every chunk but the usage chunk when the request asked
	// for usage, and absent otherwise.
	Usage json.RawMessage `json:"usage,omitempty"`
}

type chunkChoiceJSON struct {
	Index        int       `json:"index"`
	Delta        deltaJSON `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

type deltaJSON struct {
	Role      string              `json:"role,omitempty"`
	Content   *string             `json:"content,omitempty"`
	ToolCalls []deltaToolCallJSON `json:"tool_calls,omitempty"`
}

type deltaToolCallJSON struct {
	Index    int               `json:"index"`
	ID       string            `json:"id,omitempty"`
	Type     string            `json:"type,omitempty"`
	Function deltaFunctionJSON `json:"function"`
}

type deltaFunctionJSON struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type usageJSON struct {
	PromptTokens        int64 `json:"prompt_tokens"`
	CompletionTokens    int64 `json:"completion_tokens"`
	TotalTokens         int64 `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int64 `json:"cached_tokens"`
		AudioTokens  int64 `json:"audio_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens          int64 `json:"reasoning_tokens"`
		AudioTokens              int64 `json:"audio_tokens"`
		AcceptedPredictionTokens int64 `json:"accepted_prediction_tokens"`
		RejectedPredictionTokens int64 `json:"rejected_prediction_tokens"`
	} `json:"completion_tokens_details"`
}

type completionJSON struct {
	ID      string                 `json:"id"`
	Object  string                 `json:"object"`
	Created int64                  `json:"created"`
	Model   string                 `json:"model"`
	Choices []completionChoiceJSON `json:"choices"`
	Usage   usageJSON              `json:"usage"`
}

type completionChoiceJSON struct {
	Index        int         `json:"index"`
	Message      messageJSON `json:"message"`
	Logprobs     *struct{}   `json:"logprobs"`
	FinishReason string      `json:"finish_reason"`
}

type messageJSON struct {
	Role      string         `json:"role"`
	Content   *string        `json:"content"`
	Refusal   *string        `json:"refusal"`
	ToolCalls []ChatToolCall `json:"tool_calls,omitempty"`
}

// completion is one reply on its way to the wire.
type completion struct {
	id      string
	created int64
	model   string
	reply   Reply
}

func (c completion) finishReason() string {
	switch {
	case c.reply.FinishReason != "":
		return c.reply.FinishReason
	case len(c.reply.ToolCalls) > 0:
		return "tool_calls"
	default:
		return "stop"
	}
}

func (c completion) usage() usageJSON {
	var u usageJSON
	u.PromptTokens = c.reply.Usage.PromptTokens
	u.CompletionTokens = c.reply.Usage.CompletionTokens
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	u.PromptTokensDetails.CachedTokens = c.reply.Usage.CachedTokens
	return u
}

// body is the non-streaming chat.completion object.
func (c completion) body() completionJSON {
	msg := messageJSON{Role: "assistant"}
	if c.reply.Text != "" || len(c.reply.ToolCalls) == 0 {
		text := c.reply.Text
		msg.Content = &text
	}
	for _, tc := range c.reply.ToolCalls {
		msg.ToolCalls = append(msg.ToolCalls, ChatToolCall{
			ID: tc.ID, Type: "function", Function: FunctionCall{Name: tc.Name, Arguments: tc.Arguments},
		})
	}
	return completionJSON{
		ID: c.id, Object: "chat.completion", Created: c.created, Model: c.model,
		Choices: []completionChoiceJSON{{Index: 0, Message: msg, FinishReason: c.finishReason()}},
		Usage:   c.usage(),
	}
}

// chunks returns the streamed chunks of the reply, in order: text deltas
// (the first carrying the role), each tool call opened with its id and name
// and then its arguments in fragments, the finish chunk and, when asked for,
// the usage chunk.
func (c completion) chunks(includeUsage bool) []chunkJSON {
	var out []chunkJSON
	emit := func(d deltaJSON, finish *string) {
		if len(out) == 0 {
			d.Role = "assistant"
		}
		ch := chunkJSON{
			ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: []chunkChoiceJSON{{Index: 0, Delta: d, FinishReason: finish}},
		}
		if includeUsage {
			ch.Usage = json.RawMessage("null")
		}
		out = append(out, ch)
	}
	for _, piece := range splitText(c.reply.Text) {
		emit(deltaJSON{Content: &piece}, nil)
	}
	if c.reply.Text == "" && len(c.reply.ToolCalls) == 0 {
		empty := ""
		emit(deltaJSON{Content: &empty}, nil)
	}
	for i, tc := range c.reply.ToolCalls {
		emit(deltaJSON{ToolCalls: []deltaToolCallJSON{{
			Index: i, ID: tc.ID, Type: "function", Function: deltaFunctionJSON{Name: tc.Name},
		}}}, nil)
		for _, frag := range splitRunes(tc.Arguments, 12) {
			emit(deltaJSON{ToolCalls: []deltaToolCallJSON{{
				Index: i, Function: deltaFunctionJSON{Arguments: frag},
			}}}, nil)
		}
	}
	if c.reply.TruncateStream || c.reply.StreamError {
		return out
	}
	finish := c.finishReason()
	emit(deltaJSON{}, &finish)
	if includeUsage {
		u, _ := json.Marshal(c.usage())
		out = append(out, chunkJSON{
			ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model,
			Choices: []chunkChoiceJSON{}, Usage: u,
		})
	}
	return out
}

// stream writes the reply as server-sent events, flushing each chunk.
func (c completion) stream(ctx context.Context, w http.ResponseWriter, includeUsage bool, delay time.Duration) {
	out := newSSE(ctx, w, "text/event-stream; charset=utf-8", delay)
	write := func(data []byte, pause bool) bool {
		return out.raw(bytes.Join([][]byte{[]byte("data: "), data, []byte("\n\n")}, nil), pause)
	}
	for _, ch := range c.chunks(includeUsage) {
		b, err := json.Marshal(ch)
		if err != nil || !write(b, len(ch.Choices) > 0 && ch.Choices[0].Delta.Content != nil) {
			return
		}
	}
	switch {
	case c.reply.StreamError:
		b, _ := json.Marshal(errorBody(c.reply.ErrorType, c.reply.ErrorCode, c.reply.ErrorMessage))
		write(b, false)
	case !c.reply.TruncateStream:
		write([]byte("[DONE]"), false)
	}
}

// splitText cuts text into word-aligned pieces of a dozen bytes or so, the
// way a model's tokens arrive.
func splitText(s string) []string {
	var out []string
	start := 0
	for i, r := range s {
		if r == ' ' && i+1-start >= 12 {
			out = append(out, s[start:i+1])
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}

// splitRunes cuts s into fragments of at most n runes, never inside a rune.
func splitRunes(s string, n int) []string {
	var out []string
	for s != "" {
		cut, count := 0, 0
		for cut < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[cut:])
			cut += size
			count++
		}
		out = append(out, s[:cut])
		s = s[cut:]
	}
	return out
}
