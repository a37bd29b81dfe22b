package sqlite

import "strconv"

// Parameters is the number of values a statement binds, as SQLite counts
// them (sqlite3_bind_parameter_count): the largest parameter index, where
// "?NNN" is index NNN, a bare "?" is one past the largest index so far, and
// a named parameter (":a", "@a", "$a") takes the next index the first time
// its name appears and that same index ever after. An index past limit (an
// absurd ?NNN) answers limit+1, so that the count is refused, never allocated.
// named reports a named parameter, which a list of values cannot bind.
func Parameters(sql string, limit int) (count int, named bool) {
	largest := 0
	seen := map[string]bool{}
	for _, t := range lex(sql) {
		if t.kind != kVariable {
			continue
		}
		switch {
		case t.text == "?":
			largest++
		case t.text[0] == '?':
			n, err := strconv.Atoi(t.text[1:])
			if err != nil || n > limit {
				return limit + 1, len(seen) > 0
			}
			largest = max(largest, n)
		case !seen[t.text]:
			seen[t.text] = true
			largest++
		}
	}
	return largest, len(seen) > 0
}
