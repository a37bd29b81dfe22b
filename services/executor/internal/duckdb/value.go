package duckdb

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"time"

	duckdb "github.com/duckdb/duckdb-go/v2"
	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// value converts a value the driver scanned into its result form: what
// rowset.Value accepts for scalars; a DECIMAL, HUGEINT or out-of-range
// UBIGINT as its exact decimal text; a TIME as its clock text; an INTERVAL,
// a UUID and the like as their text; a LIST, STRUCT or MAP as JSON-ready
// lists and objects of converted values.
func value(v any, dbType string) (any, error) {
	switch x := v.(type) {
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case uint16:
		return int64(x), nil
	case uint32:
		return int64(x), nil
	case uint64:
		if x > math.MaxInt64 {
			return fmt.Sprint(x), nil
		}
		return int64(x), nil
	case float32:
		return rowset.Value(float64(x))
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), nil
		}
		return x.String(), nil
	case duckdb.Decimal:
		return decimalText(x), nil
	case duckdb.Interval:
		return fmt.Sprintf("%d months %d days %d microseconds", x.Months, x.Days, x.Micros), nil
	case time.Time:
		switch dbType {
		case "TIME", "TIMETZ", "TIME_NS":
			return x.Format("15:04:05.999999999"), nil
		}
		return rowset.Value(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := value(e, "")
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := value(e, "")
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case duckdb.OrderedMap:
		return mapValue(&x)
	case *duckdb.OrderedMap:
		return mapValue(x)
	case duckdb.Union:
		c, err := value(x.Value, "")
		if err != nil {
			return nil, err
		}
		return map[string]any{x.Tag: c}, nil
	case []byte:
		if dbType == "UUID" && len(x) == 16 {
			return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16]), nil
		}
		return rowset.Value(x)
	case nil, int64, bool, float64, string:
		return rowset.Value(x)
	case fmt.Stringer:
		return rowset.Value(x.String())
	}
	if b, err := json.Marshal(v); err == nil {
		return rowset.Value(string(b))
	}
	return nil, fmt.Errorf("unexpected value type %T", v)
}

// decimalText writes a DECIMAL exactly: its digits with the point placed by
// its scale.
func decimalText(d duckdb.Decimal) string {
	if d.Value == nil {
		return "0"
	}
	r := new(big.Rat).SetFrac(d.Value, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil))
	return r.FloatString(int(d.Scale))
}

// mapValue writes a MAP as a list of {key, value} objects, in its order
// (keys need not be strings).
func mapValue(m *duckdb.OrderedMap) (any, error) {
	keys, values := m.Keys(), m.Values()
	out := make([]any, 0, len(keys))
	for i, k := range keys {
		kc, err := value(k, "")
		if err != nil {
			return nil, err
		}
		vc, err := value(values[i], "")
		if err != nil {
			return nil, err
		}
		out = append(out, map[string]any{"key": kc, "value": vc})
	}
	return out, nil
}
