package sqlite

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

// CheckRead is the first guard of a read, applied before anything reaches
// SQLite: the text must hold exactly one statement, and that statement must
// start with SELECT or WITH. It returns the statement to run: the text up to
// the end of its one statement, without the ';' and any trailing comments.
//
// It must run before execution because the driver runs every statement of a
// multi-statement text ("select 1; delete from t" runs both). The lexer
// follows SQLite's own tokenizer (tokenize.c) for what can hide a ';':
// '…', "…", `…` and […] quoting with doubled-quote escapes, -- and /* */
// comments. It errs on the side of refusing: a ';' inside a trigger body
// (which SQLite's parser would accept) is refused as a second statement.
//
// Passing this guard proves nothing about what the statement does: WITH may
// introduce a DELETE. The authorizer and the read-only open decide that.
func CheckRead(sql string) (string, *contracts.Refusal) {
	if strings.IndexByte(sql, 0) >= 0 {
		return "", refuse.New(refuse.Unparsable, "the statement contains a NUL byte", "remove the NUL byte; SQLite would ignore everything after it")
	}
	if !utf8.ValidString(sql) {
		return "", refuse.New(refuse.Unparsable, "the statement is not valid UTF-8", "send the statement as UTF-8 text")
	}
	lx := lexer{s: sql}
	first, err := lx.next()
	if err != nil {
		return "", unterminated(err)
	}
	if first.kind == tokEOF || first.kind == tokSemi && lx.onlySemis() {
		return "", refuse.New(refuse.Empty, "the statement is empty (only whitespace, comments or ';')", "send one SELECT statement")
	}
	if kw := strings.ToUpper(first.text); first.kind != tokWord || kw != "SELECT" && kw != "WITH" {
		return "", notASelect(first)
	}
	end := len(sql)
	for {
		t, err := lx.next()
		if err != nil {
			return "", unterminated(err)
		}
		if t.kind == tokEOF {
			break
		}
		if t.kind == tokSemi {
			end = t.pos
			break
		}
	}
	for {
		t, err := lx.next()
		if err != nil {
			return "", unterminated(err)
		}
		switch t.kind {
		case tokEOF:
			return strings.TrimRight(sql[:end], " \t\n\f\r"), nil
		case tokSemi:
			continue
		}
		return "", refuse.New(refuse.NotOneStatement,
			fmt.Sprintf("the text holds more than one statement: after the ';' at byte %d another begins with %s", end, describe(t)),
			"send exactly one SELECT per call: remove the ';' and everything after it, and run any other statement as its own call")
	}
}

func notASelect(t token) *contracts.Refusal {
	fix := "rewrite it as a single SELECT (or WITH … SELECT) that reads what you need; nothing may change the database"
	switch strings.ToUpper(t.text) {
	case "PRAGMA":
		fix = "read the catalog with SELECT … FROM sqlite_master, or ask for the schema; PRAGMA statements are not run"
	case "EXPLAIN":
		fix = "ask for the plan with the plan tool; a read runs a SELECT"
	case "VALUES":
		fix = "write SELECT … instead of VALUES …"
	}
	return refuse.New(refuse.NotASelect,
		fmt.Sprintf("only a SELECT (or WITH … SELECT) may run; this statement begins with %s", describe(t)), fix)
}

func unterminated(err *lexError) *contracts.Refusal {
	return refuse.New(refuse.Unparsable,
		fmt.Sprintf("the %s opened at byte %d is never closed", err.what, err.pos),
		"close it; a quote inside a literal is written twice ('it''s')")
}

func describe(t token) string {
	switch t.kind {
	case tokWord:
		return strings.ToUpper(t.text)
	case tokEOF:
		return "nothing"
	}
	return fmt.Sprintf("%q", t.text)
}

type tokKind int

const (
	tokEOF tokKind = iota
	tokSemi
	tokWord   // keyword or bare identifier
	tokQuoted // string literal or quoted identifier
	tokOther  // any other character
)

type token struct {
	kind tokKind
	pos  int
	text string
}

type lexError struct {
	what string
	pos  int
}

// lexer splits SQL into the tokens that matter for statement boundaries.
type lexer struct {
	s string
	i int
}

// next returns the next token, skipping whitespace and comments.
func (l *lexer) next() (token, *lexError) {
	s := l.s
	for l.i < len(s) {
		c := s[l.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r':
			l.i++
		case c == '-' && l.i+1 < len(s) && s[l.i+1] == '-':
			if nl := strings.IndexByte(s[l.i:], '\n'); nl >= 0 {
				l.i += nl + 1
			} else {
				l.i = len(s)
			}
		case c == '/' && l.i+1 < len(s) && s[l.i+1] == '*':
			// An unterminated block comment runs to the end, as in SQLite.
			if end := strings.Index(s[l.i+2:], "*/"); end >= 0 {
				l.i += 2 + end + 2
			} else {
				l.i = len(s)
			}
		case c == ';':
			l.i++
			return token{kind: tokSemi, pos: l.i - 1, text: ";"}, nil
		case c == '\'' || c == '"' || c == '`':
			start := l.i
			j := l.i + 1
			for {
				k := strings.IndexByte(s[j:], c)
				if k < 0 {
					what := "quoted identifier"
					if c == '\'' {
						what = "string literal"
					}
					return token{}, &lexError{what: what, pos: start}
				}
				j += k + 1
				if j < len(s) && s[j] == c { // a doubled quote stays inside
					j++
					continue
				}
				break
			}
			l.i = j
			return token{kind: tokQuoted, pos: start, text: s[start:j]}, nil
		case c == '[':
			start := l.i
			k := strings.IndexByte(s[l.i:], ']')
			if k < 0 {
				return token{}, &lexError{what: "[bracketed identifier]", pos: start}
			}
			l.i += k + 1
			return token{kind: tokQuoted, pos: start, text: s[start:l.i]}, nil
		case isIDChar(c):
			start := l.i
			for l.i < len(s) && isIDChar(s[l.i]) {
				l.i++
			}
			return token{kind: tokWord, pos: start, text: s[start:l.i]}, nil
		default:
			l.i++
			return token{kind: tokOther, pos: l.i - 1, text: s[l.i-1 : l.i]}, nil
		}
	}
	return token{kind: tokEOF, pos: len(s)}, nil
}

// onlySemis reports whether nothing but ';', whitespace and comments remain.
func (l *lexer) onlySemis() bool {
	for {
		t, err := l.next()
		if err != nil || t.kind != tokSemi {
			return err == nil && t.kind == tokEOF
		}
	}
}

// isIDChar: SQLite's identifier characters (every byte of a multi-byte UTF-8
// sequence counts as one).
func isIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '$' || c >= 0x80
}
