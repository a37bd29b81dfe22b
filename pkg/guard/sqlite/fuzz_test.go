package sqlite

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/sondehq/sonde/pkg/guard"
)

// FuzzRead: whatever the reader is given, it does not panic, and whatever it
// passes is one statement that — run on a WRITABLE connection with no
// authorizer, the guard alone standing — changes nothing.
func FuzzRead(f *testing.F) {
	for _, tc := range hostile {
		f.Add(tc.sql)
	}
	for _, q := range analytics {
		f.Add(q)
	}
	path, ro := fixtureDB(f)
	r := reader(f, ro)
	rw, err := sql.Open("sqlite", path)
	if err != nil {
		f.Fatal(err)
	}
	defer rw.Close()
	rw.SetMaxOpenConns(1)
	state := func(t *testing.T) (changes, schemaVersion int64) {
		if err := rw.QueryRow("SELECT total_changes(), (SELECT schema_version FROM pragma_schema_version)").Scan(&changes, &schemaVersion); err != nil {
			t.Fatal(err)
		}
		return changes, schemaVersion
	}
	f.Fuzz(func(t *testing.T, q string) {
		st, ref := guard.Check(r, q, policy)
		if ref != nil {
			if ref.Code == "" || ref.Message == "" {
				t.Fatalf("%q: refusal without code or reason: %+v", q, ref)
			}
			return
		}
		if again, ref := r.Read(st.Text); ref != nil || again.Text != st.Text {
			t.Fatalf("%q: its own text %q does not read back the same: %+v", q, st.Text, ref)
		}
		c0, s0 := state(t)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		if rows, err := rw.QueryContext(ctx, st.Text); err == nil {
			for rows.Next() {
			}
			rows.Close()
		}
		if c1, s1 := state(t); c1 != c0 || s1 != s0 {
			t.Fatalf("%q passed the guard and changed the database (changes %d -> %d, schema %d -> %d)", q, c0, c1, s0, s1)
		}
	})
}

// FuzzNames: Names never panics, a refusal has a code and a reason, and a
// column is only ever tied to a table the statement names.
func FuzzNames(f *testing.F) {
	for _, tc := range hostile {
		f.Add(tc.sql)
	}
	for _, q := range analytics {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, q string) {
		st, ref := Reader{}.Names(q)
		if ref != nil {
			if st != nil || ref.Code == "" || ref.Message == "" {
				t.Fatalf("%q: refusal %+v with statement %+v", q, ref, st)
			}
			return
		}
		tables := map[string]bool{}
		for _, n := range st.Tables("main") {
			tables[n] = true
		}
		for _, c := range st.ColumnRefs("main") {
			if k := (guard.Table{Schema: c.Schema, Name: c.Table}).QualifiedName("main"); !tables[k] {
				t.Fatalf("%q: column %+v tied to %s, which it does not name", q, c, k)
			}
		}
	})
}
