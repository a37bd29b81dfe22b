package fence

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestQuoteKeepsAHostileNameOnItsLine(t *testing.T) {
	for in, want := range map[string]string{
		"orders":               `"orders"`,
		"a\nb\r\tc":            `"a\nb\r\tc"`,
		`say "hi"`:             `"say \"hi\""`,
		"<b>&</b>":             `"<b>&</b>"`,
		"\u2028line separator": `"\u2028line separator"`,
	} {
		if got := Quote(in); got != want {
			t.Errorf("Quote(%q) = %s, want %s", in, got, want)
		}
	}
	long := strings.Repeat("é", 60) // 120 bytes: the cut falls inside a character
	got := Quote(long)
	if !utf8.ValidString(got) || !strings.HasSuffix(got, `…"`) || len(got) > QuoteMax+len(`""…`) {
		t.Errorf("Quote of a long name = %s, want at most %d bytes of it, cut on a character, with an ellipsis", got, QuoteMax)
	}
}
