package memtest

import "testing"

// TestResidentGrowthSeesTouchedMemory: 64 MiB written while fn runs shows
// as growth; nothing allocated shows as (almost) none.
func TestResidentGrowthSeesTouchedMemory(t *testing.T) {
	var keep []byte
	grew := ResidentGrowth(t, func() {
		keep = make([]byte, 64<<20)
		for i := range keep {
			keep[i] = byte(i)
		}
	})
	if grew < 48<<20 {
		t.Fatalf("64 MiB written grew resident memory by %d MiB", grew>>20)
	}
	keep = nil
	if idle := ResidentGrowth(t, func() {}); idle > 16<<20 {
		t.Fatalf("doing nothing grew resident memory by %d MiB", idle>>20)
	}
}
