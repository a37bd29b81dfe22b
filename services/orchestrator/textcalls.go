package orchestrator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// Tool calls written as text. A model served without its tool parser (vLLM
// with no --tool-call-parser, llama.cpp without --jinja) hands its calls
// over as content: Qwen's <tool_call>{"name":…,"arguments":…}</tool_call>,
// Llama's bare {"name":…,"parameters":…}, either inside a ```json fence.
// A reply with no tool calls whose text holds such a call naming one of the
// run's tools is read as that call; the ledger keeps the arguments as
// written and notes on the call's entry that it was read from the text. A
// call naming no tool of the run is prose. A call that was cut at the
// output limit, that the vendor reported malformed, or that plainly starts
// in the text and does not parse is refused with a fix (unreadCall): it is
// never called prose.

// Refusal codes of a call that could not be read.
const (
	refuseCallCut       = contracts.RefuseCallCutShort
	refuseMalformedCall = contracts.RefuseMalformedCall
)

// textCall is one call read from a reply's text.
type textCall struct {
	// name is the tool as written; tool the run's tool it names.
	name, tool string
	// args is the arguments' JSON text as written (unwrapped from a JSON
	// string when sent as one).
	args  string
	notes []string
}

// brokenCall is a call the text plainly starts and that does not parse.
type brokenCall struct {
	form string // how it was written: "a <tool_call> block", …
	name string // the tool it names, when that much is readable
	err  error  // what the JSON decoder found
}

var (
	toolCallTag = regexp.MustCompile(`(?is)<tool_call>(.*?)(?:</tool_call>|$)`)
	jsonFence   = regexp.MustCompile("(?s)```[A-Za-z_]*[ \t]*\n?(.*?)(?:```|$)")
	// callStart is where a bare call object or a list of them begins.
	callStart = regexp.MustCompile(`[\[{]\s*\{?\s*"(?:name|function|type)"\s*:`)
	// nameIn reads a tool name out of a call too broken to decode.
	nameIn = regexp.MustCompile(`"name"\s*:\s*"([^"]{1,80})"`)
)

// readTextCalls reads the tool calls a model wrote as text into the turn's
// calls, when it sent none of its own. Each call so read is given an id of
// the server's (text_<turn>_<n>) and its notes are kept for the call's
// entry (noteCall); the text outside the calls stays the turn's prose.
func (d *drive) readTextCalls(turn int, reply contracts.ModelTurnReply) contracts.ModelTurnReply {
	d.callNotes = nil
	if len(reply.ToolCalls) > 0 {
		return reply
	}
	calls, rest, _ := readCalls(reply.Text, d.header.Tools)
	if len(calls) == 0 {
		return reply
	}
	d.callNotes = map[string][]string{}
	for i, c := range calls {
		id := fmt.Sprintf("text_%d_%d", turn, i+1)
		reply.ToolCalls = append(reply.ToolCalls, contracts.ModelToolCall{ID: id, Name: c.tool, Arguments: c.args})
		d.callNotes[id] = c.notes
	}
	reply.Text = rest
	return reply
}

// readCalls reads the calls text holds that name one of tools, and returns
// them, the text without them, and the first call the text plainly starts
// that does not parse (nil when there is none).
func readCalls(text string, tools []string) ([]textCall, string, *brokenCall) {
	var (
		calls  []textCall
		broken *brokenCall
		taken  [][2]int // spans of text read as calls
	)
	overlaps := func(a, b int) bool {
		for _, s := range taken {
			if a < s[1] && b > s[0] {
				return true
			}
		}
		return false
	}
	breaks := func(form, body string, err error) {
		if broken == nil {
			b := &brokenCall{form: form, err: err}
			if m := nameIn.FindStringSubmatch(body); m != nil {
				b.name = m[1]
			}
			broken = b
		}
	}
	take := func(start, end int, cs []textCall) {
		calls = append(calls, cs...)
		taken = append(taken, [2]int{start, end})
	}
	// <tool_call> blocks, closed or running to the end of the text.
	for _, m := range toolCallTag.FindAllStringSubmatchIndex(text, -1) {
		body := unfenceCall(text[m[2]:m[3]])
		cs, isCall, err := decodeCalls(body, tools, "a <tool_call> block")
		switch {
		case err != nil:
			breaks("a <tool_call> block", body, err)
		case isCall && len(cs) > 0:
			take(m[0], m[1], cs)
		}
	}
	// Fenced blocks that hold a call.
	for _, m := range jsonFence.FindAllStringSubmatchIndex(text, -1) {
		if overlaps(m[0], m[1]) {
			continue
		}
		body := strings.TrimSpace(text[m[2]:m[3]])
		if !callStart.MatchString(prefix(body)) {
			continue
		}
		cs, isCall, err := decodeCalls(body, tools, "a ```json fence")
		switch {
		case err != nil:
			breaks("a ```json fence", body, err)
		case isCall && len(cs) > 0:
			take(m[0], m[1], cs)
		}
	}
	// Bare objects (or lists of them) anywhere in the text.
	lead := textStart(text)
	for _, m := range callStart.FindAllStringIndex(text, -1) {
		if overlaps(m[0], m[1]) {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text[m[0]:]))
		var v json.RawMessage
		err := dec.Decode(&v)
		if err != nil {
			if m[0] == lead {
				// The text begins with it: a call, however broken.
				breaks(`a {"name",…} object`, text[m[0]:], err)
			}
			continue
		}
		end := m[0] + int(dec.InputOffset())
		form := `a {"name","arguments"} object`
		if bytes.Contains(v, []byte(`"parameters"`)) {
			form = `a {"name","parameters"} object`
		}
		cs, isCall, derr := decodeCalls(string(v), tools, form)
		if derr == nil && isCall && len(cs) > 0 {
			take(m[0], end, cs)
		}
	}
	if len(calls) == 0 {
		return nil, text, broken
	}
	slices.SortFunc(taken, func(a, b [2]int) int { return a[0] - b[0] })
	var rest strings.Builder
	at := 0
	for _, s := range taken {
		if s[0] < at {
			continue
		}
		rest.WriteString(text[at:s[0]])
		at = s[1]
	}
	rest.WriteString(text[at:])
	out := strings.TrimSpace(strings.ReplaceAll(rest.String(), "<|python_tag|>", ""))
	return calls, out, nil
}

// textStart is where text begins past white space and Llama's
// <|python_tag|>: a call that begins there is plainly a call.
func textStart(text string) int {
	const tag = "<|python_tag|>"
	t := strings.TrimLeft(text, " \t\r\n")
	if strings.HasPrefix(t, tag) {
		t = strings.TrimLeft(t[len(tag):], " \t\r\n")
	}
	return len(text) - len(t)
}

// prefix is the first characters of s, enough to see how it starts.
func prefix(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}

// unfenceCall takes a ```json fence off a <tool_call> block's body.
func unfenceCall(body string) string {
	body = strings.TrimSpace(body)
	if m := jsonFence.FindStringSubmatch(body); m != nil && strings.HasPrefix(body, "```") {
		return strings.TrimSpace(m[1])
	}
	return body
}

// decodeCalls reads body as one call object or a list of them. isCall
// reports that it has a call's shape at all; calls are those naming one of
// tools (a call naming none of them is prose, not an error); err is set when
// body does not parse as JSON.
func decodeCalls(body string, tools []string, form string) (calls []textCall, isCall bool, err error) {
	dec := json.NewDecoder(strings.NewReader(body))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return nil, false, err
	}
	var items []json.RawMessage
	if bytes.HasPrefix(bytes.TrimSpace(v), []byte("[")) {
		if json.Unmarshal(v, &items) != nil || len(items) == 0 {
			return nil, false, nil
		}
	} else {
		items = []json.RawMessage{v}
	}
	for _, it := range items {
		c, ok := callOf(it)
		if !ok {
			return nil, false, nil
		}
		tool, how := runTool(c.name, tools)
		if tool == "" {
			continue
		}
		c.tool = tool
		c.notes = append([]string{"call read from the model's text (" + form + ")"}, c.notes...)
		if how != "" {
			c.notes = append(c.notes, how)
		}
		calls = append(calls, c)
	}
	return calls, true, nil
}

// callOf reads one call object: {"name","arguments"|"parameters"}, with an
// optional "type" or "id", or OpenAI's {"type":"function","function":{…}}.
func callOf(raw json.RawMessage) (textCall, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return textCall{}, false
	}
	if fn, ok := m["function"]; ok && bytes.HasPrefix(bytes.TrimSpace(fn), []byte("{")) {
		return callOf(fn)
	}
	var c textCall
	if json.Unmarshal(m["name"], &c.name) != nil || strings.TrimSpace(c.name) == "" {
		return textCall{}, false
	}
	var args json.RawMessage
	for k, v := range m {
		switch k {
		case "name", "type", "id":
		case "arguments", "parameters":
			if args != nil {
				return textCall{}, false // both: not a shape anyone sends
			}
			args = bytes.TrimSpace(v)
		default:
			return textCall{}, false
		}
	}
	switch {
	case len(args) == 0 || string(args) == "null":
		c.args = "{}"
	case args[0] == '"':
		var s string
		_ = json.Unmarshal(args, &s)
		c.args = s
		if json.Valid([]byte(s)) {
			c.notes = append(c.notes, "arguments sent as a JSON string")
		}
	default:
		c.args = string(args)
	}
	return c, true
}

// runTool is the run's tool name names, written in any case and with or
// without a "functions." prefix, and a note when it was not written
// exactly; "" when it names none of them.
func runTool(name string, tools []string) (string, string) {
	n := strings.TrimSpace(name)
	bare := n
	if len(bare) > len("functions.") && strings.EqualFold(bare[:len("functions.")], "functions.") {
		bare = bare[len("functions."):]
	}
	for _, t := range tools {
		if strings.EqualFold(bare, t) {
			if n == t {
				return t, ""
			}
			return t, fmt.Sprintf("tool name %s read as %s", fence.Quote(name), fence.Quote(t))
		}
	}
	return "", ""
}

// unreadCall is the refusal of a turn that held a call no one could read:
// cut at the output limit, reported malformed by the vendor, or written as
// text that plainly starts a call and does not parse. nil when the turn is
// prose. It is a pure function of the reply and the run's tools.
func unreadCall(reply contracts.ModelTurnReply, tools []string) *contracts.Refusal {
	if len(reply.ToolCalls) > 0 {
		return nil
	}
	calls, _, broken := readCalls(reply.Text, tools)
	if len(calls) > 0 {
		return nil
	}
	began := ""
	if broken != nil {
		if t, _ := runTool(broken.name, tools); t != "" {
			began = " (it began a call to " + t + ")"
		}
	}
	switch {
	case reply.FinishReason == contracts.FinishLength:
		return &contracts.Refusal{Code: refuseCallCut,
			Message: "your turn was cut off at the model's output limit before it was complete" + began + ", so no call could be read from it and nothing ran",
			Fix: "send the call again as a tool call, and shorter: one statement selecting only the columns you need, " +
				"or compose_report with fewer, shorter claims. " + callShape(tools, broken)}
	case reply.FinishReason == contracts.FinishMalformedCall:
		return &contracts.Refusal{Code: refuseMalformedCall,
			Message: "the model provider could not read the function call this turn sent (it reported it malformed), so nothing ran",
			Fix:     "send the call again as a tool call whose arguments are one JSON object of the tool's parameters. " + callShape(tools, broken)}
	case broken != nil:
		return &contracts.Refusal{Code: refuseMalformedCall,
			Message: fmt.Sprintf("your text starts a call written as text (%s)%s whose JSON %s, so it could not be read and nothing ran",
				broken.form, began, jsonProblem(broken.err)),
			Fix: "send it as a tool call rather than in your text; written as text it must be one complete JSON object " +
				`{"name":"<tool>","arguments":{…}} with every brace and quote closed. ` + callShape(tools, broken)}
	}
	return nil
}

// jsonProblem says what the decoder found, by the error's type.
func jsonProblem(err error) string {
	var syn *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "ends before it is complete"
	case errors.As(err, &syn):
		return fmt.Sprintf("is not valid at character %d", syn.Offset)
	}
	return "does not parse"
}

// callShape names the run's tools and the arguments of the one the broken
// call began (or of the first), in the exact shape they take.
func callShape(tools []string, broken *brokenCall) string {
	tool := ""
	if broken != nil {
		tool, _ = runTool(broken.name, tools)
	}
	if tool == "" && len(tools) > 0 {
		tool = tools[0]
	}
	s := "The run's tools: " + strings.Join(tools, ", ") + "."
	if shape := paramShape(tool); shape != "" {
		s += " " + tool + " takes " + shape + "."
	}
	return s
}

// paramShape is a tool's arguments as one JSON object, every parameter in
// the order its schema declares them, each value "…".
func paramShape(tool string) string {
	t, ok := toolTable[tool]
	if !ok {
		return ""
	}
	var schema struct {
		Properties json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(t.spec.Parameters, &schema) != nil || len(schema.Properties) == 0 {
		return ""
	}
	dec := json.NewDecoder(bytes.NewReader(schema.Properties))
	if _, err := dec.Token(); err != nil { // {
		return ""
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return ""
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
		keys = append(keys, fmt.Sprintf("%q:\"…\"", k))
	}
	return "{" + strings.Join(keys, ",") + "}"
}
