package notice

// Progress is told, as a long step goes, how much of it is done: done of
// total (total 0: not known). Like a Func it is the one way a package
// says how far it is, and cmd/ lays it out (a line rewritten on a
// terminal, a line every tenth); a nil Progress is told nothing.
type Progress func(done, total int)

// Tell tells p that done of total is done, when p is not nil.
func (p Progress) Tell(done, total int) {
	if p != nil {
		p(done, total)
	}
}
