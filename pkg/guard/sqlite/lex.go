package sqlite

import "strings"

// kind is the kind of a token.
type kind int

const (
	kEOF      kind = iota
	kSemi          // ;
	kWord          // keyword or bare identifier
	kIdent         // "quoted", `quoted` or [bracketed] identifier
	kString        // 'string literal'
	kBlob          // x'hex' literal
	kNumber        // numeric literal
	kVariable      // ?, ?NNN, :name, @name, $name, #name
	kOp            // operator or punctuation
	kIllegal       // what SQLite's tokenizer calls TK_ILLEGAL
)

// token is one token of a statement; text is its source text.
type token struct {
	kind kind
	pos  int
	text string
}

// is reports whether t is the keyword kw (upper case).
func (t token) is(kw string) bool { return t.kind == kWord && strings.EqualFold(t.text, kw) }

// op reports whether t is the operator or punctuation s.
func (t token) op(s string) bool { return t.kind == kOp && t.text == s }

// name is the identifier t names: a word as written, a quoted identifier
// without its quotes.
func (t token) name() string {
	switch t.kind {
	case kIdent:
		s := t.text
		switch s[0] {
		case '[':
			return s[1 : len(s)-1]
		case '"', '`':
			q := s[:1]
			return strings.ReplaceAll(s[1:len(s)-1], q+q, q)
		}
	}
	return t.text
}

// lex splits sql into tokens the way SQLite's tokenizer (tokenize.c) does
// wherever it matters for where a statement ends: quotes with doubled-quote
// escapes, [brackets] without, -- and /* comments (an unterminated one runs to
// the end; a "/*" with nothing after it is a slash and a star), x'…' literals
// that end at the next quote, and Tcl-style variables such as $a(x;y) that
// may hold a ';'. Whitespace and comments are dropped; the last token is
// kEOF. An unterminated quote is one kIllegal token to the end, as in SQLite.
func lex(s string) []token {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
			for i < len(s) && isSpace(s[i]) {
				i++
			}
			continue
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+2 < len(s) && s[i+1] == '*':
			if i = closesComment(s, i); i < 0 {
				i = len(s)
			}
			continue
		case c == ';':
			i++
			out = append(out, token{kSemi, start, ";"})
			continue
		case c == '\'' || c == '"' || c == '`':
			k := kString
			if c != '\'' {
				k = kIdent
			}
			i = quoted(s, i, c)
			if i < 0 {
				i = len(s)
				k = kIllegal
			}
			out = append(out, token{k, start, s[start:i]})
			continue
		case c == '[':
			k := kIdent
			if j := strings.IndexByte(s[i:], ']'); j >= 0 {
				i += j + 1
			} else {
				i, k = len(s), kIllegal
			}
			out = append(out, token{k, start, s[start:i]})
			continue
		case (c == 'x' || c == 'X') && i+1 < len(s) && s[i+1] == '\'':
			j := i + 2
			for j < len(s) && isHex(s[j]) {
				j++
			}
			k := kBlob
			if j >= len(s) || s[j] != '\'' || (j-i)%2 != 0 {
				k = kIllegal
				for j < len(s) && s[j] != '\'' {
					j++
				}
			}
			if j < len(s) {
				j++
			}
			i = j
			out = append(out, token{k, start, s[start:i]})
			continue
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			i = number(s, i)
			out = append(out, token{kNumber, start, s[start:i]})
			continue
		case c == '?':
			i++
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			out = append(out, token{kVariable, start, s[start:i]})
			continue
		case c == '$' || c == '@' || c == ':' || c == '#':
			var k kind
			i, k = variable(s, i)
			out = append(out, token{k, start, s[start:i]})
			continue
		case isIDStart(c):
			for i < len(s) && isIDChar(s[i]) {
				i++
			}
			out = append(out, token{kWord, start, s[start:i]})
			continue
		}
		// Operators: the two- and three-character ones first.
		for _, op := range []string{"->>", "||", "<=", ">=", "==", "!=", "<>", "<<", ">>", "->"} {
			if strings.HasPrefix(s[i:], op) {
				i += len(op)
				break
			}
		}
		if i == start {
			i++
		}
		k := kOp
		if !strings.ContainsRune("(),.+-*/%<>=&|~", rune(c)) && i-start == 1 {
			k = kIllegal
		}
		out = append(out, token{k, start, s[start:i]})
	}
	return append(out, token{kEOF, len(s), ""})
}

// closesComment returns the index just past the */ closing the block comment
// opening at s[i], or -1 when it runs to the end.
func closesComment(s string, i int) int {
	if j := strings.Index(s[i+2:], "*/"); j >= 0 {
		return i + 2 + j + 2
	}
	return -1
}

// quoted returns the index just past the quoted token opening at s[i], or -1
// when it is never closed. A doubled quote stays inside.
func quoted(s string, i int, q byte) int {
	for j := i + 1; j < len(s); j++ {
		if s[j] != q {
			continue
		}
		if j+1 < len(s) && s[j+1] == q {
			j++
			continue
		}
		return j + 1
	}
	return -1
}

// number returns the index just past the numeric literal at s[i]. Its exact
// form is SQLite's to judge; only its extent matters here.
func number(s string, i int) int {
	if strings.HasPrefix(s[i:], "0x") || strings.HasPrefix(s[i:], "0X") {
		i += 2
		for i < len(s) && (isHex(s[i]) || s[i] == '_') {
			i++
		}
		return i
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_' || s[i] == '.') {
		i++
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		j := i + 1
		if j < len(s) && (s[j] == '+' || s[j] == '-') {
			j++
		}
		if j < len(s) && s[j] >= '0' && s[j] <= '9' {
			i = j
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '_') {
				i++
			}
		}
	}
	// SQLite reads an identifier character right after a number as part of
	// one illegal token.
	for i < len(s) && isIDChar(s[i]) {
		i++
	}
	return i
}

// variable scans a named parameter as tokenize.c does, Tcl forms included:
// "$a::b", "$a(anything but space up to the closing paren)".
func variable(s string, i int) (int, kind) {
	n := 0
	j := i + 1
	for j < len(s) {
		c := s[j]
		switch {
		case isIDChar(c):
			n++
			j++
			continue
		case c == '(' && n > 0:
			j++
			for j < len(s) && !isSpace(s[j]) && s[j] != ')' {
				j++
			}
			if j < len(s) && s[j] == ')' {
				return j + 1, kVariable
			}
			return j, kIllegal
		case c == ':' && j+1 < len(s) && s[j+1] == ':':
			j += 2
			continue
		}
		break
	}
	if n == 0 {
		return j, kIllegal
	}
	return j, kVariable
}

// isSpace is sqlite3Isspace.
func isSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// isIDStart: a character an identifier may begin with.
func isIDStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// isIDChar: SQLite's IdChar (every byte of a multi-byte UTF-8 sequence counts).
func isIDChar(c byte) bool { return isIDStart(c) || c >= '0' && c <= '9' || c == '$' }
