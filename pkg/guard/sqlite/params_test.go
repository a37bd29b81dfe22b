package sqlite

import "testing"

func TestParameters(t *testing.T) {
	for _, c := range []struct {
		sql   string
		want  int
		named bool
	}{
		{"SELECT 1", 0, false},
		{"SELECT ?", 1, false},
		{"SELECT ?, ?", 2, false},
		{"SELECT ?3", 3, false},
		{"SELECT ?3, ?", 4, false},
		{"SELECT ?2, ?1", 2, false},
		{"SELECT :a, :a, @b", 2, true},
		{"SELECT ?1, :a", 2, true},
		{"SELECT '?', \"?\", [?] -- ?\n /* ? */", 0, false},
		{"SELECT ?99999999999999999999", 129, false},
		{"SELECT ?200", 129, false},
	} {
		if got, named := Parameters(c.sql, 128); got != c.want || named != c.named {
			t.Errorf("%q: %d parameters (named %v), want %d (%v)", c.sql, got, named, c.want, c.named)
		}
	}
}
