package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"path"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/services/gateway/api"
)

// APIVersion is info.version of the OpenAPI document: raised when a route or
// a body changes incompatibly.
const APIVersion = "1.0.0"

// openAPI answers GET /openapi.json with the document built from routeTable.
func (g *Gateway) openAPI(c echo.Context) error {
	return c.Blob(http.StatusOK, echo.MIMEApplicationJSON, g.spec)
}

// OpenAPI returns the OpenAPI 3.1 document of the HTTP API, built from the
// route table and the handlers' own request and response types, indented
// and ending in a newline (what docs/openapi.json holds).
func OpenAPI() ([]byte, error) {
	doc, err := buildOpenAPI(routeTable)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("gateway: encode the OpenAPI document: %w", err)
	}
	return buf.Bytes(), nil
}

// obj is a JSON object of the document; encoding/json sorts its keys, so the
// document is the same bytes every time.
type obj = map[string]any

const apiDescription = "Sonde's HTTP API. Every answer other than 2xx, from every route and from the " +
	"router itself (404 not_found for an unknown path, 405 method_not_allowed for a wrong method), is " +
	"`{\"error\":{\"code\",\"message\",\"fix\"}}` (ErrorBody): code is stable, message says what was wrong, " +
	"fix how to put it right. Routes under /api need `Authorization: Bearer <token>` when the server has " +
	"tokens (SONDE_API_TOKENS); without tokens the gateway listens on loopback only and every caller is the " +
	"local admin. CORS is off unless the operator lists origins (SONDE_CORS_ORIGINS). See docs/api.md."

var pathParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// openAPIPath turns an echo path into the document's: ":id" becomes "{id}".
func openAPIPath(p string) string { return pathParam.ReplaceAllString(p, "{$1}") }

func buildOpenAPI(table []route) (obj, error) {
	gen := newSchemaGen()
	errorRef := gen.ref(reflect.TypeFor[api.ErrorBody]())
	paths := obj{}
	var undocumented []obj
	ids := map[string]bool{}
	for _, r := range table {
		if r.Undocumented != "" {
			undocumented = append(undocumented, obj{"method": r.Method, "path": r.Path, "reason": r.Undocumented})
			continue
		}
		if r.OperationID == "" || ids[r.OperationID] {
			return nil, fmt.Errorf("gateway: route %s %s: operation id %q is empty or not unique", r.Method, r.Path, r.OperationID)
		}
		ids[r.OperationID] = true
		op := obj{"operationId": r.OperationID, "summary": r.Summary}
		if r.Description != "" {
			op["description"] = r.Description
		}
		if r.Public {
			op["security"] = []obj{}
		} else {
			op["security"] = []obj{{"bearer": []string{}}}
		}
		var params []obj
		for _, m := range pathParam.FindAllStringSubmatch(r.Path, -1) {
			params = append(params, obj{"name": m[1], "in": "path", "required": true, "schema": obj{"type": "string"}})
		}
		for _, p := range r.Params {
			typ := "string"
			if p.Integer {
				typ = "integer"
			}
			params = append(params, obj{"name": p.Name, "in": p.In, "description": p.Description, "schema": obj{"type": typ}})
		}
		if len(params) > 0 {
			op["parameters"] = params
		}
		if r.Request != nil {
			op["requestBody"] = obj{"required": true, "content": obj{
				"application/json": obj{"schema": gen.of(reflect.TypeOf(r.Request))}}}
		}
		status := r.Status
		if status == 0 {
			status = http.StatusOK
		}
		ok := obj{"description": http.StatusText(status)}
		switch {
		case r.Produces != nil:
			content := obj{}
			for mt, item := range r.Produces {
				if item == nil {
					content[mt] = obj{"schema": obj{"type": "string"}}
				} else {
					content[mt] = obj{"schema": gen.of(reflect.TypeOf(item))}
				}
			}
			ok["content"] = content
		case r.Response != nil:
			ok["content"] = obj{"application/json": obj{"schema": gen.of(reflect.TypeOf(r.Response))}}
		}
		responses := obj{fmt.Sprint(status): ok}
		errs := slices.Clone(r.Errors)
		if r.Request != nil {
			// A body that is not declared JSON is refused (bodyGate), and
			// one that arrives too slowly (edge.go).
			errs = append(errs, http.StatusUnsupportedMediaType, http.StatusRequestTimeout)
		}
		if (r.Request != nil || len(r.IDs) > 0) && !slices.Contains(errs, http.StatusBadRequest) {
			// A malformed body or identifier is refused (bodyGate, pathIDs).
			errs = append(errs, http.StatusBadRequest)
		}
		// The edge refuses a Host or Origin it does not serve, on every route.
		errs = append(errs, http.StatusForbidden)
		if !r.Public {
			errs = append(errs, http.StatusUnauthorized)
		}
		errs = append(errs, http.StatusInternalServerError)
		for _, s := range errs {
			schema := errorRef
			if b, ok := r.ErrorBodies[s]; ok {
				// The other body carries the error shape and more; the
				// status may still answer the plain shape.
				schema = obj{"anyOf": []obj{errorRef, gen.of(reflect.TypeOf(b))}}
			}
			responses[fmt.Sprint(s)] = obj{"description": http.StatusText(s),
				"content": obj{"application/json": obj{"schema": schema}}}
		}
		op["responses"] = responses
		p := openAPIPath(r.Path)
		item, _ := paths[p].(obj)
		if item == nil {
			item = obj{}
			paths[p] = item
		}
		m := strings.ToLower(r.Method)
		if _, dup := item[m]; dup {
			return nil, fmt.Errorf("gateway: route %s %s is in the table twice", r.Method, r.Path)
		}
		item[m] = op
	}
	doc := obj{
		"openapi": "3.1.0",
		"info": obj{
			"title":       "Sonde HTTP API",
			"version":     APIVersion,
			"description": apiDescription,
		},
		"paths": paths,
		"components": obj{
			"schemas": gen.defs,
			"securitySchemes": obj{"bearer": obj{"type": "http", "scheme": "bearer",
				"description": "a token of SONDE_API_TOKENS; not needed when the server has none"}},
		},
	}
	if undocumented != nil {
		doc["x-sonde-undocumented"] = undocumented
	}
	return doc, nil
}

// schemaGen turns Go types into JSON Schema 2020-12 (OpenAPI 3.1's dialect)
// as encoding/json encodes them: named structs become components, fields
// without omitempty are required, embedded structs are flattened.
type schemaGen struct {
	defs  obj
	names map[reflect.Type]string
	taken map[string]reflect.Type
}

func newSchemaGen() *schemaGen {
	return &schemaGen{defs: obj{}, names: map[reflect.Type]string{}, taken: map[string]reflect.Type{}}
}

var (
	timeType       = reflect.TypeFor[time.Time]()
	durationType   = reflect.TypeFor[time.Duration]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
	marshalerType  = reflect.TypeFor[json.Marshaler]()
	textMarshaler  = reflect.TypeFor[interface{ MarshalText() ([]byte, error) }]()
	unsafeName     = regexp.MustCompile(`[^A-Za-z0-9._-]`)
)

// ref is a $ref to the component of the named struct t.
func (s *schemaGen) ref(t reflect.Type) obj {
	if name, ok := s.names[t]; ok {
		return obj{"$ref": "#/components/schemas/" + name}
	}
	name := unsafeName.ReplaceAllString(t.Name(), "_")
	if other, ok := s.taken[name]; ok && other != t {
		name = path.Base(t.PkgPath()) + "." + name
	}
	s.names[t], s.taken[name] = name, t
	s.defs[name] = obj{} // a placeholder, so a recursive type refers to itself
	s.defs[name] = s.object(t)
	return obj{"$ref": "#/components/schemas/" + name}
}

// of is the schema of a value of type t.
func (s *schemaGen) of(t reflect.Type) obj {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType:
		return obj{"type": "string", "format": "date-time"}
	case t == rawMessageType:
		return obj{"description": "any JSON value"}
	case t.Implements(marshalerType) || reflect.PointerTo(t).Implements(marshalerType):
		return obj{"description": "any JSON value (" + t.String() + " encodes itself)"}
	case t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
		return obj{"type": "string"}
	case t == durationType:
		return obj{"type": "integer", "description": "nanoseconds"}
	}
	switch t.Kind() {
	case reflect.Bool:
		return obj{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return obj{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return obj{"type": "number"}
	case reflect.String:
		return obj{"type": "string"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return obj{"type": "string", "contentEncoding": "base64"}
		}
		return obj{"type": "array", "items": s.of(t.Elem())}
	case reflect.Map:
		return obj{"type": "object", "additionalProperties": s.of(t.Elem())}
	case reflect.Struct:
		if t.Name() == "" {
			return s.object(t)
		}
		return s.ref(t)
	}
	// interface{} and anything else: any JSON value.
	return obj{}
}

// object is the schema of struct t's fields.
func (s *schemaGen) object(t reflect.Type) obj {
	props := obj{}
	var required []string
	s.fields(t, props, &required)
	out := obj{"type": "object", "properties": props}
	if len(required) > 0 {
		slices.Sort(required)
		out["required"] = required
	}
	return out
}

func (s *schemaGen) fields(t reflect.Type, props obj, required *[]string) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				s.fields(ft, props, required)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		schema := s.of(ft)
		if hasOpt(opts, "string") {
			schema = obj{"type": "string"}
		}
		omitted := hasOpt(opts, "omitempty") || hasOpt(opts, "omitzero")
		if !omitted {
			*required = append(*required, name)
			// A nil slice, map or pointer that is not omitted encodes as null.
			switch ft.Kind() {
			case reflect.Slice, reflect.Map, reflect.Pointer:
				schema = orNull(schema)
			}
		}
		props[name] = schema
	}
}

// orNull lets schema also be null.
func orNull(schema obj) obj {
	switch t := schema["type"].(type) {
	case string:
		out := maps.Clone(schema)
		out["type"] = []string{t, "null"}
		return out
	case nil:
		if _, ref := schema["$ref"]; ref {
			return obj{"anyOf": []obj{schema, {"type": "null"}}}
		}
	}
	return schema // already any JSON value
}

func hasOpt(opts, want string) bool {
	for o := range strings.SplitSeq(opts, ",") {
		if o == want {
			return true
		}
	}
	return false
}
