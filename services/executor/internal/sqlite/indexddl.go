package sqlite

import "strings"

// indexExpression writes the seqno-th key term of an index's DDL as the DDL
// writes it (without its COLLATE, ASC or DESC): SQLite reports an expression
// column with no name. "" when the DDL cannot be read.
func indexExpression(ddl string, seqno int) string {
	// The terms follow the ON table name: the first parenthesis after ON.
	i := onClause(ddl)
	if i < 0 {
		return ""
	}
	terms := splitTerms(ddl[i:])
	if seqno >= len(terms) {
		return ""
	}
	return trimOrder(terms[seqno])
}

// onClause returns the offset of the "(" that opens an index's key terms.
func onClause(ddl string) int {
	depth := 0
	for i := 0; i < len(ddl); i++ {
		switch c := ddl[i]; c {
		case '\'', '"', '`', '[':
			i = skipQuoted(ddl, i)
		case '(':
			if depth == 0 {
				return i
			}
			depth++
		}
	}
	return -1
}

// skipQuoted returns the offset of the quote that closes the one at i.
func skipQuoted(s string, i int) int {
	closer := s[i]
	if closer == '[' {
		closer = ']'
	}
	for j := i + 1; j < len(s); j++ {
		if s[j] == closer {
			if closer != ']' && j+1 < len(s) && s[j+1] == closer {
				j++
				continue
			}
			return j
		}
	}
	return len(s)
}

// splitTerms splits the parenthesised list at the start of s at its
// top-level commas.
func splitTerms(s string) []string {
	var terms []string
	depth, start := 0, 1
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\'', '"', '`', '[':
			i = skipQuoted(s, i)
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 {
				return append(terms, strings.TrimSpace(s[start:i]))
			}
		case ',':
			if depth == 1 {
				terms = append(terms, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	return terms
}

// trimOrder drops a trailing ASC or DESC and COLLATE name from a key term.
func trimOrder(term string) string {
	for {
		f := strings.Fields(term)
		n := len(f)
		switch {
		case n >= 2 && (strings.EqualFold(f[n-1], "asc") || strings.EqualFold(f[n-1], "desc")):
			term = strings.TrimSpace(term[:strings.LastIndex(term, f[n-1])])
		case n >= 3 && strings.EqualFold(f[n-2], "collate"):
			term = strings.TrimSpace(term[:strings.LastIndex(term, f[n-2])])
		default:
			return term
		}
	}
}

// foldASCII folds the ASCII letters only, as SQLite compares names.
func foldASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
