package mssql

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// kind is the kind of a T-SQL token.
type kind uint8

const (
	tEOF       kind = iota
	tWord           // a regular identifier or keyword: SELECT, orders, _x1
	tQuoted         // a delimited identifier: [order id], "order id"
	tString         // '…' or N'…'
	tNumber         // 12, 1.5, .5e3
	tBinary         // 0x1F
	tVariable       // @x
	tSystemVar      // @@VERSION
	tTemp           // #t, ##t
	tPunct          // ( ) , . ; and operators
)

// token is one T-SQL token. text is the source text, except for tQuoted,
// whose text is the identifier with its delimiters removed and doubled
// closers undone.
type token struct {
	kind kind
	text string
	pos  int // byte offset of the token in the statement
	end  int // byte offset just past it
	// line is set when the token is the first one on its line.
	lineStart bool
}

// is reports whether t is the bare keyword kw (upper case).
func (t token) is(kw string) bool {
	return t.kind == tWord && len(t.text) == len(kw) && strings.EqualFold(t.text, kw)
}

// isPunct reports whether t is the punctuation or operator p.
func (t token) isPunct(p string) bool { return t.kind == tPunct && t.text == p }

// upper is a word's text in upper case.
func (t token) upper() string { return strings.ToUpper(t.text) }

// lexError is where and why the lexer stopped.
type lexError struct {
	pos int
	msg string
}

func (e *lexError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.pos) }

// lex splits a T-SQL text into tokens, following SQL Server's rules for what
// can hide a ';' or a keyword: '…' and N'…' strings with doubled quotes,
// […] and "…" delimited identifiers with doubled closers, -- comments to the
// end of the line and /* */ comments, which nest. Comments are dropped. It
// refuses rather than guesses: a character T-SQL gives no meaning here ($, {,
// a stray quote) stops it.
func lex(s string) ([]token, *lexError) {
	toks := make([]token, 0, len(s)/5+2)
	i := 0
	lineStart := true
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\n':
			lineStart = true
			i++
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j
			}
			continue
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			j, err := skipBlockComment(s, i)
			if err != nil {
				return nil, err
			}
			i = j
			continue
		}
		if c >= utf8.RuneSelf {
			r, n := utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) {
				if r == '\u2028' || r == '\u2029' || r == '\u0085' {
					lineStart = true
				}
				i += n
				continue
			}
		}
		t, err := lexToken(s, i)
		if err != nil {
			return nil, err
		}
		t.lineStart = lineStart
		lineStart = false
		toks = append(toks, t)
		i = t.end
	}
	toks = append(toks, token{kind: tEOF, pos: len(s), end: len(s), lineStart: lineStart})
	return toks, nil
}

// skipBlockComment returns the offset just past the /* */ comment starting at
// i; SQL Server nests them.
func skipBlockComment(s string, i int) (int, *lexError) {
	start := i
	depth := 0
	for i < len(s) {
		switch {
		case s[i] == '/' && i+1 < len(s) && s[i+1] == '*':
			depth++
			i += 2
		case s[i] == '*' && i+1 < len(s) && s[i+1] == '/':
			depth--
			i += 2
			if depth == 0 {
				return i, nil
			}
		default:
			i++
		}
	}
	return 0, &lexError{start, "unterminated /* comment"}
}

func lexToken(s string, i int) (token, *lexError) {
	c := s[i]
	switch {
	case (c == 'N' || c == 'n') && i+1 < len(s) && s[i+1] == '\'':
		end, err := closeQuoted(s, i+1, '\'')
		if err != nil {
			return token{}, err
		}
		return token{kind: tString, text: s[i:end], pos: i, end: end}, nil
	case c == '\'':
		end, err := closeQuoted(s, i, '\'')
		if err != nil {
			return token{}, err
		}
		return token{kind: tString, text: s[i:end], pos: i, end: end}, nil
	case c == '[':
		end, err := closeQuoted(s, i, ']')
		if err != nil {
			return token{}, err
		}
		return token{kind: tQuoted, text: strings.ReplaceAll(s[i+1:end-1], "]]", "]"), pos: i, end: end}, nil
	case c == '"':
		end, err := closeQuoted(s, i, '"')
		if err != nil {
			return token{}, err
		}
		return token{kind: tQuoted, text: strings.ReplaceAll(s[i+1:end-1], `""`, `"`), pos: i, end: end}, nil
	case c == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X'):
		j := i + 2
		for j < len(s) && isHex(s[j]) {
			j++
		}
		return token{kind: tBinary, text: s[i:j], pos: i, end: j}, nil
	case isDigit(c) || c == '.' && i+1 < len(s) && isDigit(s[i+1]):
		return lexNumber(s, i), nil
	case c == '@':
		kd, j := tVariable, i+1
		if j < len(s) && s[j] == '@' {
			kd, j = tSystemVar, j+1
		}
		k := identEnd(s, j)
		if k == j {
			return token{}, &lexError{i, "a variable without a name"}
		}
		return token{kind: kd, text: s[i:k], pos: i, end: k}, nil
	case c == '#':
		j := i + 1
		if j < len(s) && s[j] == '#' {
			j++
		}
		k := identEnd(s, j)
		return token{kind: tTemp, text: s[i:k], pos: i, end: k}, nil
	case isIdentStart(s, i):
		j := identEnd(s, i)
		return token{kind: tWord, text: s[i:j], pos: i, end: j}, nil
	}
	for _, op := range operators {
		if strings.HasPrefix(s[i:], op) {
			return token{kind: tPunct, text: op, pos: i, end: i + len(op)}, nil
		}
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return token{}, &lexError{i, fmt.Sprintf("unexpected character %q", r)}
}

// operators are T-SQL's punctuation and operators, longest first.
var operators = []string{
	"<>", "<=", ">=", "!=", "!<", "!>", "::",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
	"(", ")", ",", ".", ";", "*", "+", "-", "/", "%", "=", "<", ">", "&", "|", "^", "~",
}

// closeQuoted returns the offset just past the quoted token opening at i
// with a quote whose closer is q; a doubled closer stands for itself.
func closeQuoted(s string, i int, q byte) (int, *lexError) {
	for j := i + 1; j < len(s); j++ {
		if s[j] != q {
			continue
		}
		if j+1 < len(s) && s[j+1] == q {
			j++
			continue
		}
		return j + 1, nil
	}
	what := "string"
	switch q {
	case ']':
		what = "[identifier"
	case '"':
		what = `"identifier`
	}
	return 0, &lexError{i, "unterminated " + what}
}

func lexNumber(s string, i int) token {
	j := i
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	if j < len(s) && s[j] == '.' {
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			j = k
		}
	}
	return token{kind: tNumber, text: s[i:j], pos: i, end: j}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isIdentStart: a letter (any script) or _ begins a regular identifier.
func isIdentStart(s string, i int) bool {
	c := s[i]
	if c < utf8.RuneSelf {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r)
}

// identEnd returns the end of the identifier characters from i: letters,
// digits, _, @, # and $.
func identEnd(s string, i int) int {
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf {
			if c == '_' || c == '@' || c == '#' || c == '$' || isDigit(c) || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
				i++
				continue
			}
			return i
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) && !unicode.Is(unicode.Mn, r) && !unicode.Is(unicode.Mc, r) {
			return i
		}
		i += n
	}
	return i
}
