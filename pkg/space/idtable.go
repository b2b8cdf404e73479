package space

// idTable maps a key's hash to its record's place: open addressing with
// linear probing over two flat arrays, so that a walk of a million keys
// costs one or two cache misses per revision (a Go map of that size costs
// more) and holds no pointer for the garbage collector to scan.
type idTable struct {
	hashes []uint64 // 0: empty
	ids    []int32
	n      int
	// The hash 0 marks an empty slot: its id is kept apart.
	zeroID  int32
	hasZero bool
}

// newIDTable returns a table sized for about hint keys.
func newIDTable(hint int) *idTable {
	size := 1024
	for 3*size < 4*hint {
		size <<= 1
	}
	return &idTable{hashes: make([]uint64, size), ids: make([]int32, size)}
}

// get returns the id stored for h.
func (t *idTable) get(h uint64) (int32, bool) {
	if h == 0 {
		return t.zeroID, t.hasZero
	}
	mask := uint64(len(t.hashes) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.hashes[i] {
		case h:
			return t.ids[i], true
		case 0:
			return 0, false
		}
	}
}

// getOrAdd returns the id stored for h, or stores next and returns it with
// added set.
func (t *idTable) getOrAdd(h uint64, next int32) (id int32, added bool) {
	if h == 0 {
		if t.hasZero {
			return t.zeroID, false
		}
		t.zeroID, t.hasZero = next, true
		return next, true
	}
	mask := uint64(len(t.hashes) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		switch t.hashes[i] {
		case h:
			return t.ids[i], false
		case 0:
			t.hashes[i], t.ids[i] = h, next
			if t.n++; 4*t.n > 3*len(t.hashes) {
				t.grow()
			}
			return next, true
		}
	}
}

// grow doubles the table, keeping its load at most three quarters
// (linear probing over a well-mixed hash stays short there).
func (t *idTable) grow() {
	old, oldIDs := t.hashes, t.ids
	t.hashes, t.ids = make([]uint64, 2*len(old)), make([]int32, 2*len(old))
	mask := uint64(len(t.hashes) - 1)
	for j, h := range old {
		if h == 0 {
			continue
		}
		i := h & mask
		for t.hashes[i] != 0 {
			i = (i + 1) & mask
		}
		t.hashes[i], t.ids[i] = h, oldIDs[j]
	}
}
