package duckdb

import "strings"

// splitStatements splits text at semicolons outside strings, quoted
// identifiers, dollar-quoted strings and comments, dropping empty pieces.
// It only picks between refusal codes for a statement DuckDB's parser already
// refused; it never decides what runs.
func splitStatements(text string) []string {
	var out []string
	start := 0
	flush := func(end int) {
		if s := strings.TrimSpace(stripComments(text[start:end])); s != "" {
			out = append(out, s)
		}
		start = end + 1
	}
	for i := 0; i < len(text); i++ {
		switch c := text[i]; {
		case c == ';':
			flush(i)
		case c == '\'' || c == '"':
			i = skipQuoted(text, i, c)
		case c == '-' && strings.HasPrefix(text[i:], "--"):
			if j := strings.IndexByte(text[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(text)
			}
		case c == '/' && strings.HasPrefix(text[i:], "/*"):
			if j := strings.Index(text[i+2:], "*/"); j >= 0 {
				i += j + 3
			} else {
				i = len(text)
			}
		case c == '$':
			if tag, ok := dollarTag(text[i:]); ok {
				if j := strings.Index(text[i+len(tag):], tag); j >= 0 {
					i += len(tag) + j + len(tag) - 1
				} else {
					i = len(text)
				}
			}
		}
	}
	if start < len(text) {
		flush(len(text))
	}
	return out
}

// skipQuoted returns the index of the quote closing the one at i (a doubled
// quote stays inside), or the end of text.
func skipQuoted(text string, i int, q byte) int {
	for j := i + 1; j < len(text); j++ {
		if text[j] == q {
			if j+1 < len(text) && text[j+1] == q {
				j++
				continue
			}
			return j
		}
	}
	return len(text)
}

// dollarTag reads a $tag$ opening at the start of s.
func dollarTag(s string) (string, bool) {
	for j := 1; j < len(s); j++ {
		c := s[j]
		if c == '$' {
			return s[:j+1], true
		}
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || j > 1 && c >= '0' && c <= '9') {
			return "", false
		}
	}
	return "", false
}

// stripComments drops leading comments so a piece holding only comments is empty.
func stripComments(s string) string {
	for {
		s = strings.TrimSpace(s)
		switch {
		case strings.HasPrefix(s, "--"):
			if j := strings.IndexByte(s, '\n'); j >= 0 {
				s = s[j+1:]
			} else {
				return ""
			}
		case strings.HasPrefix(s, "/*"):
			if j := strings.Index(s, "*/"); j >= 0 {
				s = s[j+2:]
			} else {
				return ""
			}
		default:
			return s
		}
	}
}

// leadingKeyword is the first word of a statement, after its comments and
// any opening parentheses.
func leadingKeyword(s string) string {
	s = strings.TrimLeft(stripComments(s), "( \t\r\n")
	end := strings.IndexFunc(s, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	})
	if end < 0 {
		end = len(s)
	}
	if end == 0 {
		return "the statement"
	}
	return s[:end]
}
