package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"reflect"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/gateway/api"
)

// maxRequestBody bounds every JSON request body.
const maxRequestBody = 1 << 20

// bodyKey holds the request body the route's body gate decoded.
const bodyKey = "sonde.body"

// bodyGate is the one decoder of JSON request bodies: every route whose
// table entry has a Request type gets it (routes), so no handler decodes a
// body the gate has not read. It decodes into a new value of t with
// decodeStrict, keeps it for the handler (decodeJSON), and puts the bytes
// back for a handler that reads the body itself.
func bodyGate(t reflect.Type) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			v := reflect.New(t)
			raw, err := decodeStrict(c.Response(), c.Request(), v.Interface())
			if err != nil {
				return err
			}
			c.Request().Body = io.NopCloser(bytes.NewReader(raw))
			c.Set(bodyKey, v.Interface())
			return next(c)
		}
	}
}

// decodeJSON hands a handler the request body: the value the route's body
// gate decoded when it is of v's type, otherwise the body decoded now by the
// same rules. v is a pointer to the route's Request type.
func decodeJSON(c echo.Context, v any) error {
	if got := c.Get(bodyKey); got != nil && reflect.TypeOf(got) == reflect.TypeOf(v) {
		reflect.ValueOf(v).Elem().Set(reflect.ValueOf(got).Elem())
		return nil
	}
	_, err := decodeStrict(c.Response(), c.Request(), v)
	return err
}

// decodeStrict reads r's body into v and returns the bytes it read:
//
//   - declared Content-Type: application/json, or refused 415 before it is
//     read, a body declaring nothing included (a browser posts text/plain,
//     forms and typeless blobs across sites without a CORS preflight);
//   - at most maxRequestBody bytes (413);
//   - exactly one JSON object, every key spelled exactly as a field's JSON
//     name (encoding/json alone would take "SQL" for "sql"), no key twice,
//     no unknown key, in nested objects too (400);
//   - every non-empty string field tagged id:"<kind>" passes
//     contracts.CheckID (400 invalid_id): those become subject tokens and
//     keys.
func decodeStrict(w http.ResponseWriter, r *http.Request, v any) ([]byte, error) {
	ct := r.Header.Get(echo.HeaderContentType)
	if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != echo.MIMEApplicationJSON {
		shown := fmt.Sprintf("as %q", truncate(ct, 64))
		if ct == "" {
			shown = "with no Content-Type"
		}
		return nil, fail(http.StatusUnsupportedMediaType, api.CodeUnsupportedMediaType,
			"the request body is sent "+shown+", not as application/json",
			"send the JSON object with Content-Type: application/json")
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, fail(http.StatusRequestEntityTooLarge, contracts.CodeBadRequest,
			fmt.Sprintf("the request body is larger than %d bytes", maxRequestBody), "send a smaller body")
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, fail(http.StatusRequestTimeout, api.CodeRequestTimeout,
			"the request body did not arrive in time", "send the whole body at once")
	case err != nil:
		return nil, badRequest(contracts.CodeBadRequest, "the request body could not be read", "send the body again")
	case len(bytes.TrimSpace(raw)) == 0:
		return nil, badRequest(contracts.CodeBadRequest, "the request body is empty", "send a JSON object")
	}
	t := reflect.TypeOf(v).Elem()
	if err := checkShape(raw, t); err != nil {
		return nil, badRequest(contracts.CodeBadRequest, "malformed request body: "+err.Error(),
			"send one JSON object with only the documented fields, spelled exactly as documented")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return nil, badRequest(contracts.CodeBadRequest, "malformed request body: "+err.Error(),
			"send one JSON object with only the documented fields")
	}
	if err := checkIDFields(reflect.ValueOf(v).Elem()); err != nil {
		return nil, idError(err)
	}
	return raw, nil
}

// checkShape walks the JSON text against type t: one object at the top,
// then every object's keys exact and unique. Values of a type with no fixed
// shape (any, json.RawMessage) are walked for repeated keys only.
func checkShape(raw []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return errors.New("the body is not a JSON object")
	}
	if err := walkObject(dec, t, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// shaped is t when its JSON has a fixed shape the walk can follow, nil
// otherwise.
func shaped(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Kind() == reflect.Interface || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil
	}
	return t
}

// walkValue walks one value whose first token is still to be read.
func walkValue(dec *json.Decoder, t reflect.Type, at string) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		return walkObject(dec, t, at)
	case json.Delim('['):
		var elem reflect.Type
		if t = shaped(t); t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walkValue(dec, elem, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
		_, err = dec.Token()
		return err
	}
	return nil
}

// walkObject walks an object whose '{' was read.
func walkObject(dec *json.Decoder, t reflect.Type, at string) error {
	t = shaped(t)
	var fields map[string]reflect.Type
	var elem reflect.Type
	if t != nil {
		switch t.Kind() {
		case reflect.Struct:
			fields = jsonFields(t)
		case reflect.Map:
			elem = t.Elem()
		}
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if seen[key] {
			return fmt.Errorf("the key %q appears twice%s", key, where(at))
		}
		seen[key] = true
		ft := elem
		if fields != nil {
			var ok bool
			if ft, ok = fields[key]; !ok {
				for name := range fields {
					if strings.EqualFold(name, key) {
						return fmt.Errorf("unknown field %q%s: field names are case-sensitive; the field is %q", key, where(at), name)
					}
				}
				return fmt.Errorf("unknown field %q%s", key, where(at))
			}
		}
		if err := walkValue(dec, ft, at+"."+key); err != nil {
			return err
		}
	}
	_, err := dec.Token()
	return err
}

func where(at string) string {
	if at == "" {
		return ""
	}
	return " in " + strings.TrimPrefix(at, ".")
}

// jsonFields maps the JSON names of a struct's fields, those of embedded
// structs promoted, to their types: the names encoding/json writes.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			if et := shaped(f.Type); et != nil && et.Kind() == reflect.Struct {
				for k, v := range jsonFields(et) {
					if _, own := out[k]; !own {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// checkIDFields checks every non-empty string field tagged id:"<kind>"
// (nested structs included) with contracts.CheckID.
func checkIDFields(v reflect.Value) error {
	if v.Kind() != reflect.Struct {
		return nil
	}
	for i := range v.NumField() {
		f, fv := v.Type().Field(i), v.Field(i)
		if kind, ok := f.Tag.Lookup("id"); ok && fv.Kind() == reflect.String && fv.String() != "" {
			if err := contracts.CheckID(contracts.IDKind(kind), fv.String()); err != nil {
				return err
			}
		}
		if fv.Kind() == reflect.Struct {
			if err := checkIDFields(fv); err != nil {
				return err
			}
		}
	}
	return nil
}
