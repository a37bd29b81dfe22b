package postgres

import (
	"strings"
	"testing"

	"github.com/sondehq/sonde/pkg/guard"
	"github.com/sondehq/sonde/pkg/guard/postgres/postgrestest"
)

// TestReadIndexHostile: every hostile index text is refused with its code,
// by the reader or by the readable rules applied to its probe, as the
// executor applies them.
func TestReadIndexHostile(t *testing.T) {
	p := postgrestest.Policy()
	p.LargeTables = nil
	for _, c := range postgrestest.HostileIndexes {
		ix, ref := Reader{}.ReadIndex(c.SQL)
		if ref == nil {
			ref = guard.Apply(ix.Probe, p)
		}
		if ref == nil {
			t.Errorf("%s: accepted as %q", c.Name, ix.Text)
			continue
		}
		if ref.Code != c.Code {
			t.Errorf("%s: refused %s (%s), want %s", c.Name, ref.Code, ref.Message, c.Code)
		}
		if ref.Message == "" || ref.Fix == "" {
			t.Errorf("%s: refusal without reason or fix: %+v", c.Name, ref)
		}
	}
}

// TestReadIndexValid: an accepted index is written back qualified, without
// its name or IF NOT EXISTS, and its probe names the table.
func TestReadIndexValid(t *testing.T) {
	p := postgrestest.Policy()
	p.LargeTables = nil
	for _, q := range postgrestest.ValidIndexes {
		ix, ref := Reader{}.ReadIndex(q)
		if ref == nil {
			ref = guard.Apply(ix.Probe, p)
		}
		if ref != nil {
			t.Errorf("%q refused: %+v", q, ref)
			continue
		}
		if !strings.HasPrefix(ix.Text, "CREATE INDEX ON public.") || strings.Contains(ix.Text, "orders_by_customer") ||
			strings.Contains(ix.Text, "IF NOT EXISTS") {
			t.Errorf("%q written back as %q", q, ix.Text)
		}
		if _, ref := (Reader{}).ReadIndex(ix.Text); ref != nil {
			t.Errorf("%q: its own text %q is refused: %+v", q, ix.Text, ref)
		}
		t.Logf("%s\n  -> %s\n  probe %s", q, ix.Text, ix.Probe.Text)
	}
	ix, _ := Reader{}.ReadIndex("CREATE INDEX ON orders (created_at DESC) WHERE amount > 100")
	if ix.Text != "CREATE INDEX ON public.orders USING btree (created_at DESC) WHERE amount > 100" {
		t.Errorf("written back as %q", ix.Text)
	}
}

// FuzzReadIndex: whatever the index text, ReadIndex answers an index or a
// refusal with a reason and a fix, never a panic, and an accepted index's
// written-back text reads the same again.
func FuzzReadIndex(f *testing.F) {
	for _, c := range postgrestest.HostileIndexes {
		f.Add(c.SQL)
	}
	for _, q := range postgrestest.ValidIndexes {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		ix, ref := Reader{}.ReadIndex(sql)
		if ref != nil {
			if ix != nil || ref.Code == "" || ref.Message == "" || ref.Fix == "" {
				t.Fatalf("%q: %+v, %+v", sql, ix, ref)
			}
			return
		}
		again, ref := Reader{}.ReadIndex(ix.Text)
		if ref != nil || again.Text != ix.Text {
			t.Fatalf("%q written back as %q, which reads as %+v, %+v", sql, ix.Text, again, ref)
		}
	})
}
