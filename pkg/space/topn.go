package space

import (
	"cmp"
	"container/heap"
	"slices"
)

// DefaultTop is how many keys the largest and most-revisions lists keep.
const DefaultTop = 20

// topItem is one key a top list keeps, with the score it is ranked by.
type topItem struct {
	score int64
	key   string
	// id is the key's record in a walk (revHeap), and the item's place
	// in the heap is kept there.
	id int32
	// more holds what the list reports beside the score.
	more [3]int64
}

// topHeap is a min-heap of at most n items: the lowest score is the one
// to make room.
type topHeap struct {
	items []topItem
	n     int
	// moved, when set, is told an item's new place (for revHeap).
	moved func(id int32, at int)
}

func (h *topHeap) Len() int           { return len(h.items) }
func (h *topHeap) Less(i, j int) bool { return h.items[i].score < h.items[j].score }
func (h *topHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	if h.moved != nil {
		h.moved(h.items[i].id, i)
		h.moved(h.items[j].id, j)
	}
}
func (h *topHeap) Push(x any) {
	h.items = append(h.items, x.(topItem))
	if h.moved != nil {
		it := h.items[len(h.items)-1]
		h.moved(it.id, len(h.items)-1)
	}
}
func (h *topHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}

// wants reports whether an item of this score would be kept.
func (h *topHeap) wants(score int64) bool {
	return h.n > 0 && (len(h.items) < h.n || score > h.items[0].score)
}

// offer keeps the item when it is among the n highest so far; key is made
// only then (a copy of bytes the caller does not keep).
func (h *topHeap) offer(score int64, key func() string, more [3]int64) {
	if !h.wants(score) {
		return
	}
	it := topItem{score: score, key: key(), more: more}
	if len(h.items) < h.n {
		heap.Push(h, it)
		return
	}
	h.items[0] = it
	heap.Fix(h, 0)
}

// sorted returns the items, highest score first (ties by key).
func (h *topHeap) sorted() []topItem {
	out := slices.Clone(h.items)
	slices.SortFunc(out, func(a, b topItem) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	return out
}
