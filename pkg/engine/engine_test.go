package engine

import (
	"slices"
	"strings"
	"testing"

	"github.com/sondehq/sonde/contracts"
	"github.com/sondehq/sonde/pkg/guard"
)

// TestEverySpecIsWhole: each listed engine declares every fact the rest of
// Sonde reads, and no two engines claim the same token or fence tag. (That
// its Names match what its guard reader reports, and that the executor can
// open it, is held by the executor's TestEveryEngineIsServed.)
func TestEverySpecIsWhole(t *testing.T) {
	if len(All()) == 0 {
		t.Fatal("no engine is listed")
	}
	seen := map[contracts.Engine]bool{}
	tags := map[string]contracts.Engine{}
	for _, s := range All() {
		name := string(s.Name)
		if err := contracts.CheckID("engine", name); err != nil || name != strings.ToLower(name) {
			t.Errorf("engine %q is not a lower-case subject token: %v", name, err)
		}
		if seen[s.Name] {
			t.Errorf("engine %s is listed twice", name)
		}
		seen[s.Name] = true
		if s.Label == "" || s.Dialect == "" {
			t.Errorf("%s: label %q, dialect %q: both are needed", name, s.Label, s.Dialect)
		}
		if len(s.DialectHints) == 0 || slices.Contains(s.DialectHints, "") {
			t.Errorf("%s: dialect hints %q: at least one, none empty", name, s.DialectHints)
		}
		if !slices.Contains(s.DialectAliases, name) {
			t.Errorf("%s: its fence tags %q lack its own name", name, s.DialectAliases)
		}
		for _, a := range s.DialectAliases {
			if a != strings.ToLower(a) || a == "" {
				t.Errorf("%s: fence tag %q is not lower case", name, a)
			}
			if other, dup := tags[a]; dup {
				t.Errorf("fence tag %q names both %s and %s", a, other, name)
			}
			tags[a] = s.Name
		}
		if s.DefaultSchema == "" {
			t.Errorf("%s: no default schema", name)
		}
		if s.FileBased == (s.DefaultPort != "") {
			t.Errorf("%s: file-based %v with default port %q: a server engine needs a port, a file engine has none", name, s.FileBased, s.DefaultPort)
		}
		if got := s.Names.String(); got != "exact" && got != "fold" && got != "ascii-fold" {
			t.Errorf("%s: name rule %v is not one the guard knows", name, s.Names)
		}
		if s.Safety.Guard == "" || s.Safety.ReadOnly == "" || s.Safety.LastLine == "" {
			t.Errorf("%s: safety %+v: the console says all three", name, s.Safety)
		}
		if s.ServiceName() != contracts.QueueExecutorPrefix+name {
			t.Errorf("%s: service name %q", name, s.ServiceName())
		}
		if got, ok := Lookup(s.Name); !ok || got.Name != s.Name {
			t.Errorf("Lookup(%s) = %v, %v", name, got.Name, ok)
		}
	}
	if !slices.Equal(Names(), func() []contracts.Engine {
		var n []contracts.Engine
		for _, s := range All() {
			n = append(n, s.Name)
		}
		return n
	}()) {
		t.Errorf("Names %v is not the list's order", Names())
	}
}

// TestUndeclaredEngineIsNeverFolded: an engine the list does not hold is
// not found, and is never given a folding name rule, a default schema or a
// label of another engine: its names compare exactly.
func TestUndeclaredEngineIsNeverFolded(t *testing.T) {
	for _, e := range []contracts.Engine{"mysql", "", "POSTGRES", "sqlite "} {
		if s, ok := Lookup(e); ok {
			t.Errorf("Lookup(%q) found %+v", e, s)
		}
		if FoldsCase(e) {
			t.Errorf("FoldsCase(%q) is true for an undeclared engine", e)
		}
		if Label(e) != string(e) {
			t.Errorf("Label(%q) = %q", e, Label(e))
		}
	}
	// The declared rules still hold: PostgreSQL compares exactly, the rest fold.
	for _, s := range All() {
		if FoldsCase(s.Name) != (s.Names != guard.NamesExact) {
			t.Errorf("FoldsCase(%s) = %v under %v", s.Name, FoldsCase(s.Name), s.Names)
		}
	}
	if FoldsCase(contracts.EnginePostgres) || !FoldsCase(contracts.EngineSQLite) {
		t.Error("PostgreSQL must compare names exactly and SQLite fold them")
	}
}

// TestSpecsAreCopies: what Lookup and All return cannot change the list.
func TestSpecsAreCopies(t *testing.T) {
	s, _ := Lookup(contracts.EngineSQLite)
	s.DialectHints[0] = "changed"
	s.DialectAliases[0] = "changed"
	all := All()
	all[0].DialectHints[0] = "changed"
	again, _ := Lookup(contracts.EngineSQLite)
	first, _ := Lookup(all[0].Name)
	if again.DialectHints[0] == "changed" || again.DialectAliases[0] == "changed" || first.DialectHints[0] == "changed" {
		t.Fatal("a returned Spec shares its slices with the list")
	}
}
