package contracts

import (
	"fmt"
	"unicode/utf8"
)

// IDKind names what an identifier identifies, for the error that refuses
// it.
type IDKind string

// The kinds of identifier that travel as NATS subject tokens or KV and
// object keys.
const (
	// IDConnection: a connection id (the connections file, the registry
	// bucket's key, every request that names a connection).
	IDConnection IDKind = "connection"
	// IDRun: a run id (the ledger subject's last token, the lease key).
	IDRun IDKind = "run"
	// IDCorrelation: an artifact's correlation id (part of its object key).
	IDCorrelation IDKind = "correlation"
)

// MaxIDLength is the longest identifier CheckID accepts, in bytes. A NATS
// server closes a client whose protocol line is longer than its
// max_control_line (4 KB by default) and the client does not come back, so
// nothing a caller sends may grow a subject near that; 64 leaves a subject
// of several ids and prefixes far below it.
const MaxIDLength = 64

// IDError is CheckID's refusal: which kind of identifier, what is wrong with
// it, and how to write one. It never repeats a long or unprintable value.
type IDError struct {
	// Kind is the kind of identifier refused.
	Kind IDKind
	// Value is the refused value, cut to 32 bytes and quoted when shown.
	Value string
	// Reason says what is wrong: empty, too long, or which character.
	Reason string
}

// Error says which identifier was refused and why.
func (e *IDError) Error() string {
	return fmt.Sprintf("%s id %s is not valid: %s", e.Kind, shownID(e.Value), e.Reason)
}

// Code is CodeInvalidID.
func (e *IDError) Code() Code { return CodeInvalidID }

// Fix says how to write a valid identifier of the kind.
func (e *IDError) Fix() string {
	return fmt.Sprintf("a %s id is 1 to %d characters of letters, digits, '-' and '_'", e.Kind, MaxIDLength)
}

// AsError is the refusal as the Error that crosses a boundary.
func (e *IDError) AsError() *Error {
	return &Error{Code: CodeInvalidID, Message: e.Error(), Fix: e.Fix()}
}

// CheckID is the one rule for every identifier that becomes part of a NATS
// subject, a KV key or an object name: 1 to MaxIDLength bytes of ASCII
// letters, digits, '-' and '_'. Dots (subject separators), '*' and '>'
// (wildcards), spaces, control characters and anything outside ASCII are
// refused. The error is an *IDError.
func CheckID(kind IDKind, value string) error {
	switch {
	case value == "":
		return &IDError{Kind: kind, Reason: "it is empty"}
	case len(value) > MaxIDLength:
		return &IDError{Kind: kind, Value: value, Reason: fmt.Sprintf("it is %d bytes long, more than %d", len(value), MaxIDLength)}
	}
	for i := 0; i < len(value); i++ {
		if !idByte(value[i]) {
			r, _ := utf8.DecodeRuneInString(value[i:])
			return &IDError{Kind: kind, Value: value, Reason: fmt.Sprintf("it holds %q at byte %d", r, i)}
		}
	}
	return nil
}

func idByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '-' || b == '_'
}

// shownID quotes at most 32 bytes of an identifier for a message.
func shownID(v string) string {
	if len(v) <= 32 {
		return fmt.Sprintf("%q", v)
	}
	cut := 32
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return fmt.Sprintf("%q…", v[:cut])
}
