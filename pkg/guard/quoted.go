package guard

import "strings"

// ReadQuoted reads the quoted part of s that opens at s[i] and ends at
// closer — a "quoted" or [bracketed] identifier, a 'string' — as SQL
// writes them: a doubled closer inside stands for one. It returns the text
// between the quotes, so read, and the index just past the closing quote;
// ok is false when nothing closes it. Every reader of identifier spellings
// outside an engine's own parser (readable patterns, index drafts, table
// spellings) reads quotes with it.
func ReadQuoted(s string, i int, closer byte) (text string, next int, ok bool) {
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		if s[j] != closer {
			b.WriteByte(s[j])
			continue
		}
		if j+1 < len(s) && s[j+1] == closer {
			b.WriteByte(closer)
			j++
			continue
		}
		return b.String(), j + 1, true
	}
	return "", len(s), false
}
