package modeltest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

func start(t *testing.T, script Script) *OpenAIServer {
	t.Helper()
	s, err := NewOpenAI(script)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func post(t *testing.T, s *OpenAIServer, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer sk-test")
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	return res
}

// events reads the data lines of an SSE body.
func events(t *testing.T, r io.Reader) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			t.Fatalf("line %q is not a data line", line)
		}
		out = append(out, data)
	}
	return out
}

type chunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Role      string  `json:"role"`
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string  `json:"name"`
					Arguments *string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage json.RawMessage `json:"usage"`
}

const streamBody = `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

func TestStreamsTextToolCallsAndUsageInOpenAIShape(t *testing.T) {
	reply := Reply{
		Text: "Looking at the orders table and its monthly totals now.",
		ToolCalls: []ToolCall{
			{ID: "call_a", Name: "inspect_schema", Arguments: `{"table":"orders"}`},
			{Name: "run_read_query", Arguments: `{"sql":"SELECT count(*) FROM orders","reason":"größe"}`},
		},
		Usage: Usage{PromptTokens: 1200, CompletionTokens: 40, CachedTokens: 1024},
	}
	s := start(t, ScriptFunc(func(ChatRequest) (Reply, error) { return reply, nil }))
	res := post(t, s, streamBody)
	if res.StatusCode != 200 || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	data := events(t, res.Body)
	if data[len(data)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", data[len(data)-1])
	}
	var (
		text       strings.Builder
		textDeltas int
		args       = map[int]string{}
		ids        = map[int]string{}
		names      = map[int]string{}
		finish     string
		usage      json.RawMessage
	)
	for i, d := range data[:len(data)-1] {
		var c chunk
		if err := json.Unmarshal([]byte(d), &c); err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		if c.Object != "chat.completion.chunk" || c.Model != "gpt-test" || c.ID == "" || c.Created == 0 {
			t.Fatalf("chunk %d envelope: %s", i, d)
		}
		if !strings.Contains(d, `"usage":`) {
			t.Fatalf("chunk %d has no usage field although include_usage was set: %s", i, d)
		}
		if len(c.Choices) == 0 {
			usage = c.Usage
			if i != len(data)-2 {
				t.Fatalf("usage chunk is not the last before [DONE]")
			}
			continue
		}
		if string(c.Usage) != "null" {
			t.Fatalf("chunk %d usage %s, want null", i, c.Usage)
		}
		ch := c.Choices[0]
		if (i == 0) != (ch.Delta.Role == "assistant") {
			t.Fatalf("chunk %d role %q: only the first chunk carries the role", i, ch.Delta.Role)
		}
		if ch.Delta.Content != nil {
			text.WriteString(*ch.Delta.Content)
			textDeltas++
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.ID != "" {
				if tc.Type != "function" || tc.Function.Name == "" || ids[tc.Index] != "" {
					t.Fatalf("opening tool chunk: %s", d)
				}
				ids[tc.Index], names[tc.Index] = tc.ID, tc.Function.Name
			} else if tc.Type != "" || tc.Function.Name != "" {
				t.Fatalf("continuation chunk carries more than index and arguments: %s", d)
			}
			if tc.Function.Arguments == nil {
				t.Fatalf("tool chunk without arguments: %s", d)
			}
			args[tc.Index] += *tc.Function.Arguments
		}
		if ch.FinishReason != nil {
			finish = *ch.FinishReason
		}
	}
	if text.String() != reply.Text || textDeltas < 3 {
		t.Errorf("text %q in %d deltas", text.String(), textDeltas)
	}
	if finish != "tool_calls" {
		t.Errorf("finish reason %q", finish)
	}
	for i, tc := range reply.ToolCalls {
		if args[i] != tc.Arguments || names[i] != tc.Name {
			t.Errorf("tool call %d: %s %s", i, names[i], args[i])
		}
	}
	if ids[0] != "call_a" || ids[1] == "" {
		t.Errorf("ids %v", ids)
	}
	var u struct {
		PromptTokens        int64 `json:"prompt_tokens"`
		CompletionTokens    int64 `json:"completion_tokens"`
		TotalTokens         int64 `json:"total_tokens"`
		PromptTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	}
	if err := json.Unmarshal(usage, &u); err != nil || u.PromptTokens != 1200 || u.CompletionTokens != 40 ||
		u.TotalTokens != 1240 || u.PromptTokensDetails.CachedTokens != 1024 {
		t.Errorf("usage %s (%v)", usage, err)
	}
}

func TestStreamWithoutUsageOmitsTheUsageChunk(t *testing.T) {
	s := start(t, ScriptFunc(func(ChatRequest) (Reply, error) { return Reply{Text: "done"}, nil }))
	data := events(t, post(t, s, `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`).Body)
	for _, d := range data {
		if strings.Contains(d, `"usage"`) {
			t.Fatalf("usage sent although not asked for: %s", d)
		}
	}
	if !strings.Contains(data[len(data)-2], `"finish_reason":"stop"`) || data[len(data)-1] != "[DONE]" {
		t.Fatalf("stream ends %v", data[len(data)-2:])
	}
}

func TestTruncatedStreamDropsFinishUsageAndDone(t *testing.T) {
	s := start(t, ScriptFunc(func(ChatRequest) (Reply, error) {
		return Reply{Text: "this answer is cut short before it ends", TruncateStream: true}, nil
	}))
	data := events(t, post(t, s, streamBody).Body)
	for _, d := range data {
		if d == "[DONE]" || strings.Contains(d, `"finish_reason":"`) || strings.Contains(d, `"choices":[]`) {
			t.Fatalf("truncated stream carries %s", d)
		}
	}
	if len(data) == 0 {
		t.Fatal("no chunks at all")
	}
}

func TestNonStreamingBody(t *testing.T) {
	s := start(t, ScriptFunc(func(ChatRequest) (Reply, error) {
		return Reply{ToolCalls: []ToolCall{{ID: "c1", Name: "f", Arguments: `{}`}}, Usage: Usage{PromptTokens: 5, CompletionTokens: 2}}, nil
	}))
	res := post(t, s, `{"model":"m","messages":[{"role":"user","content":"x"}]}`)
	var body struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role      string         `json:"role"`
				Content   *string        `json:"content"`
				ToolCalls []ChatToolCall `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			TotalTokens int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	c := body.Choices[0]
	if body.Object != "chat.completion" || c.Message.Role != "assistant" || c.Message.Content != nil ||
		c.FinishReason != "tool_calls" || c.Message.ToolCalls[0].Function.Name != "f" || body.Usage.TotalTokens != 7 {
		t.Fatalf("body %+v", body)
	}
}

func TestErrorStatusWritesOpenAIErrorBody(t *testing.T) {
	s := start(t, ScriptFunc(func(ChatRequest) (Reply, error) {
		return Reply{Status: 429, ErrorCode: "insufficient_quota", ErrorMessage: "You exceeded your current quota"}, nil
	}))
	res := post(t, s, streamBody)
	var body struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 429 || body.Error.Code == nil || *body.Error.Code != "insufficient_quota" ||
		body.Error.Type != "requests" || body.Error.Message == "" {
		t.Fatalf("%d %+v", res.StatusCode, body)
	}
}

func TestUnknownPathAnswersNotFound(t *testing.T) {
	s := start(t, ScriptFunc(func(ChatRequest) (Reply, error) { return Reply{}, nil }))
	res, err := http.Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 404 || !bytes.Contains(b, []byte(`"error"`)) {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
}

func TestDecodesRequestsAndReadsToolResults(t *testing.T) {
	var got ChatRequest
	s := start(t, ScriptFunc(func(r ChatRequest) (Reply, error) { got = r; return Reply{Text: "ok"}, nil }))
	post(t, s, `{"model":"m","stream":true,"stream_options":{"include_usage":true},
	"tools":[{"type":"function","function":{"name":"run_read_query","parameters":{"type":"object"}}}],
	"messages":[
	 {"role":"system","content":[{"type":"text","text":"be "},{"type":"text","text":"brief"}]},
	 {"role":"user","content":"why?"},
	 {"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"inspect_schema","arguments":"{}"}}]},
	 {"role":"tool","tool_call_id":"c1","content":"schema"},
	 {"role":"assistant","content":"two","tool_calls":[
	   {"id":"c2","type":"function","function":{"name":"run_read_query","arguments":"{\"sql\":\"a\"}"}},
	   {"id":"c3","type":"function","function":{"name":"run_read_query","arguments":"{\"sql\":\"b\"}"}}]},
	 {"role":"tool","tool_call_id":"c2","content":"Result stored as {\"source\":\"artifact\",\"correlationId\":\"c_one\"} — 3 rows"},
	 {"role":"tool","tool_call_id":"c3","content":[{"type":"text","text":"{\"source\":\"artifact\", \"correlationId\": \"c_two\"} and again \"correlationId\":\"c_two\""}]}
	]}`).Body.Close()
	if got.Messages[0].Content != "be brief" || !got.HasTool("run_read_query") || got.HasTool("nope") ||
		!got.Stream || !got.StreamOptions.IncludeUsage || got.LastUserText() != "why?" {
		t.Fatalf("decoded %+v", got)
	}
	if got.AssistantTurns() != 2 || len(got.ToolMessages()) != 3 || len(got.ToolCalls()) != 3 {
		t.Fatalf("turns %d, tool messages %d", got.AssistantTurns(), len(got.ToolMessages()))
	}
	last := got.LastToolResults()
	if len(last) != 2 || last[0].CallID != "c2" || last[0].Tool != "run_read_query" {
		t.Fatalf("last results %+v", last)
	}
	var ids []string
	for _, r := range last {
		ids = append(ids, CitedIDs(r.Content)...)
	}
	if strings.Join(ids, ",") != "c_one,c_two" {
		t.Fatalf("cited ids %v", ids)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer sk-test" {
		t.Fatalf("recorded %d requests", len(reqs))
	}
}

func TestSplitters(t *testing.T) {
	if got := splitRunes("äöü€x", 2); strings.Join(got, "|") != "äö|ü€|x" {
		t.Errorf("splitRunes %q", got)
	}
	if got := strings.Join(splitText("one two three four five six seven"), ""); got != "one two three four five six seven" {
		t.Errorf("splitText loses text: %q", got)
	}
}

func TestStreamErrorEndsWithAnErrorEvent(t *testing.T) {
	s := start(t, ScriptFunc(func(ChatRequest) (Reply, error) {
		return Reply{Text: "partial answer before the failure", StreamError: true, ErrorCode: "server_error"}, nil
	}))
	data := events(t, post(t, s, streamBody).Body)
	last := data[len(data)-1]
	if !strings.HasPrefix(last, `{"error":`) || !strings.Contains(last, `"code":"server_error"`) {
		t.Fatalf("last event %s", last)
	}
	for _, d := range data {
		if d == "[DONE]" || strings.Contains(d, `"finish_reason":"`) {
			t.Fatalf("failed stream carries %s", d)
		}
	}
}
