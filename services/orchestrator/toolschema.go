package orchestrator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// A tool's parameters are declared once, as the struct its arguments are
// read into: the JSON schema the model is shown and the lenient reading of
// its text parameters are both derived from the struct's fields and tags.
//
//	json:"name"     the parameter's name (",omitempty" is ignored here)
//	doc:"…"         its description, as the model reads it
//	arg:"nullable"  it may be null (the schema's type is a union with null;
//	                the reader takes "null" or "None" sent as a string for it);
//	                every other parameter is required to hold a value
//	arg:"statement" it holds a SQL statement (one ```sql fence is taken off)
//	aka:"a,b"       other names it is read under, each noted when used
//	enum:"a,b"      the values it takes (null joins them when it is nullable)
//	itemdoc:"…"     for a list, the description of one of its items
//
// Strict mode holds every object to additionalProperties false with every
// property required (a parameter that may be absent is nullable), so the
// schema says so for every struct. Keys are written in one fixed order, and
// parameters in field order: the order is what the model reads.

// declare is a tool's declaration to the model: its parameters are the
// struct type of params.
func declare(name string, params any, description string) contracts.ToolSpec {
	return contracts.ToolSpec{Name: name, Description: description, Parameters: schemaOf(reflect.TypeOf(params))}
}

// schemaOf writes the JSON schema of struct type t.
func schemaOf(t reflect.Type) json.RawMessage {
	var b bytes.Buffer
	writeSchema(&b, t, fieldTags{})
	return b.Bytes()
}

// fieldTags are the schema-bearing tags of one struct field.
type fieldTags struct {
	doc, itemDoc string
	nullable     bool
	enum         []string
}

func tagsOf(f reflect.StructField) fieldTags {
	ft := fieldTags{doc: f.Tag.Get("doc"), itemDoc: f.Tag.Get("itemdoc")}
	for _, o := range strings.Split(f.Tag.Get("arg"), ",") {
		if o == "nullable" {
			ft.nullable = true
		}
	}
	if e := f.Tag.Get("enum"); e != "" {
		ft.enum = strings.Split(e, ",")
	}
	return ft
}

// params lists the declared parameters of struct type t: the exported
// fields with a JSON name.
func params(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() || paramName(f) == "" {
			continue
		}
		out = append(out, f)
	}
	return out
}

func paramName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

func writeSchema(b *bytes.Buffer, t reflect.Type, ft fieldTags) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var typ string
	switch t.Kind() {
	case reflect.String:
		typ = "string"
	case reflect.Int, reflect.Int64:
		typ = "integer"
	case reflect.Slice:
		typ = "array"
	case reflect.Struct:
		typ = "object"
	default:
		panic(fmt.Sprintf("tool parameters: no schema for %s", t))
	}
	b.WriteString(`{"type":`)
	if ft.nullable {
		b.WriteString(`["` + typ + `","null"]`)
	} else {
		b.WriteString(`"` + typ + `"`)
	}
	if len(ft.enum) > 0 {
		b.WriteString(`,"enum":[`)
		for i, v := range ft.enum {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, v)
		}
		if ft.nullable {
			b.WriteString(",null")
		}
		b.WriteByte(']')
	}
	if ft.doc != "" {
		b.WriteString(`,"description":`)
		writeString(b, ft.doc)
	}
	switch t.Kind() {
	case reflect.Slice:
		b.WriteString(`,"items":`)
		writeSchema(b, t.Elem(), fieldTags{doc: ft.itemDoc})
	case reflect.Struct:
		b.WriteString(`,"properties":{`)
		var names []string
		for i, f := range params(t) {
			if i > 0 {
				b.WriteByte(',')
			}
			names = append(names, paramName(f))
			writeString(b, paramName(f))
			b.WriteByte(':')
			writeSchema(b, f.Type, tagsOf(f))
		}
		b.WriteString(`},"required":[`)
		for i, n := range names {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, n)
		}
		b.WriteString(`],"additionalProperties":false`)
	}
	b.WriteByte('}')
}

// writeString writes s as a JSON string, as written by hand: <, > and &
// are kept as they are.
func writeString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Truncate(b.Len() - 1) // Encode's newline
}

// fieldsOf is the lenient reading of struct type t's text parameters, from
// the same tags: a parameter that may not be null is required. Parameters
// of other types are read by the tool's own decoder.
func fieldsOf(v any) []field {
	var out []field
	for _, f := range params(reflect.TypeOf(v)) {
		if f.Type.Kind() != reflect.String {
			continue
		}
		fl := field{name: paramName(f), nullable: tagsOf(f).nullable}
		fl.required = !fl.nullable
		for _, o := range strings.Split(f.Tag.Get("arg"), ",") {
			fl.statement = fl.statement || o == "statement"
		}
		if a := f.Tag.Get("aka"); a != "" {
			fl.aliases = strings.Split(a, ",")
		}
		out = append(out, fl)
	}
	return out
}
