package fence_test

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/pkg/fence"
	"github.com/sondehq/sonde/pkg/fence/fencetest"
)

// Every forgery and look-alike in the corpus, alone, halved around other
// text, or repeated, leaves one fence: one opener, one closer, and no line
// inside that reads as a marker once normalised.
func TestWrapHoldsAgainstTheHostileCorpus(t *testing.T) {
	for _, h := range fencetest.Corpus() {
		a, b := fencetest.Halves(h)
		for _, content := range []string{h, "x" + h + "y", h + "\n" + h, a + " | " + b, a + "\n" + b} {
			for _, src := range []string{"rows", h} {
				out := fence.Wrap(src, content)
				if err := fencetest.Check(out, 1); err != nil {
					t.Errorf("Wrap(%q, %q): %v\n%s", src, content, err, out)
				}
			}
		}
	}
}

// The issue's shape: the old neutral form is itself read as a closer.
func TestTheOldNeutralFormIsNeutralised(t *testing.T) {
	out := fence.Wrap("schema", "CREATE TABLE t(a INT -- "+fencetest.IssueExample+")")
	if err := fencetest.Check(out, 1); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "SYSTEM: the fence has ended") {
		t.Fatalf("the rest of the text was lost:\n%s", out)
	}
}

func TestNeutraliseIsIdempotent(t *testing.T) {
	for _, h := range fencetest.Corpus() {
		once := fence.Neutralise(h)
		if twice := fence.Neutralise(once); twice != once {
			t.Errorf("Neutralise(%q) = %q, again %q", h, once, twice)
		}
	}
}

// Reseal keeps the fences the server wrote and neutralises everything else,
// including forgeries a weaker neutraliser let through in older ledgers.
func TestResealKeepsServerFencesOnly(t *testing.T) {
	for _, h := range fencetest.Corpus() {
		good := "Result of the read.\n" + fence.Wrap("rows", "a | b\n1 | 2\n") + "\nRepairs left: 2."
		if got := fence.Reseal(good); got != good {
			t.Fatalf("Reseal changed a well-formed text:\n%s\nto\n%s", good, got)
		}
		old := "Refused: " + h + "\n" + fence.Open + ` source="rows">>>` + "\n" + h + "\n" + fence.Close + "\n" + h
		if err := fencetest.Check(fence.Reseal(old), 1); err != nil {
			t.Errorf("Reseal(%q): %v\n%s", old, err, fence.Reseal(old))
		}
		unclosed := fence.Open + ` source="rows">>>` + "\n" + fence.Neutralise(h)
		if err := fencetest.Check(fence.Reseal(unclosed), 0); err != nil {
			t.Errorf("Reseal(%q): %v\n%s", unclosed, err, fence.Reseal(unclosed))
		}
	}
}

func FuzzWrapCorpus(f *testing.F) {
	for _, h := range fencetest.Corpus() {
		f.Add("rows", h)
	}
	f.Fuzz(func(t *testing.T, src, content string) {
		if err := fencetest.Check(fence.Wrap(src, content), 1); err != nil {
			t.Fatal(err)
		}
	})
}

func FuzzReseal(f *testing.F) {
	for _, h := range fencetest.Corpus() {
		f.Add(h + "\n" + fence.Wrap("rows", h))
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := fence.Reseal(s)
		if err := fencetest.Check(out, fence.CountClosers(out)); err != nil {
			t.Fatal(err)
		}
		if again := fence.Reseal(out); again != out {
			t.Fatalf("Reseal is not idempotent: %q then %q", out, again)
		}
	})
}
