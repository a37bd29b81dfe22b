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
	tNumber         // 12, 1.5, .5e3, 1e (the exponent's digits are optional)
	tBinary         // 0x1F
	tVariable       // @x
	tSystemVar      // @@VERSION
	tTemp           // #t, ##t
	tPunct          // ( ) , . ; and operators
)

// token is one T-SQL token. text is the source text, except for tQuoted,
// whose text is the identifier as SQL Server compares it: delimiters
// removed, doubled closers undone, trailing spaces dropped.
type token struct {
	kind kind
	text string
	pos  int // byte offset of the token in the statement
	end  int // byte offset just past it
	// lineStart is set when the token is the first one on its line.
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

// lexError is where and why the lexer stopped, and what to do about it.
type lexError struct {
	pos int
	msg string
	fix string // empty: the reader's general fix
}

func (e *lexError) Error() string { return fmt.Sprintf("%s at byte %d", e.msg, e.pos) }

// The lexer follows SQL Server's own lexer, as Microsoft publishes it in the
// T-SQL grammar of its ScriptDom parser (TSql170.g: WS_CHAR_WO_NEWLINE,
// EndOfLine, Number, Exponent, SingleLineComment, MultilineComment,
// QuotedIdentifier), wherever the two could disagree about what is a
// comment, a literal, a name or a statement boundary:
//
//   - whitespace is space, tab, VT, FF, the C0 controls U+0001–U+0008 and
//     U+000E–U+001F, and U+0085, U+00A0, U+1680, U+2000–U+200B, U+2028,
//     U+2029, U+202F, U+205F, U+3000 — U+200B (zero width space) included;
//   - a line ends at CR, LF or CR LF: a -- comment ends at a lone CR;
//   - --(* opens an ODBC escape, not a comment, and { } are ODBC escapes:
//     both are refused;
//   - /* */ comments nest, and nothing but /* and */ counts inside them;
//   - a number is digits [. digits*] [exponent] or . digits [exponent],
//     and an exponent is e [+|-] digits*: 1e, 1.e, .5e and 1e+ are
//     complete float literals, so 1eDELETE is a number and a DELETE;
//   - a delimited identifier drops its trailing spaces, as SQL Server does
//     when it compares names: [Invoice ] is Invoice.
//
// What the reader cannot read with certainty it refuses: money literals
// ($12.5, €3), pseudo-columns ($action), a hex literal continued with a
// backslash, labels, names written with look-alike characters (ſ, K, full
// width letters) that some collation may read as plain letters, and
// delimited names holding control or format characters.
func lex(s string) ([]token, *lexError) {
	toks := make([]token, 0, len(s)/5+2)
	i := 0
	lineStart := true
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\n' || c == '\r':
			lineStart = true
			i++
			continue
		case c < utf8.RuneSelf && isSpaceASCII(c):
			i++
			continue
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			if strings.HasPrefix(s[i+2:], "(*") {
				return nil, &lexError{i, "--(* opens an ODBC escape sequence, which the guard does not read",
					"leave out the --(* … *)-- escape; write plain T-SQL"}
			}
			j := strings.IndexAny(s[i:], "\r\n")
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
			if isSpaceWide(r) {
				if r == '\u2028' || r == '\u2029' || r == '\u0085' {
					lineStart = true // only for GO: seeing more lines refuses more
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

// isSpaceASCII: the ASCII characters SQL Server skips as whitespace, line
// ends and NUL aside (the reader refuses NUL before lexing).
func isSpaceASCII(c byte) bool {
	return c == ' ' || c == '\t' || c == '\v' || c == '\f' || c >= 0x01 && c <= 0x08 || c >= 0x0e && c <= 0x1f
}

// isSpaceWide: the characters above ASCII SQL Server skips as whitespace.
func isSpaceWide(r rune) bool {
	switch {
	case r == '\u0085' || r == '\u00a0' || r == '\u1680' || r >= '\u2000' && r <= '\u200b' ||
		r == '\u2028' || r == '\u2029' || r == '\u202f' || r == '\u205f' || r == '\u3000':
		return true
	}
	return false
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
	return 0, &lexError{pos: start, msg: "unterminated /* comment (SQL Server nests /* */ comments: each /* needs its own */)"}
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
		return delimited(s[i+1:end-1], "]]", "]", i, end)
	case c == '"':
		end, err := closeQuoted(s, i, '"')
		if err != nil {
			return token{}, err
		}
		return delimited(s[i+1:end-1], `""`, `"`, i, end)
	case c == '0' && i+1 < len(s) && (s[i+1] == 'x' || s[i+1] == 'X'):
		j := i + 2
		for j < len(s) && isHex(s[j]) {
			j++
		}
		if j < len(s) && s[j] == '\\' {
			return token{}, &lexError{j, "a binary literal continued with a backslash", "write the binary literal on one line"}
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
			return token{}, &lexError{pos: i, msg: "a variable without a name"}
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
		if p, r := lookAlike(s[i:j]); p >= 0 {
			return token{}, lookAlikeError(i+p, r, s[i:j])
		}
		return token{kind: tWord, text: s[i:j], pos: i, end: j}, nil
	case c == '{' || c == '}':
		return token{}, &lexError{i, fmt.Sprintf("%q begins or ends an ODBC escape sequence ({fn …}, {d '…'}, {oj …}), which the guard does not read", c),
			"write the plain T-SQL: the function itself, CAST('2026-01-01' AS date), an OUTER JOIN"}
	case c == ':' && !strings.HasPrefix(s[i:], "::"):
		return token{}, &lexError{i, "a ':' outside '::' (a label or a sqlcmd command) is not read by the guard", "write one SELECT without labels"}
	}
	for _, op := range operators {
		if strings.HasPrefix(s[i:], op) {
			return token{kind: tPunct, text: op, pos: i, end: i + len(op)}, nil
		}
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	if moneySign(r) {
		return token{}, &lexError{i, fmt.Sprintf("%q begins a money literal ($12.50) or a pseudo-column ($action, $partition), which the guard does not read", r),
			"write the amount as a number, or CAST(12.50 AS money)"}
	}
	return token{}, &lexError{pos: i, msg: fmt.Sprintf("unexpected character %q", r)}
}

// moneySign: the currency symbols SQL Server reads as the start of a money
// literal, and $ (also pseudo-columns and sqlcmd variables).
func moneySign(r rune) bool {
	switch r {
	case '$', '\u00a3', '\u00a4', '\u00a5', '\u09f2', '\u09f3', '\u0e3f', '\u20ac', '\u20a1', '\u20a2', '\u20a3',
		'\u20a4', '\u20a6', '\u20a7', '\u20a8', '\u20a9', '\u20aa', '\u20ab':
		return true
	}
	return false
}

// delimited makes the token of a delimited identifier whose raw inside is
// raw. SQL Server compares names ignoring trailing spaces, so they are
// dropped; an empty name, one holding control or format characters (which a
// collation may ignore when it compares names) or ending in other
// whitespace, and one written with look-alike letters are refused.
func delimited(raw, doubled, closer string, pos, end int) (token, *lexError) {
	text := strings.TrimRight(strings.ReplaceAll(raw, doubled, closer), " ")
	if text == "" {
		return token{}, &lexError{pos, "an empty delimited identifier", "name the table or column"}
	}
	for _, r := range text {
		if unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Cf, r) || r >= 0xfff0 && r <= 0xffff {
			return token{}, &lexError{pos, fmt.Sprintf("the delimited identifier %q holds the invisible character %U, which SQL Server's collation may ignore when it compares names", text, r),
				"write the name with visible characters only"}
		}
	}
	if r, _ := utf8.DecodeLastRuneInString(text); unicode.IsSpace(r) || isSpaceWide(r) {
		return token{}, &lexError{pos, fmt.Sprintf("the delimited identifier %q ends in the whitespace %U", text, r), "write the name without trailing whitespace"}
	}
	if p, r := lookAlike(text); p >= 0 {
		return token{}, lookAlikeError(pos, r, text)
	}
	return token{kind: tQuoted, text: text, pos: pos, end: end}, nil
}

// lookAlike returns the byte offset and rune of the first character in s
// that some collation or case rule may read as a plain ASCII letter or digit
// (ſ as s, the Kelvin sign as K, full-width and mathematical letters, the
// Turkish dotted and dotless i), or -1.
func lookAlike(s string) (int, rune) {
	for p, r := range s {
		if r < utf8.RuneSelf {
			continue
		}
		switch {
		case r >= '\uff01' && r <= '\uff5e', // full-width ASCII
			r >= 0x1d400 && r <= 0x1d7ff, // mathematical alphanumerics
			r == '\u0130' || r == '\u0131':
			return p, r
		}
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < utf8.RuneSelf {
				return p, r
			}
		}
	}
	return -1, 0
}

func lookAlikeError(pos int, r rune, name string) *lexError {
	return &lexError{pos, fmt.Sprintf("the name %q holds %q (%U), which SQL Server may read as a plain ASCII letter", name, r, r),
		"write names and keywords with plain letters"}
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
	return 0, &lexError{pos: i, msg: "unterminated " + what}
}

// lexNumber reads a number as SQL Server does: digits [. digits*]
// [exponent], or . digits [exponent], where an exponent is e [+|-] digits*.
// The exponent's digits are optional: 1e, 1.e and 1e+ are complete.
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
		j++
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		for j < len(s) && isDigit(s[j]) {
			j++
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

// sameName reports whether two names certainly name the same object in SQL
// Server whatever the database's collation: equal, or differing only in the
// case of ASCII letters under a case-insensitive collation. caseOnly is set
// in the second case, where a case-sensitive database would read two names.
func sameName(a, b string) (same, caseOnly bool) {
	if a == b {
		return true, false
	}
	if len(a) != len(b) {
		return false, false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false, false
		}
	}
	return true, true
}
