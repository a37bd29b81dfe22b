package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/fence"
)

// The argument decoders read what a model sent the way a careful person
// would: the declared shape exactly, and the few shapes models are known to
// send instead when their meaning is not in doubt. Around the arguments: a
// ```json fence, prose after the object, the object double-encoded as a
// JSON string, a {"name","parameters"} (or "arguments") wrapper naming the
// tool itself (object, the one path every tool's decoder takes). Inside
// them: an argument under a common other name, "null" or "None" written as
// a string where null is allowed, a ```sql fence around a statement, a
// report's claims as a JSON string, a bare id as evidence, "id" for
// "correlationId", an id in another case or spaced (R1, "r 1") that names
// one of this run's, any source on a reference that gives an id. Anything
// ambiguous — a wrapper naming another tool, two objects, a fence holding
// two statements — and anything else (an unknown field, a wrong type) is
// refused with the tool's own parameters named, never a decoder's message.
// What was read leniently is listed, so the ledger says what the model
// actually sent (ToolCall.Arguments keeps it verbatim) and how it was read.

const (
	noteFence     = "arguments sent in a ```json fence"
	noteString    = "arguments sent as a JSON string"
	noteProse     = "prose after the arguments' JSON object left out"
	moreThanOne   = "the arguments hold more than one JSON value: send one object"
	maxEnvelopes  = 4 // fence, string, wrapper, and one of them again
	wrapperFormat = `arguments sent inside a {"name","%s"} wrapper`
)

// object reads raw as the one JSON object of tool's arguments, taking off
// the envelopes models put around it. Empty text is an empty object.
func object(tool, raw string) (map[string]json.RawMessage, []string, error) {
	return envelope(tool, raw, 0)
}

func envelope(tool, raw string, depth int) (map[string]json.RawMessage, []string, error) {
	var notes []string
	note := func(n string) {
		if !slices.Contains(notes, n) {
			notes = append(notes, n)
		}
	}
	text := strings.TrimSpace(raw)
	for range maxEnvelopes {
		if tag, inner, rest, ok := fenced(text); ok && (tag == "" || tag == "json") {
			if strings.ContainsAny(rest, "{[`") {
				return nil, notes, &argError{msg: moreThanOne}
			}
			note(noteFence)
			if rest != "" {
				note(noteProse)
			}
			text = inner
			continue
		}
		if strings.HasPrefix(text, `"`) {
			var s string
			if json.Unmarshal([]byte(text), &s) == nil {
				if s = strings.TrimSpace(s); strings.HasPrefix(s, "{") || strings.HasPrefix(s, "```") {
					note(noteString)
					text = s
					continue
				}
			}
		}
		break
	}
	if text == "" {
		return map[string]json.RawMessage{}, notes, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, notes, &argError{msg: "the arguments are not one JSON object"}
	}
	if rest := strings.TrimSpace(text[dec.InputOffset():]); rest != "" {
		// Prose after the object is left out; another object (or a fence)
		// in it would make the call ambiguous.
		if strings.ContainsAny(rest, "{[`") {
			return nil, notes, &argError{msg: moreThanOne}
		}
		note(noteProse)
	}
	inner, key, err := wrapped(tool, m)
	if err != nil || key == "" {
		return m, notes, err
	}
	if depth >= maxEnvelopes {
		return nil, notes, &argError{msg: "the arguments are wrapped too deeply to read"}
	}
	note(fmt.Sprintf(wrapperFormat, key))
	m, n, err := envelope(tool, string(inner), depth+1)
	for _, x := range n {
		note(x)
	}
	return m, notes, err
}

// wrapped reads m as a {"name":…,"parameters"|"arguments":…} wrapper: the
// inner arguments and the key that held them when the name is tool's, an
// error when it names another tool, and no key when m is no wrapper (its
// name names no tool, or it has other fields): the tool's own fields
// decide then.
func wrapped(tool string, m map[string]json.RawMessage) (json.RawMessage, string, error) {
	if len(m) != 2 {
		return nil, "", nil
	}
	var name string
	if json.Unmarshal(m["name"], &name) != nil {
		return nil, "", nil
	}
	for _, key := range []string{"parameters", "arguments"} {
		inner, ok := m[key]
		if !ok {
			continue
		}
		called, ok := toolNamed(name, specNames())
		switch {
		case !ok:
			return nil, "", nil
		case called != tool:
			return nil, "", &argError{msg: fmt.Sprintf("the arguments sent to %s are wrapped as a call of %s ({\"name\":%s,\"%s\":…}): call %s itself, or send %s's own arguments",
				tool, called, fence.Quote(name), key, called, tool)}
		}
		return inner, key, nil
	}
	return nil, "", nil
}

// specNames lists every tool Sonde declares.
func specNames() []string {
	names := make([]string, 0, len(toolSpecs))
	for n := range toolSpecs {
		names = append(names, n)
	}
	return names
}

// toolNamed finds the tool of tools that name calls: exactly, in another
// case, or after one namespace prefix ("functions.", "default_api.") that
// chat templates and SDKs put before a function's name.
func toolNamed(name string, tools []string) (string, bool) {
	if slices.Contains(tools, name) {
		return name, true
	}
	n := strings.TrimSpace(name)
	if i := strings.IndexByte(n, '.'); i > 0 && isWord(n[:i]) {
		n = n[i+1:]
	}
	for _, t := range tools {
		if strings.EqualFold(n, t) {
			return t, true
		}
	}
	return "", false
}

func isWord(s string) bool {
	for _, r := range s {
		if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return false
		}
	}
	return s != ""
}

// fenced reads text that opens with a ``` fence: the fence's tag (lower
// case), the text inside, and what follows the closing fence. A fence left
// open runs to the end.
func fenced(text string) (tag, inner, rest string, ok bool) {
	if !strings.HasPrefix(text, "```") {
		return "", "", "", false
	}
	i := 3
	for i < len(text) && (isTagByte(text[i])) {
		i++
	}
	tag = strings.ToLower(text[3:i])
	body := text[i:]
	// The fence closes at a line that starts with ``` (a JSON string holds
	// no raw newline, so a fence quoted inside the arguments is not it), or,
	// in a fence written on one line, at its last ```.
	end := strings.Index(body, "\n```")
	if end >= 0 {
		end++
	} else if !strings.Contains(body, "\n") {
		end = strings.LastIndex(body, "```")
	}
	if end >= 0 {
		return tag, strings.TrimSpace(body[:end]), strings.TrimSpace(body[end+3:]), true
	}
	return tag, strings.TrimSpace(body), "", true
}

func isTagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '+' || c == '_'
}

// sqlTags are the fence tags a statement arrives under.
var sqlTags = []string{"", "sql", "postgresql", "postgres", "pgsql", "psql", "plpgsql", "sqlite", "sqlite3", "duckdb", "tsql", "t-sql", "mssql", "sqlserver"}

// unfence takes one ```sql fence off a statement. A fence with anything
// after it, or holding more than one statement, is refused: which
// statement was meant is in doubt.
func unfence(tool, name, s string) (string, string, error) {
	tag, inner, rest, ok := fenced(strings.TrimSpace(s))
	if !ok || !slices.Contains(sqlTags, tag) {
		return s, "", nil
	}
	if rest != "" {
		return s, "", &argError{msg: fmt.Sprintf("%s's %q has more after its fence; send one statement, without the fence", tool, name)}
	}
	if n := statements(inner); n > 1 {
		return s, "", &argError{msg: fmt.Sprintf("%s's %q holds %d statements in its ```%s fence; send one statement, without the fence", tool, name, n, tag)}
	}
	return inner, fmt.Sprintf("%q: the ```%s fence around the statement taken off", name, tag), nil
}

// statements counts the statements in sql: the runs of text between
// semicolons outside quotes, dollar quotes and comments. It only decides
// whether a fenced statement is one; the guard reads the statement itself.
func statements(sql string) int {
	n, open := 0, false
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		skip := func(end string, from int) {
			if j := strings.Index(sql[from:], end); j >= 0 {
				i = from + j + len(end) - 1
			} else {
				i = len(sql)
			}
		}
		switch {
		case c == '-' && strings.HasPrefix(sql[i:], "--"):
			skip("\n", i+2)
			continue
		case c == '/' && strings.HasPrefix(sql[i:], "/*"):
			skip("*/", i+2)
			continue
		case c == ';':
			open = false
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			continue
		}
		if !open {
			n++
			open = true
		}
		switch c {
		case '\'', '"', '`':
			skip(string(c), i+1)
		case '[':
			skip("]", i+1)
		case '$':
			if m := dollarTag.FindString(sql[i:]); m != "" {
				skip(m, i+len(m))
			}
		}
	}
	return n
}

// dollarTag is PostgreSQL's $tag$ opening a dollar-quoted string.
var dollarTag = regexp.MustCompile(`^\$[A-Za-z_]*\$`)

// nullWords are what models write for null as a string.
func nullWord(s string) bool {
	s = strings.TrimSpace(s)
	return strings.EqualFold(s, "null") || strings.EqualFold(s, "none")
}

// field is one parameter of a tool: its name, the other names it is read
// under, whether it is required, whether it may be null (and so "null" or
// "None" sent as a string is read as null), and whether it holds a
// statement (one ```sql fence around it is taken off).
type field struct {
	name      string
	aliases   []string
	required  bool
	nullable  bool
	statement bool
}

// fields reads m against a tool's parameters into out (name → text): an
// alias is renamed (and noted), a null is absent, an unknown field or a
// non-string value is refused naming the parameters.
func fields(tool string, m map[string]json.RawMessage, params []field, out map[string]string) ([]string, error) {
	var notes []string
	known := map[string]field{}
	var names []string
	for _, f := range params {
		known[f.name] = f
		names = append(names, f.name)
		for _, a := range f.aliases {
			known[a] = f
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := known[k]
		if !ok {
			return notes, &argError{msg: fmt.Sprintf("%s has no parameter %q; its parameters are: %s", tool, k, strings.Join(names, ", "))}
		}
		name := f.name
		v := bytes.TrimSpace(m[k])
		if string(v) == "null" {
			continue
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return notes, &argError{msg: fmt.Sprintf("%s's %q must be a string", tool, name)}
		}
		if _, dup := out[name]; dup {
			return notes, &argError{msg: fmt.Sprintf("%s's %q was sent twice (under %q too)", tool, name, k)}
		}
		if k != name {
			notes = append(notes, fmt.Sprintf("%q read as %q", k, name))
		}
		if f.nullable && nullWord(s) {
			notes = append(notes, fmt.Sprintf("%q: the string %q read as null", name, s))
			continue
		}
		if f.statement {
			sql, note, err := unfence(tool, name, s)
			if err != nil {
				return notes, err
			}
			if note != "" {
				notes = append(notes, note)
			}
			s = sql
		}
		out[name] = s
	}
	for _, f := range params {
		if _, ok := out[f.name]; f.required && (!ok || strings.TrimSpace(out[f.name]) == "") {
			return notes, &argError{msg: fmt.Sprintf("%s needs %q", tool, f.name)}
		}
	}
	return notes, nil
}

// unquoted is raw, or the JSON a JSON string raw holds when it holds a
// list or an object (a value double-encoded), and whether it was.
func unquoted(raw json.RawMessage) (json.RawMessage, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return raw, false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return raw, false
	}
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "[") || strings.HasPrefix(t, "{") {
		if json.Valid([]byte(t)) {
			return json.RawMessage(t), true
		}
	}
	return raw, false
}

// resolveID reads id as one of ids: exactly, or in another case or with
// spaces (R1, "r 1" for r1), noted at at. An id that names none of them is
// returned trimmed, with no note: the citation check refuses it by its id.
func resolveID(at, id string, ids []string) (string, string) {
	if slices.Contains(ids, id) {
		return id, ""
	}
	t := strings.TrimSpace(id)
	squeezed := strings.Join(strings.Fields(t), "")
	for _, known := range ids {
		if strings.EqualFold(squeezed, known) {
			return known, fmt.Sprintf("%s: %q read as %q", at, id, known)
		}
	}
	return t, ""
}

// evidence reads one claim's evidence: a list (or a single item, or a list
// sent as a JSON string) of references, each an object or a bare id.
func evidence(claim int, raw json.RawMessage, ids []string) ([]contracts.EvidenceRef, []string, error) {
	var notes []string
	raw, encoded := unquoted(raw)
	if encoded {
		notes = append(notes, fmt.Sprintf("claim %d: evidence sent as a JSON string", claim))
	}
	var items []json.RawMessage
	if len(raw) > 0 && raw[0] != '[' {
		items = []json.RawMessage{raw}
		notes = append(notes, fmt.Sprintf("claim %d: one piece of evidence sent without a list", claim))
	} else if json.Unmarshal(raw, &items) != nil {
		return nil, notes, &argError{msg: fmt.Sprintf("claim %d's evidence must be a list of references", claim)}
	}
	var refs []contracts.EvidenceRef
	for j, it := range items {
		at := fmt.Sprintf("evidence %d.%d", claim, j+1)
		var id string
		if json.Unmarshal(it, &id) == nil {
			corr, note := resolveID(at, id, ids)
			refs = append(refs, contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: corr})
			notes = append(notes, at+" sent as a bare id")
			if note != "" {
				notes = append(notes, note)
			}
			continue
		}
		var o map[string]string
		if json.Unmarshal(it, &o) != nil || o == nil {
			return nil, notes, &argError{msg: at + ` must be {"source":"artifact","correlationId":"…"} or an id`}
		}
		ref := contracts.EvidenceRef{Source: contracts.EvidenceSource(o["source"])}
		keys := make([]string, 0, len(o))
		for k := range o {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := o[k]
			switch k {
			case "source":
			case "correlationId":
				ref.CorrelationID = v
			case "id", "correlation_id", "artifact", "artifactId":
				if o["correlationId"] == "" && ref.CorrelationID == "" {
					ref.CorrelationID = v
				}
				notes = append(notes, fmt.Sprintf("%s: %q read as \"correlationId\"", at, k))
			case "fingerprint":
				ref.Fingerprint = v
			default:
				return nil, notes, &argError{msg: fmt.Sprintf(`%s has no field %q; a reference is {"source":"artifact","correlationId":"…"}`, at, k)}
			}
		}
		if ref.CorrelationID != "" {
			corr, note := resolveID(at, ref.CorrelationID, ids)
			ref.CorrelationID = corr
			if note != "" {
				notes = append(notes, note)
			}
		}
		// A reference that gives an id and no fingerprint names a result
		// by it, whatever source it says: only an artifact is named so.
		// Whether the id is this run's is the citation check's to say —
		// by the id, never by the source.
		if ref.CorrelationID != "" && ref.Fingerprint == "" && ref.Source != contracts.EvidenceArtifact {
			if ref.Source == "" {
				notes = append(notes, at+" sent without a source")
			} else {
				notes = append(notes, fmt.Sprintf("%s: source %q read as %q", at, ref.Source, contracts.EvidenceArtifact))
			}
			ref.Source = contracts.EvidenceArtifact
		}
		refs = append(refs, ref)
	}
	return refs, notes, nil
}

// idField reads one id argument: a string, or a reference object the model
// copied whole ({"source":"artifact","correlationId":…}), resolved against
// the run's ids as evidence is (R1 for r1), and noted when it was.
func idField(tool, name string, v json.RawMessage, ids []string) (string, string, error) {
	var s string
	if json.Unmarshal(v, &s) != nil || strings.TrimSpace(s) == "" {
		var ref struct {
			CorrelationID string `json:"correlationId"`
		}
		if json.Unmarshal(v, &ref) != nil || strings.TrimSpace(ref.CorrelationID) == "" {
			return "", "", &argError{msg: fmt.Sprintf("%s's %q must be the id of a result of this run, %s", tool, name, idExample(ids))}
		}
		s = ref.CorrelationID
	}
	id, note := resolveID(fence.Quote(name), s, ids)
	return id, note, nil
}

// idExample says what an id of this run looks like, from its own ids.
func idExample(ids []string) string {
	for i := len(ids) - 1; i >= 0; i-- {
		if ids[i] != "" && ids[i] != "schema" {
			return "such as " + fence.Quote(ids[i])
		}
	}
	return "as a tool result names it"
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
