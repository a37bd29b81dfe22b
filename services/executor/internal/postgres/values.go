package postgres

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// typeName names a result column's type: PostgreSQL's name for a built-in,
// the oid for anything else.
func typeName(tm *pgtype.Map, oid uint32) string {
	if t, ok := tm.TypeForOID(oid); ok {
		return t.Name
	}
	return "oid:" + strconv.FormatUint(uint64(oid), 10)
}

// value converts one text-format result value to its result form: nil,
// int64, float64 (or "NaN"/"Infinity"), bool, an exact json.Number for
// numeric, a decoded JSON value for json and jsonb, a rowset.Blob for bytea,
// and PostgreSQL's own text for everything else (dates, times, intervals,
// arrays, uuids). Text that is not valid UTF-8 fails explicitly.
func value(oid uint32, b []byte) (any, error) {
	if b == nil {
		return nil, nil
	}
	s := string(b)
	switch oid {
	case pgtype.Int2OID, pgtype.Int4OID, pgtype.Int8OID, pgtype.OIDOID:
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return n, nil
		}
	case pgtype.Float4OID, pgtype.Float8OID:
		f, err := strconv.ParseFloat(s, 64)
		switch {
		case err == nil && !math.IsInf(f, 0) && !math.IsNaN(f):
			return f, nil
		case s == "NaN", s == "Infinity", s == "-Infinity":
			return s, nil
		}
	case pgtype.NumericOID:
		if s == "NaN" || strings.HasSuffix(s, "Infinity") {
			return s, nil
		}
		return json.Number(s), nil
	case pgtype.BoolOID:
		return s == "t", nil
	case pgtype.ByteaOID:
		if h, ok := strings.CutPrefix(s, `\x`); ok {
			raw, err := hex.DecodeString(h)
			if err != nil {
				return nil, err
			}
			return rowset.NewBlob(raw), nil
		}
	case pgtype.JSONOID, pgtype.JSONBOID:
		if !utf8.ValidString(s) {
			return nil, rowset.ErrInvalidUTF8
		}
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			return nil, errors.New("invalid JSON from the server: " + err.Error())
		}
		return v, nil
	}
	if !utf8.ValidString(s) {
		return nil, rowset.ErrInvalidUTF8
	}
	return s, nil
}
