package mssql

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sondehq/sonde/services/executor/internal/rowset"
)

// value converts what go-mssqldb scans for a column of SQL Server type
// dbType into its result form. DECIMAL, NUMERIC and MONEY arrive as their
// decimal text and stay text (a float would round them); UNIQUEIDENTIFIER
// arrives as SQL Server's 16 mixed-endian bytes and becomes its usual text.
func value(v any, dbType string) (any, error) {
	switch x := v.(type) {
	case []byte:
		switch strings.ToUpper(dbType) {
		case "DECIMAL", "NUMERIC", "MONEY", "SMALLMONEY":
			return string(x), nil
		case "UNIQUEIDENTIFIER":
			if len(x) == 16 {
				return guid(x), nil
			}
		}
	case int32:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case uint8:
		return int64(x), nil
	case int:
		return int64(x), nil
	case float32:
		return float64(x), nil
	case fmt.Stringer:
		if _, err := rowset.Value(v); err != nil {
			return x.String(), nil
		}
	}
	return rowset.Value(v)
}

// guid writes SQL Server's uniqueidentifier bytes in their text form: the
// first three groups are stored little-endian.
func guid(b []byte) string {
	return fmt.Sprintf("%02X%02X%02X%02X-%02X%02X-%02X%02X-%02X%02X-%02X%02X%02X%02X%02X%02X",
		b[3], b[2], b[1], b[0], b[5], b[4], b[7], b[6], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15])
}

// capValue reports whether a value reached textSize, the SET TEXTSIZE of the
// session: SQL Server cuts a large value there, so one that reaches it may
// have been cut and is refused rather than passed on short. textSize counts
// the server's bytes: two per UTF-16 unit for the N types, one per byte
// otherwise (a code-page character may take more bytes in UTF-8, which only
// refuses earlier). xml is held to the same count, though TEXTSIZE does not
// cut it.
func capValue(v any, dbType string, textSize int64) bool {
	switch x := v.(type) {
	case []byte:
		return int64(len(x)) >= textSize
	case string:
		if int64(len(x)) >= textSize {
			return true
		}
		switch strings.ToUpper(dbType) {
		case "NVARCHAR", "NCHAR", "NTEXT", "XML":
			return 2*utf16Len(x) >= textSize
		}
	}
	return false
}

// utf16Len is the length of s in UTF-16 code units.
func utf16Len(s string) int64 {
	n := int64(0)
	for _, r := range s {
		n++
		if r > 0xffff || r == utf8.RuneError {
			n++ // a surrogate pair (or, conservatively, a replaced byte)
		}
	}
	return n
}
