package space

import "testing"

// TestIDTable: every hash keeps its id through growth, 0 included, and an
// absent hash is absent.
func TestIDTable(t *testing.T) {
	for _, n := range []int{0, 1, 600, 5000} {
		tb := newIDTable(n / 4)
		for i := range n {
			h := uint64(i) * 0x9e3779b97f4a7c15
			if id, added := tb.getOrAdd(h, int32(i)); !added || id != int32(i) {
				t.Fatalf("n=%d: add %d: %d %v", n, i, id, added)
			}
			if id, added := tb.getOrAdd(h, -1); added || id != int32(i) {
				t.Fatalf("n=%d: add %d again: %d %v", n, i, id, added)
			}
		}
		for i := range n {
			if id, ok := tb.get(uint64(i) * 0x9e3779b97f4a7c15); !ok || id != int32(i) {
				t.Errorf("n=%d: get %d: %d %v", n, i, id, ok)
			}
		}
		if _, ok := tb.get(12345); ok && n == 0 {
			t.Errorf("n=0: found a hash never added")
		}
		// 0 (added when i is 0) and 1 are two keys.
		if id, added := tb.getOrAdd(1, -7); n > 0 && (!added || id != -7) {
			t.Errorf("n=%d: hash 1 after hash 0: %d %v, want its own record", n, id, added)
		}
		if 4*tb.n > 3*len(tb.hashes) {
			t.Errorf("n=%d: load %d of %d", n, tb.n, len(tb.hashes))
		}
	}
}
