package render

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
)

// Clip is s on one line, clean, and at most n runes long (the cut marked
// with an ellipsis).
func Clip(s string, n int) string {
	return Cut(Clean(strings.Join(strings.Fields(s), " ")), n)
}

// Cut shortens s to at most n runes, marking the cut with an ellipsis.
func Cut(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Clean escapes what a terminal would act on rather than show: C0 and C1
// control characters (escape sequences, carriage returns, newlines), DEL,
// the Unicode line and paragraph separators, the bidirectional overrides
// that reorder what is shown, and bytes that are not UTF-8. What is left
// prints as itself.
func Clean(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
			fmt.Fprintf(&b, `\x%02x`, r)
		case r == 0x061c, r == 0x200e, r == 0x200f, r == 0x2028, r == 0x2029,
			r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	return b.String()
}

// CleanLines is clean for text whose line breaks and tabs are its layout (a
// drafted statement, a claim): they stay, everything else clean escapes is
// escaped.
func CleanLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		parts := strings.Split(l, "\t")
		for j, p := range parts {
			parts[j] = Clean(p)
		}
		lines[i] = strings.Join(parts, "\t")
	}
	return strings.Join(lines, "\n")
}

// boundedList joins at most maxListItems strings, each clean and bounded.
func boundedList(ss []string) string {
	var parts []string
	for i, s := range ss {
		if i == maxListItems {
			parts = append(parts, fmt.Sprintf("… %d more", len(ss)-i))
			break
		}
		parts = append(parts, Clip(s, 60))
	}
	return strings.Join(parts, ", ")
}

func columnNames(cs []contracts.Column) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.Name
	}
	if len(names) == 0 {
		return "unknown"
	}
	return boundedList(names)
}

func qualified(n contracts.NameRef) string {
	if n.Schema == "" {
		return n.Name
	}
	return n.Schema + "." + n.Name
}
