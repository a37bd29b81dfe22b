package connections

import (
	"fmt"
	"strings"
)

// Error is one problem in a connections file, located by line and field.
type Error struct {
	// Line is the 1-based line of the offending node; 0 when unknown.
	Line int
	// ID is the connection's id when known.
	ID string
	// Field is the field at fault, e.g. "engine"; empty for the entry itself.
	Field string
	// Msg says what is wrong and what is expected.
	Msg string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("connections")
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
	}
	if e.ID != "" {
		fmt.Fprintf(&b, ": connection %q", e.ID)
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}
