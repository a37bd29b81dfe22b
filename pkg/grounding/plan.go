package grounding

import (
	"strings"

	"github.com/sondehq/sonde/contracts"
)

// NoStatementMarker begins the line a planning run writes when the
// inventory cannot answer the objective with a statement.
const NoStatementMarker = "NO STATEMENT:"

// Deliverable is what a planning run's final text hands the user.
type Deliverable struct {
	// SQL is the body of the first fenced code block tagged with the
	// connection's engine id; empty when there is none.
	SQL string
	// NoStatement is the reason after a NO STATEMENT: line, when the text
	// holds one and no statement.
	NoStatement string
	// Declined is set when the text held a NO STATEMENT: line.
	Declined bool
	// OtherBlocks counts fenced blocks that were not read as the deliverable
	// (another tag, no tag, or a second block with the engine's tag).
	OtherBlocks int
}

// ReadDeliverable reads a planning run's final text. The statement is the
// first CommonMark fenced code block (``` or ~~~, three or more, an info
// string without backticks) whose info string's first word is the engine's
// id, case aside; a block under any other tag is an illustration, not the
// deliverable. Failing that, a line that begins with NO STATEMENT: (after
// leading blanks and emphasis marks) is the run's explicit refusal.
func ReadDeliverable(text string, engine contracts.Engine) Deliverable {
	var d Deliverable
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		indent, char, n, info, ok := openingFence(lines[i])
		if !ok {
			if d.NoStatement == "" && !d.Declined {
				if reason, found := noStatement(lines[i]); found {
					d.Declined, d.NoStatement = true, reason
				}
			}
			continue
		}
		var body []string
		j := i + 1
		for ; j < len(lines); j++ {
			if closingFence(lines[j], char, n) {
				break
			}
			body = append(body, stripIndent(lines[j], indent))
		}
		i = j // an unclosed block runs to the end of the text, as CommonMark reads it
		tag, _, _ := strings.Cut(strings.TrimSpace(info), " ")
		if d.SQL == "" && strings.EqualFold(tag, string(engine)) {
			if sql := strings.TrimSpace(strings.Join(body, "\n")); sql != "" {
				d.SQL = sql
				continue
			}
		}
		d.OtherBlocks++
	}
	if d.SQL != "" {
		d.Declined, d.NoStatement = false, ""
	}
	return d
}

// openingFence reads a CommonMark opening code fence: up to three spaces of
// indentation, three or more backticks or tildes, and an info string (which
// may not hold a backtick after a backtick fence).
func openingFence(line string) (indent int, char byte, n int, info string, ok bool) {
	for indent < len(line) && indent < 4 && line[indent] == ' ' {
		indent++
	}
	if indent > 3 || indent >= len(line) {
		return 0, 0, 0, "", false
	}
	char = line[indent]
	if char != '`' && char != '~' {
		return 0, 0, 0, "", false
	}
	for indent+n < len(line) && line[indent+n] == char {
		n++
	}
	if n < 3 {
		return 0, 0, 0, "", false
	}
	info = line[indent+n:]
	if char == '`' && strings.ContainsRune(info, '`') {
		return 0, 0, 0, "", false
	}
	return indent, char, n, info, true
}

// closingFence reads a closing fence of at least n of char, nothing after it
// but blanks.
func closingFence(line string, char byte, n int) bool {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return false
	}
	m := 0
	for m < len(t) && t[m] == char {
		m++
	}
	return m >= n && strings.TrimSpace(t[m:]) == ""
}

func stripIndent(line string, indent int) string {
	for k := 0; k < indent && strings.HasPrefix(line, " "); k++ {
		line = line[1:]
	}
	return line
}

// noStatement reads a NO STATEMENT: line, tolerating the emphasis and list
// marks a model puts around it.
func noStatement(line string) (string, bool) {
	t := strings.TrimLeft(line, " \t>*_-#")
	if len(t) < len(NoStatementMarker) || !strings.EqualFold(t[:len(NoStatementMarker)], NoStatementMarker) {
		return "", false
	}
	reason := strings.TrimSpace(strings.Trim(t[len(NoStatementMarker):], "*_ \t"))
	if reason == "" {
		reason = "(no reason given)"
	}
	return reason, true
}
