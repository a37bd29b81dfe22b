package executor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/sondehq/sonde/contracts"
	enginespec "github.com/sondehq/sonde/pkg/engine"
	"github.com/sondehq/sonde/pkg/grounding"
	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/services/executor/internal/engine"
	"github.com/sondehq/sonde/services/executor/internal/refuse"
)

// The thresholds of the profile findings (docs/profiles.md). Each finding
// is a predicate over the counts of one profile; its Detail states the
// figures and the threshold it passed.
const (
	// FindingMinRows is the fewest rows a table (or its sample) must hold
	// for high_null, constant and low_cardinality: over fewer, a ratio says
	// nothing.
	FindingMinRows = 10
	// HighNullRatio: high_null when at least this share of the rows holds
	// no value in the column.
	HighNullRatio = 0.5
	// LowCardinalityMaxDistinct and LowCardinalityRatio: low_cardinality
	// when a column holds between 2 and LowCardinalityMaxDistinct distinct
	// values, and no more than LowCardinalityRatio of its present values
	// are distinct (distribution depth and past).
	LowCardinalityMaxDistinct = 10
	LowCardinalityRatio       = 0.01
	// PIIPatternRatio: suspected_pii at pattern depth when at least this
	// share of a text column's present values is email-shaped, or holds a
	// run of engine.DigitRunLength digits or more.
	PIIPatternRatio = 0.5
	// maxOffered bounds the names a refusal offers back.
	maxOffered = 6
)

// piiWords are the words of a column name that make it suspected_pii by
// name: a word of the name (split at non-letters and at lower-to-upper
// case changes) or two adjacent words run together.
var piiWords = map[string]bool{
	"email": true, "mail": true, "phone": true, "telephone": true, "mobile": true, "fax": true,
	"ssn": true, "birth": true, "birthdate": true, "birthday": true, "dob": true,
	"address": true, "street": true, "zip": true, "zipcode": true, "postal": true, "postcode": true,
	"passport": true, "iban": true, "card": true, "cardnumber": true, "creditcard": true, "cvv": true,
	"taxid": true, "nationalid": true, "firstname": true, "lastname": true, "surname": true,
	"fullname": true, "salary": true, "password": true, "ipaddress": true,
}

// profileColumns are the columns of a profile's artifact: one row per
// covered column, counts only.
var profileColumns = []contracts.Column{{Name: "column", Type: "text"}, {Name: "type", Type: "text"},
	{Name: "present", Type: "integer"}, {Name: "nulls", Type: "integer"}, {Name: "distinct", Type: "integer"},
	{Name: "email_like", Type: "integer"}, {Name: "digit_run", Type: "integer"}}

// profileOp answers OpProfile: req.Table (the model's spelling) resolved
// against the readable relations, described, and its columns from
// req.FromColumn counted by one composed aggregate (engine.Profiler).
func (s *Service) profileOp(ctx context.Context, eng engine.Engine, req *contracts.ExecRequest, ereq engine.Request) contracts.ExecReply {
	depth, ref := profileArgs(req)
	if ref != nil {
		return refused(ref)
	}
	prof, ok := eng.(engine.Profiler)
	cat, ok2 := eng.(engine.Cataloger)
	if !ok || !ok2 {
		return refused(refuse.New(refuse.Unsupported,
			fmt.Sprintf("the %s executor cannot profile a table yet", s.engine),
			"measure the table with run_read_query: count(*) and count(column) per column"))
	}
	fold := enginespec.FoldsCase(s.engine)
	l, err := list(ctx, cat, ereq, selection{}, fold)
	reply := func() contracts.ExecReply {
		return contracts.ExecReply{DurationMs: l.cost.Duration.Milliseconds(), Statements: l.cost.Statements}
	}
	if failure, failed := s.failure(ctx, contracts.OpProfile, eng, err, req, reply()); failed {
		return failure
	}
	rel, ref := resolveTable(req.Table, l.matched, fold)
	if ref != nil && ref.Code == contracts.RefuseTableNotInventoried {
		// Absent from the relations; a sequence or a macro of that name is
		// confirmed and refused as not profilable, never denied.
		other, err := prof.Unprofilable(ctx, ereq)
		l.spend(other)
		if failure, failed := s.failure(ctx, contracts.OpProfile, eng, err, req, reply()); failed {
			return failure
		}
		if o, r := resolveTable(req.Table, other.Relations, fold); r == nil {
			ref = refuse.New(contracts.RefuseObjectNotProfilable,
				fmt.Sprintf("%s is a %s, which holds no rows to profile", grounding.QualifiedName(o.Schema, o.Name), o.EngineKind),
				"profile a table or a view: "+offer(req.Table, l.matched))
		}
	}
	if ref != nil {
		r := refused(ref)
		r.DurationMs, r.Statements = reply().DurationMs, reply().Statements
		return r
	}
	rels, err := l.describe(ctx, cat, ereq, []contracts.Relation{rel})
	if failure, failed := s.failure(ctx, contracts.OpProfile, eng, err, req, reply()); failed {
		return failure
	}
	if len(rels) != 1 {
		r := refused(refuse.New(contracts.RefuseTableNotInventoried,
			fmt.Sprintf("%s is no longer in the catalog", grounding.QualifiedName(rel.Schema, rel.Name)),
			"list what exists with inspect_schema {}"))
		r.DurationMs, r.Statements = reply().DurationMs, reply().Statements
		return r
	}
	rel = rels[0]
	start, ref := startColumn(rel, req.FromColumn)
	if ref != nil {
		r := refused(ref)
		r.DurationMs, r.Statements = reply().DurationMs, reply().Statements
		return r
	}
	end := min(start+contracts.MaxProfileColumns, len(rel.Columns))
	covered := rel.Columns[start:end]
	res, err := prof.Profile(ctx, ereq, engine.ProfileRequest{Relation: rel, Columns: covered, Depth: depth})
	l.cost.SQL = append(l.cost.SQL, res.SQL)
	l.cost.Duration += res.Duration
	l.cost.Statements += res.Statements
	if failure, failed := s.failure(ctx, contracts.OpProfile, eng, err, req, reply()); failed {
		return failure
	}

	tp := &contracts.TableProfile{Table: contracts.NameRef{Schema: rel.Schema, Name: rel.Name}, Depth: depth,
		Rows: res.Rows, Sampled: res.Sampled, Columns: []contracts.ColumnProfile{}}
	if res.Sampled {
		tp.SampleRows = res.SampleRows
	}
	if end < len(rel.Columns) {
		tp.Uncovered, tp.NextColumn = len(rel.Columns)-end, rel.Columns[end].Name
	}
	for i, c := range covered {
		n := res.Columns[i]
		tp.Columns = append(tp.Columns, contracts.ColumnProfile{Name: c.Name, Type: c.Type, Present: n.Present,
			Distinct: n.Distinct, NoDistinct: n.NoDistinct, EmailLike: n.EmailLike, DigitRun: n.DigitRun})
	}
	tp.Findings = findings(tp, rel, s.engine)

	art := contracts.Artifact{
		ArtifactSummary: contracts.ArtifactSummary{CorrelationID: req.CorrelationID, Columns: profileColumns, Rows: len(tp.Columns)},
		RunID:           req.RunID, StepID: req.StepID, ConnectionID: req.ConnectionID, Profile: req.Profile,
		SQL: strings.Join(l.cost.SQL, ";\n"),
	}
	for _, c := range tp.Columns {
		art.Data = append(art.Data, []any{c.Name, c.Type, c.Present, tp.Rows - c.Present, opt(c.Distinct), opt(c.EmailLike), opt(c.DigitRun)})
	}
	if b, err := json.Marshal(art.Data); err == nil {
		art.Bytes = len(b)
	}
	out := reply()
	if f, failed := s.put(ctx, art, out); failed {
		return f
	}
	sum := art.ArtifactSummary
	out.Status, out.Artifact, out.Profile = contracts.ExecOK, &sum, tp
	return out
}

// opt is a count for an artifact row: null when not measured.
func opt(n *int64) any {
	if n == nil {
		return nil
	}
	return *n
}

// profileArgs checks the request's spelling, depth and fromColumn.
func profileArgs(req *contracts.ExecRequest) (contracts.ProfileDepth, *contracts.Refusal) {
	depth := req.Depth
	if depth == "" {
		depth = contracts.DepthBasic
	}
	if !slices.Contains(contracts.ProfileDepths, depth) {
		names := make([]string, len(contracts.ProfileDepths))
		for i, d := range contracts.ProfileDepths {
			names[i] = string(d)
		}
		return "", refuse.New(refuse.BadRequest, fmt.Sprintf("unknown depth %s", grounding.Quote(truncateName(string(depth)))),
			"use one of: "+strings.Join(names, ", "))
	}
	switch {
	case strings.TrimSpace(req.Table) == "":
		return "", refuse.New(refuse.BadRequest, "the request names no table", `name the table to profile, e.g. {"table":"orders"}`)
	case len(req.Table) > maxSelector:
		return "", refuse.New(refuse.BadRequest, fmt.Sprintf("the table argument is %d bytes, more than %d", len(req.Table), maxSelector),
			"name a table as the inventory lists it")
	case len(req.FromColumn) > maxSelector:
		return "", refuse.New(refuse.BadRequest, fmt.Sprintf("the fromColumn argument is %d bytes, more than %d", len(req.FromColumn), maxSelector),
			"name a column of the table, or leave fromColumn out")
	}
	return depth, nil
}

// truncateName shortens attacker text echoed in a refusal.
func truncateName(s string) string {
	if r := []rune(s); len(r) > 80 {
		return string(r[:80]) + "…"
	}
	return s
}

// splitSpelling reads a table spelling as address segments: parts
// separated by dots, a part in "double quotes" or [brackets] taken
// literally (a doubled closer stands for itself) and marked quoted. A
// spelling that does not read (an unclosed quote) is one literal segment.
func splitSpelling(s string) (parts []string, quoted []bool) {
	i := 0
	for {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		var part strings.Builder
		q := false
		if i < len(s) && (s[i] == '"' || s[i] == '[') {
			closer := byte('"')
			if s[i] == '[' {
				closer = ']'
			}
			q = true
			text, next, ok := guard.ReadQuoted(s, i, closer)
			if !ok {
				return []string{s}, []bool{false}
			}
			part.WriteString(text)
			i = next
			for i < len(s) && s[i] == ' ' {
				i++
			}
		} else {
			j := i
			for j < len(s) && s[j] != '.' {
				j++
			}
			part.WriteString(strings.TrimRight(s[i:j], " "))
			i = j
		}
		parts, quoted = append(parts, part.String()), append(quoted, q)
		if i >= len(s) {
			return parts, quoted
		}
		if s[i] != '.' {
			return []string{s}, []bool{false}
		}
		i++
	}
}

// resolveTable resolves a spelling against rels by the rule of the
// reference (an address ENDS with the spelling, segment by segment; the
// most qualified match wins; equal matches are refused, naming them):
//
//   - on an engine whose names fold (fold: SQLite, DuckDB, SQL Server)
//     segments compare case-insensitively, as the engine resolves them, so
//     "customer" answering main.Customer and s2.customer is ambiguous; on
//     PostgreSQL they compare exactly first, and only when nothing matches
//     exactly case-insensitively (Unicode simple folding), so "genre" finds
//     "Genre" but never chooses between "Genre" and "GENRE";
//   - a spelling of more segments than an address (schema.name) matches
//     nothing: a named qualifier is never matched against a bare entry;
//   - when that reading matches nothing, the whole spelling is tried as
//     one name, for a table whose name holds a dot, a quote or a bracket.
//
// Unknown spellings are refused table_not_inventoried, offering names the
// refusal would then accept.
func resolveTable(spelling string, rels []contracts.Relation, fold bool) (contracts.Relation, *contracts.Refusal) {
	parts, _ := splitSpelling(spelling)
	readings := [][]string{parts}
	if whole := strings.TrimSpace(spelling); len(parts) > 1 || parts[0] != whole {
		readings = append(readings, []string{whole})
	}
	for _, segs := range readings {
		if slices.Contains(segs, "") || len(segs) > 2 {
			continue
		}
		for _, eq := range comparisons[fold] {
			var found []contracts.Relation
			for _, r := range rels {
				addr := []string{r.Schema, r.Name}
				tail := addr[len(addr)-len(segs):]
				match := true
				for i := range segs {
					if !eq(tail[i], segs[i]) {
						match = false
						break
					}
				}
				if match {
					found = append(found, r)
				}
			}
			switch {
			case len(found) == 1:
				return found[0], nil
			case len(found) > 1:
				names := make([]string, 0, min(len(found), maxOffered))
				for _, r := range found[:min(len(found), maxOffered)] {
					names = append(names, grounding.QualifiedName(r.Schema, r.Name))
				}
				more := ""
				if len(found) > maxOffered {
					more = fmt.Sprintf(" and %d more", len(found)-maxOffered)
				}
				return contracts.Relation{}, refuse.New(contracts.RefuseTableSpellingAmbiguous,
					fmt.Sprintf("%s names %d tables equally well: %s%s", grounding.Quote(truncateName(spelling)), len(found), strings.Join(names, ", "), more),
					"qualify the table with its schema, exactly as one of these is written")
			}
		}
	}
	return contracts.Relation{}, refuse.New(contracts.RefuseTableNotInventoried,
		fmt.Sprintf("no readable table or view is named %s", grounding.Quote(truncateName(spelling))),
		"profile one the inventory lists: "+offer(spelling, rels))
}

// comparisons are the segment comparisons resolveTable tries in turn, by
// whether the engine folds names.
var comparisons = map[bool][]func(a, b string) bool{
	false: {func(a, b string) bool { return a == b }, strings.EqualFold},
	true:  {strings.EqualFold},
}

// offer names a few relations a not-inventoried refusal would accept:
// those whose name shares a word with the spelling first, then the first
// ones in order.
func offer(spelling string, rels []contracts.Relation) string {
	if len(rels) == 0 {
		return "this connection has no readable table (inspect_schema {} lists what exists)"
	}
	want := strings.ToLower(spelling)
	if i := strings.LastIndexByte(want, '.'); i >= 0 {
		want = want[i+1:]
	}
	want = strings.Trim(want, `"[] `)
	var picked []contracts.Relation
	seen := map[string]bool{}
	pick := func(r contracts.Relation) {
		if len(picked) < maxOffered && !seen[r.QualifiedName()] {
			seen[r.QualifiedName()] = true
			picked = append(picked, r)
		}
	}
	if want != "" {
		for _, r := range rels {
			n := strings.ToLower(r.Name)
			if strings.Contains(n, want) || strings.Contains(want, n) {
				pick(r)
			}
		}
	}
	for _, r := range rels {
		pick(r)
	}
	names := make([]string, len(picked))
	for i, r := range picked {
		names[i] = grounding.QualifiedName(r.Schema, r.Name)
	}
	out := strings.Join(names, ", ")
	if len(rels) > len(picked) {
		out += fmt.Sprintf(" (%d readable in all; inspect_schema lists them)", len(rels))
	}
	return out
}

// startColumn finds where a profile from fromColumn starts: the column of
// that name (exactly, else case-insensitively when that names one).
func startColumn(rel contracts.Relation, from string) (int, *contracts.Refusal) {
	if from == "" {
		return 0, nil
	}
	for i, c := range rel.Columns {
		if c.Name == from {
			return i, nil
		}
	}
	at := -1
	for i, c := range rel.Columns {
		if strings.EqualFold(c.Name, from) {
			if at >= 0 {
				at = -2
				break
			}
			at = i
		}
	}
	if at >= 0 {
		return at, nil
	}
	names := make([]string, 0, maxOffered)
	for _, c := range rel.Columns[:min(len(rel.Columns), maxOffered)] {
		names = append(names, grounding.Quote(c.Name))
	}
	return 0, refuse.New(contracts.RefuseColumnNotInTable,
		fmt.Sprintf("%s has no column named %s", grounding.QualifiedName(rel.Schema, rel.Name), grounding.Quote(truncateName(from))),
		fmt.Sprintf("leave fromColumn out to start at its first column, or name one of its %d columns (%s…), as the last profile's next column says", len(rel.Columns), strings.Join(names, ", ")))
}

// findings are the server's findings over a profile and the described
// relation.
func findings(tp *contracts.TableProfile, rel contracts.Relation, eng contracts.Engine) []contracts.Finding {
	out := []contracts.Finding{}
	over := "rows"
	if tp.Sampled {
		over = "sampled rows"
	}
	for _, c := range tp.Columns {
		nulls := tp.Rows - c.Present
		if tp.Rows >= FindingMinRows && float64(nulls) >= HighNullRatio*float64(tp.Rows) {
			out = append(out, contracts.Finding{Code: contracts.FindingHighNull, Column: c.Name,
				Detail: fmt.Sprintf("%d of %d %s (%s) hold no value; threshold: at least %s of at least %d rows",
					nulls, tp.Rows, over, percent(nulls, tp.Rows), percent100(HighNullRatio), FindingMinRows)})
		}
		if c.Distinct != nil && tp.Rows >= FindingMinRows {
			d := *c.Distinct
			switch {
			case d == 1:
				out = append(out, contracts.Finding{Code: contracts.FindingConstant, Column: c.Name,
					Detail: fmt.Sprintf("all %d present values of %d %s are one value; threshold: exactly 1 distinct value over at least %d rows",
						c.Present, tp.Rows, over, FindingMinRows)})
			case d >= 2 && d <= LowCardinalityMaxDistinct && float64(d) <= LowCardinalityRatio*float64(c.Present):
				out = append(out, contracts.Finding{Code: contracts.FindingLowCardinality, Column: c.Name,
					Detail: fmt.Sprintf("%d distinct values among %d present; threshold: 2 to %d distinct, and at most %s of the present values",
						d, c.Present, LowCardinalityMaxDistinct, percent100(LowCardinalityRatio))})
			}
		}
		var why []string
		if w := piiWord(c.Name); w != "" {
			why = append(why, fmt.Sprintf("its name holds the word %q", w))
		}
		for _, shape := range []struct {
			n    *int64
			what string
		}{{c.EmailLike, "are email-shaped"}, {c.DigitRun, fmt.Sprintf("hold a run of %d or more digits", engine.DigitRunLength)}} {
			if shape.n != nil && c.Present > 0 && float64(*shape.n) >= PIIPatternRatio*float64(c.Present) {
				why = append(why, fmt.Sprintf("%d of %d present values (%s) %s (threshold %s)",
					*shape.n, c.Present, percent(*shape.n, c.Present), shape.what, percent100(PIIPatternRatio)))
			}
		}
		if len(why) > 0 {
			out = append(out, contracts.Finding{Code: contracts.FindingSuspectedPII, Column: c.Name,
				Detail: "a suspicion, not a finding of personal data: " + strings.Join(why, "; ")})
		}
	}
	if spec, _ := enginespec.Lookup(eng); !spec.Capabilities.IndexesForeignKeys {
		// DuckDB builds an index for every foreign key itself.
		for _, fk := range rel.ForeignKeys {
			if !leadsAnIndex(rel, fk.Columns) {
				out = append(out, contracts.Finding{Code: contracts.FindingFKUnindexed, Column: strings.Join(fk.Columns, ", "),
					Detail: fmt.Sprintf("the foreign key (%s) to %s is not the leading columns of any index, primary key or unique constraint, so a join or a delete of the parent scans this table",
						quoteAll(fk.Columns), grounding.QualifiedName(fk.RefSchema, fk.RefName))})
			}
		}
	}
	return out
}

// leadsAnIndex reports whether cols are the leading columns, in any order,
// of the primary key, a unique constraint or an index of rel: an index
// serves the columns it leads on.
func leadsAnIndex(rel contracts.Relation, cols []string) bool {
	if len(cols) == 0 {
		return true
	}
	keys := append([][]string{rel.PrimaryKey}, rel.Unique...)
	for _, ix := range rel.Indexes {
		keys = append(keys, ix.Columns)
	}
	for _, k := range keys {
		if len(k) < len(cols) {
			continue
		}
		lead := k[:len(cols)]
		all := true
		for _, c := range cols {
			if !slices.Contains(lead, c) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// piiWord returns the word of a column name that suggests personal data.
func piiWord(name string) string {
	words := nameWords(name)
	for i, w := range words {
		if piiWords[w] {
			return w
		}
		if i+1 < len(words) && piiWords[w+words[i+1]] {
			return w + words[i+1]
		}
	}
	return ""
}

// nameWords splits a column name into lower-case words at non-letters and
// at a lower-to-upper case change (BirthDate, e_mail → birth, date; e, mail).
func nameWords(name string) []string {
	var (
		words []string
		cur   []rune
		prev  rune
	)
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	for _, r := range name {
		switch {
		case !unicode.IsLetter(r):
			flush()
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			flush()
			cur = append(cur, r)
		default:
			cur = append(cur, r)
		}
		prev = r
	}
	flush()
	// "e_mail" and "E-Mail" read as email.
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "e" && words[i+1] == "mail" {
			words = append(append(words[:i:i], "email"), words[i+2:]...)
		}
	}
	return words
}

func percent(n, of int64) string {
	if of == 0 {
		return "0%"
	}
	return fmt.Sprintf("%.0f%%", 100*float64(n)/float64(of))
}

func percent100(r float64) string { return fmt.Sprintf("%g%%", 100*r) }

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = grounding.Quote(n)
	}
	return strings.Join(q, ", ")
}
