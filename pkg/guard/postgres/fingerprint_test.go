package postgres

import "testing"

func TestFingerprintKeepsLiteralsOnly(t *testing.T) {
	fp := func(sql string) string {
		t.Helper()
		st, ref := Reader{}.Read(sql)
		if ref != nil {
			t.Fatalf("%s: refused %+v", sql, ref)
		}
		return st.Fingerprint()
	}
	a := fp("select id from orders where status = 'paid'")
	if b := fp("SELECT id\n  FROM orders -- paid ones\n WHERE status='paid';"); a != b {
		t.Errorf("layout, comments and case changed the fingerprint: %s vs %s", a, b)
	}
	if c := fp("select id from orders where status = 'refunded'"); a == c {
		t.Error("a different literal kept the fingerprint")
	}
}
