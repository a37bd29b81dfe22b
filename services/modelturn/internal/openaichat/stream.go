package openaichat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"sync"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/modelturn/internal/wire"
)

// maxJSONBody bounds a non-streamed body read in place of a stream.
const maxJSONBody = 16 << 20

// accumulator folds the chunks of choice 0 into one reply.
type accumulator struct {
	text, refusal []byte
	calls         map[int64]*contracts.ModelToolCall
	finishReason  string
	usage         contracts.Usage
}

// add folds one chunk in and returns the text it added.
func (a *accumulator) add(ch openai.ChatCompletionChunk) string {
	if ch.JSON.Usage.Valid() {
		a.usage = contracts.Usage{
			InputTokens:  ch.Usage.PromptTokens,
			OutputTokens: ch.Usage.CompletionTokens,
			CachedTokens: ch.Usage.PromptTokensDetails.CachedTokens,
		}
	}
	var added string
	for _, choice := range ch.Choices {
		if choice.Index != 0 {
			continue
		}
		d := choice.Delta
		if d.Content != "" {
			a.text = append(a.text, d.Content...)
			added += d.Content
		}
		a.refusal = append(a.refusal, d.Refusal...)
		for _, tc := range d.ToolCalls {
			idx := tc.Index
			if idx < 0 { // some servers send -1 for a lone call
				idx = 0
			}
			if a.calls == nil {
				a.calls = map[int64]*contracts.ModelToolCall{}
			}
			call := a.calls[idx]
			if call == nil {
				call = &contracts.ModelToolCall{}
				a.calls[idx] = call
			}
			if tc.ID != "" {
				call.ID = tc.ID
			}
			call.Name += tc.Function.Name
			call.Arguments += tc.Function.Arguments
		}
		if choice.FinishReason != "" {
			a.finishReason = choice.FinishReason
		}
	}
	return added
}

// reply is the accumulated reply, tool calls in index order.
func (a *accumulator) reply() contracts.ModelTurnReply {
	r := contracts.ModelTurnReply{
		Text:         string(a.text),
		FinishReason: a.finishReason,
		Usage:        a.usage,
	}
	if r.Text == "" {
		r.Text = string(a.refusal)
	}
	idx := make([]int64, 0, len(a.calls))
	for i := range a.calls {
		idx = append(idx, i)
	}
	sort.Slice(idx, func(i, j int) bool { return idx[i] < idx[j] })
	for _, i := range idx {
		call := *a.calls[i]
		if call.ID == "" {
			call.ID = "call_" + strconv.FormatInt(i, 10)
		}
		r.ToolCalls = append(r.ToolCalls, call)
	}
	return r
}

// wireWatch sees the raw response of one streamed call, which the SDK does
// not report on: whether the [DONE] marker arrived, and whether the server
// sent one JSON body instead of a stream.
type wireWatch struct {
	mu   sync.Mutex
	done bool
	body []byte
}

func (w *wireWatch) middleware(req *http.Request, next option.MiddlewareNext) (*http.Response, error) {
	res, err := next(req)
	if err != nil || res.StatusCode != http.StatusOK || res.Body == nil {
		return res, err
	}
	media, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if media == "application/json" {
		body, err := io.ReadAll(io.LimitReader(res.Body, maxJSONBody))
		_ = res.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("read non-streamed body: %w", err)
		}
		if ww := wire.From(req.Context()); ww != nil && len(body) == 0 {
			body = ww.Buffered() // the transport kept it
		}
		w.mu.Lock()
		w.body = body
		w.mu.Unlock()
		res.Body = io.NopCloser(bytes.NewReader(nil))
		return res, nil
	}
	res.Body = &doneReader{rc: res.Body, w: w}
	return res, nil
}

func (w *wireWatch) sawDone() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.done
}

func (w *wireWatch) jsonBody() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body
}

// doneReader passes a stream through and notes a "data: [DONE]" line.
type doneReader struct {
	rc   io.ReadCloser
	w    *wireWatch
	line []byte // the start of the current line
	long bool   // the current line is longer than any marker line
}

var doneLines = [][]byte{[]byte("data: [DONE]"), []byte("data:[DONE]")}

func (d *doneReader) Read(p []byte) (int, error) {
	n, err := d.rc.Read(p)
	for _, b := range p[:n] {
		if b == '\n' || b == '\r' {
			if !d.long {
				line := bytes.TrimRight(d.line, " \t")
				for _, m := range doneLines {
					if bytes.Equal(line, m) {
						d.w.mu.Lock()
						d.w.done = true
						d.w.mu.Unlock()
					}
				}
			}
			d.line, d.long = d.line[:0], false
			continue
		}
		if len(d.line) < 32 {
			d.line = append(d.line, b)
		} else {
			d.long = true
		}
	}
	return n, err
}

func (d *doneReader) Close() error { return d.rc.Close() }

// fromCompletion reads a non-streamed chat.completion body.
func fromCompletion(body []byte) (contracts.ModelTurnReply, error) {
	var cc openai.ChatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		return contracts.ModelTurnReply{}, fmt.Errorf("decode chat.completion: %w", err)
	}
	if len(cc.Choices) == 0 {
		return contracts.ModelTurnReply{}, fmt.Errorf("chat.completion without choices")
	}
	ch := cc.Choices[0]
	r := contracts.ModelTurnReply{
		Text:         ch.Message.Content,
		FinishReason: ch.FinishReason,
		Usage: contracts.Usage{
			InputTokens:  cc.Usage.PromptTokens,
			OutputTokens: cc.Usage.CompletionTokens,
			CachedTokens: cc.Usage.PromptTokensDetails.CachedTokens,
		},
	}
	if r.Text == "" {
		r.Text = ch.Message.Refusal
	}
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = "call_" + strconv.Itoa(i)
		}
		r.ToolCalls = append(r.ToolCalls, contracts.ModelToolCall{ID: id, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	if r.FinishReason == "" {
		return contracts.ModelTurnReply{}, fmt.Errorf("chat.completion without a finish reason")
	}
	return r, nil
}
