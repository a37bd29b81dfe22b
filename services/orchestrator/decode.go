package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// The argument decoders read what a model sent the way a careful person
// would: the declared shape exactly, and the few shapes small models are
// known to send instead when their meaning is not in doubt — an argument
// under a common other name, a report's claims as a JSON string, a bare id
// as evidence, "id" for "correlationId", a missing "source" on an id this
// run produced. Anything else (an unknown field, a wrong type) is refused
// with the tool's own parameters named, never a decoder's message. What was
// read leniently is listed, so the ledger says what the model actually sent.

// object reads raw as one JSON object of fields. Empty text is an empty
// object; anything after the object is refused.
func object(raw string) (map[string]json.RawMessage, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return map[string]json.RawMessage{}, nil
	}
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, &argError{msg: "the arguments are not one JSON object"}
	}
	if dec.More() {
		return nil, &argError{msg: "the arguments hold more than one JSON value"}
	}
	return m, nil
}

// field is one parameter of a tool: its name, the other names it is read
// under, and whether it is required.
type field struct {
	name     string
	aliases  []string
	required bool
}

// fields reads m against a tool's parameters into out (name → text): an
// alias is renamed (and noted), a null is absent, an unknown field or a
// non-string value is refused naming the parameters.
func fields(tool string, m map[string]json.RawMessage, params []field, out map[string]string) ([]string, error) {
	var notes []string
	known := map[string]string{}
	var names []string
	for _, f := range params {
		known[f.name] = f.name
		names = append(names, f.name)
		for _, a := range f.aliases {
			known[a] = f.name
		}
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		name, ok := known[k]
		if !ok {
			return notes, &argError{msg: fmt.Sprintf("%s has no parameter %q; its parameters are: %s", tool, k, strings.Join(names, ", "))}
		}
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
		out[name] = s
	}
	for _, f := range params {
		if _, ok := out[f.name]; f.required && (!ok || strings.TrimSpace(out[f.name]) == "") {
			return notes, &argError{msg: fmt.Sprintf("%s needs %q", tool, f.name)}
		}
	}
	return notes, nil
}

var readFields = []field{{name: "sql", aliases: []string{"query", "statement"}, required: true}, {name: "reason"}}

var schemaFields = []field{{name: "table", aliases: []string{"table_name", "tableName"}}, {name: "schema", aliases: []string{"schema_name"}},
	{name: "pattern"}, {name: "after"}}

// decodeRead reads run_read_query's arguments.
func decodeRead(raw string) (readArgs, []string, error) {
	m, err := object(raw)
	if err != nil {
		return readArgs{}, nil, err
	}
	out := map[string]string{}
	notes, err := fields("run_read_query", m, readFields, out)
	return readArgs{SQL: out["sql"], Reason: out["reason"]}, notes, err
}

// decodeSchema reads inspect_schema's arguments.
func decodeSchema(raw string) (schemaArgs, []string, error) {
	m, err := object(raw)
	if err != nil {
		return schemaArgs{}, nil, err
	}
	out := map[string]string{}
	notes, err := fields("inspect_schema", m, schemaFields, out)
	return schemaArgs{Table: out["table"], Schema: out["schema"], Pattern: out["pattern"], After: out["after"]}, notes, err
}

// decodeReport reads compose_report's arguments. ids are the ids this run
// can cite: a reference without a source is taken as an artifact only when
// it names one of them.
func decodeReport(raw string, ids []string) (reportArgs, []string, error) {
	var notes []string
	m, err := object(raw)
	if err != nil {
		return reportArgs{}, nil, err
	}
	for k := range m {
		if k != "claims" {
			return reportArgs{}, nil, &argError{msg: fmt.Sprintf("compose_report has no parameter %q; its one parameter is claims", k)}
		}
	}
	claimsRaw := bytes.TrimSpace(m["claims"])
	if len(claimsRaw) > 0 && claimsRaw[0] == '"' {
		var s string
		if json.Unmarshal(claimsRaw, &s) == nil {
			claimsRaw = []byte(strings.TrimSpace(s))
			notes = append(notes, "claims sent as a JSON string")
		}
	}
	var claims []json.RawMessage
	if len(claimsRaw) == 0 || json.Unmarshal(claimsRaw, &claims) != nil {
		return reportArgs{}, notes, &argError{msg: "compose_report's claims must be a list of {\"text\",\"evidence\"} objects"}
	}
	var a reportArgs
	for i, cr := range claims {
		var c map[string]json.RawMessage
		if json.Unmarshal(cr, &c) != nil || c == nil {
			return a, notes, &argError{msg: fmt.Sprintf("claim %d is not an object with text and evidence", i+1)}
		}
		var claim contracts.Claim
		for k, v := range c {
			switch k {
			case "text", "claim", "finding":
				if json.Unmarshal(v, &claim.Text) != nil {
					return a, notes, &argError{msg: fmt.Sprintf("claim %d's text must be a string", i+1)}
				}
				if k != "text" {
					notes = append(notes, fmt.Sprintf("claim %d: %q read as \"text\"", i+1, k))
				}
			case "evidence", "citations":
				refs, n, err := evidence(i+1, v, ids)
				if err != nil {
					return a, notes, err
				}
				if k != "evidence" {
					n = append(n, fmt.Sprintf("claim %d: %q read as \"evidence\"", i+1, k))
				}
				notes = append(notes, n...)
				claim.Evidence = refs
			default:
				return a, notes, &argError{msg: fmt.Sprintf("claim %d has no field %q; a claim is {\"text\",\"evidence\"}", i+1, k)}
			}
		}
		a.Claims = append(a.Claims, claim)
	}
	sort.Strings(notes)
	return a, notes, nil
}

// evidence reads one claim's evidence: a list (or a single item) of
// references, each an object or a bare id.
func evidence(claim int, raw json.RawMessage, ids []string) ([]contracts.EvidenceRef, []string, error) {
	raw = bytes.TrimSpace(raw)
	var notes []string
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
			refs = append(refs, contracts.EvidenceRef{Source: contracts.EvidenceArtifact, CorrelationID: strings.TrimSpace(id)})
			notes = append(notes, at+" sent as a bare id")
			continue
		}
		var o map[string]string
		if json.Unmarshal(it, &o) != nil || o == nil {
			return nil, notes, &argError{msg: at + ` must be {"source":"artifact","correlationId":"…"} or an id`}
		}
		ref := contracts.EvidenceRef{Source: contracts.EvidenceSource(o["source"])}
		for k, v := range o {
			switch k {
			case "source":
			case "correlationId":
				ref.CorrelationID = v
			case "id", "correlation_id", "artifact", "artifactId":
				if ref.CorrelationID == "" {
					ref.CorrelationID = v
				}
				notes = append(notes, fmt.Sprintf("%s: %q read as \"correlationId\"", at, k))
			case "fingerprint":
				ref.Fingerprint = v
			default:
				return nil, notes, &argError{msg: fmt.Sprintf(`%s has no field %q; a reference is {"source":"artifact","correlationId":"…"}`, at, k)}
			}
		}
		if ref.Source == "" && ref.CorrelationID != "" && slices.Contains(ids, ref.CorrelationID) {
			ref.Source = contracts.EvidenceArtifact
			notes = append(notes, at+" sent without a source")
		}
		refs = append(refs, ref)
	}
	return refs, notes, nil
}
