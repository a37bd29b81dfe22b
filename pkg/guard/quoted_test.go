package guard

import "testing"

// TestReadQuoted: a quoted part is read to its closer, a doubled closer is
// one character of the text, and an unclosed quote is not read.
func TestReadQuoted(t *testing.T) {
	for _, c := range []struct {
		s      string
		i      int
		closer byte
		text   string
		next   int
		ok     bool
	}{
		{`"Order Items".x`, 0, '"', "Order Items", 13, true},
		{`"a""b"`, 0, '"', `a"b`, 6, true},
		{`""`, 0, '"', "", 2, true},
		{`[a]]b].c`, 0, ']', "a]b", 6, true},
		{`x.[dbo]`, 2, ']', "dbo", 7, true},
		{`'it''s' rest`, 0, '\'', "it's", 7, true},
		{"`a.b`", 0, '`', "a.b", 5, true},
		{`"a""`, 0, '"', "", 4, false}, // the doubled quote escapes; nothing closes
		{`"open`, 0, '"', "", 5, false},
		{`[x`, 0, ']', "", 2, false},
	} {
		text, next, ok := ReadQuoted(c.s, c.i, c.closer)
		if text != c.text || next != c.next || ok != c.ok {
			t.Errorf("ReadQuoted(%q, %d, %q) = %q, %d, %v; want %q, %d, %v", c.s, c.i, c.closer, text, next, ok, c.text, c.next, c.ok)
		}
	}
}
