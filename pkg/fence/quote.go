package fence

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// QuoteMax is how many bytes of a name Quote keeps before it cuts.
const QuoteMax = 80

// Quote writes s as a JSON string for a line of server text (a refusal, a
// fix): control characters are escaped, so a hostile name cannot break the
// line it is quoted in, and a name longer than QuoteMax bytes is cut on a
// character boundary with an ellipsis. <, > and & are kept as written.
func Quote(s string) string {
	if len(s) > QuoteMax {
		cut := QuoteMax
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}
