package grounding

import (
	"slices"
	"strings"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
)

// NoStatementMarker begins the line a planning run writes when the
// inventory cannot answer the objective with a statement.
const NoStatementMarker = "NO STATEMENT:"

// Deliverable is what a planning run's final text hands the user.
type Deliverable struct {
	// SQL is the body of the one fenced block read as the statement; empty
	// when there is none, or when the text held several candidates.
	SQL string
	// Tag is the first word of that block's info string as written ("" for
	// an untagged block).
	Tag string
	// ForeignTag is set when Tag names another engine than the run's (or is
	// a generic tag like sql, or none): the block is still read, and the
	// guard judges it in the run's dialect.
	ForeignTag bool
	// NoStatement is the reason after a NO STATEMENT: line, when the text
	// holds one and no statement.
	NoStatement string
	// Declined is set when the text held a NO STATEMENT: line.
	Declined bool
	// Candidates counts the distinct statements the text offered at the
	// level that won (blocks tagged for the run's engine, else the other SQL
	// blocks). More than one means no statement was read: Sonde does not
	// pick one of several for the user.
	Candidates int
	// OtherBlocks counts fenced blocks that were not read as the deliverable
	// (prose tags, empty blocks, SQL blocks outranked by one tagged for the
	// run's engine, and every candidate when there were several).
	OtherBlocks int
}

// genericSQLTags are tags that say "SQL" without naming an engine.
var genericSQLTags = []string{"sql", "ansi-sql", "ansisql", "sql92", "mysql", "mariadb", "oracle", "plsql"}

// tagRank says how a block's tag bears on being the deliverable: 2 for the
// run's own engine, 1 for any other SQL tag or none, 0 for a tag that is not
// SQL (text, json, a shell).
func tagRank(tag string, engine contracts.Engine) int {
	t := strings.ToLower(tag)
	if t == strings.ToLower(string(engine)) {
		return 2
	}
	// A tag that names an engine's dialect (engine.Spec.DialectAliases)
	// ranks 2 for the run's own engine, 1 for another.
	for _, s := range enginespec.All() {
		if slices.Contains(s.DialectAliases, t) {
			if s.Name == engine {
				return 2
			}
			return 1
		}
	}
	if t == "" || slices.Contains(genericSQLTags, t) {
		return 1
	}
	return 0
}

// ReadDeliverable reads a planning run's final text. The statement is the
// body of a CommonMark fenced code block (``` or ~~~, three or more, an info
// string without backticks): a block whose tag (the info string's first
// word, case aside) names the run's engine (postgres, postgresql, pgsql for
// PostgreSQL; sqlite, sqlite3; duckdb; mssql, tsql, t-sql, sqlserver)
// outranks every other; failing one, a block tagged sql, tagged for another
// engine, or untagged is read, and the guard judges it in the run's dialect
// (TOP on PostgreSQL is refused there). A block under a tag that is not SQL
// is an illustration. When the winning rank holds more than one distinct
// statement nothing is read (Candidates says how many): the rules ask for
// one block, and guessing which one the user should run is not Sonde's to
// do. Failing a statement, a line that begins with NO STATEMENT: (after
// leading blanks and emphasis marks) is the run's explicit refusal; it also
// outweighs blocks that do not name the run's engine, which then read as
// sketches.
func ReadDeliverable(text string, engine contracts.Engine) Deliverable {
	var d Deliverable
	type block struct {
		sql, tag string
		rank     int
	}
	var blocks []block
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
		sql := strings.TrimSpace(strings.Join(body, "\n"))
		rank := tagRank(tag, engine)
		if sql == "" {
			rank = 0
		}
		blocks = append(blocks, block{sql: sql, tag: tag, rank: rank})
	}
	best := 0
	for _, b := range blocks {
		best = max(best, b.rank)
	}
	var winners []block
	for _, b := range blocks {
		switch {
		case b.rank == 0 || b.rank < best:
			d.OtherBlocks++
		case slices.ContainsFunc(winners, func(w block) bool { return w.sql == b.sql }):
			d.OtherBlocks++ // the same statement twice is one candidate
		default:
			winners = append(winners, b)
		}
	}
	// An explicit NO STATEMENT: line outweighs a block that does not name
	// the run's engine (a sketch of what would be possible); a block that
	// does outweighs the line.
	if d.Declined && best < 2 {
		d.OtherBlocks += len(winners)
		return d
	}
	d.Candidates = len(winners)
	switch len(winners) {
	case 0:
	case 1:
		d.SQL, d.Tag, d.ForeignTag = winners[0].sql, winners[0].tag, best < 2
		d.Declined, d.NoStatement = false, ""
	default:
		d.OtherBlocks += len(winners)
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
