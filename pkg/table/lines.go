package table

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"github.com/regghost/regghost/pkg/spill"
)

// lineStore holds a table's lines until it is rendered.
type lineStore interface {
	add(l tableLine) error
	each(fn func(tableLine) error) error
}

// memLines keeps a table's lines in memory.
type memLines struct{ lines []tableLine }

func (m *memLines) add(l tableLine) error { m.lines = append(m.lines, l); return nil }

func (m *memLines) each(fn func(tableLine) error) error {
	for _, l := range m.lines {
		if err := fn(l); err != nil {
			return err
		}
	}
	return nil
}

// memGroups keeps a grouped table's lines in memory, by group, as
// groupedLines keeps them in a spill file: the rows added before any comment
// line first, then each comment line's group in the order it first came.
type memGroups struct {
	// groups[0] are the rows before any comment line; every other group
	// starts with its comment line.
	groups [][]tableLine
	// index is the group of each comment, by its text as given.
	index map[string]int
	// cur is the group rows are added to.
	cur int
}

func (m *memGroups) add(l tableLine) error {
	if m.groups == nil {
		m.groups, m.index = [][]tableLine{nil}, map[string]int{}
	}
	if !l.isComment {
		m.groups[m.cur] = append(m.groups[m.cur], l)
		return nil
	}
	i, ok := m.index[l.raw]
	if !ok {
		i = len(m.groups)
		m.index[l.raw] = i
		m.groups = append(m.groups, []tableLine{l})
	}
	m.cur = i
	return nil
}

func (m *memGroups) each(fn func(tableLine) error) error {
	for _, g := range m.groups {
		for _, l := range g {
			if err := fn(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// encodeLine writes a line as a spill file holds it: true and the
// comment, or false and the cells.
func encodeLine(l tableLine) []byte {
	var r spill.Record
	r.Bool(l.isComment)
	if l.isComment {
		r.String(l.comment)
		return r.B
	}
	r.Uint(uint64(len(l.cells)))
	for _, c := range l.cells {
		r.String(c)
	}
	return r.B
}

func decodeLine(raw []byte) (tableLine, error) {
	r := spill.NewReader(raw)
	var l tableLine
	if l.isComment = r.Bool(); l.isComment {
		l.comment = r.String()
	} else {
		l.cells = make([]string, r.Count())
		for i := range l.cells {
			l.cells[i] = r.String()
		}
	}
	if err := r.Err(); err != nil {
		return tableLine{}, fmt.Errorf("read spilled table line: %w", err)
	}
	return l, nil
}

// spilledLines keeps a table's lines in a spill file, in the order they
// were added: the table of a report whose findings were too many for
// memory.
type spilledLines struct {
	f *spill.File
	n uint64
}

const linesBucket = "lines"

func (s *spilledLines) add(l tableLine) error {
	s.n++
	return s.f.Put(linesBucket, string(binary.BigEndian.AppendUint64(nil, s.n)), encodeLine(l))
}

func (s *spilledLines) each(fn func(tableLine) error) error {
	return s.f.Each(linesBucket, func(_ string, raw []byte) error {
		l, err := decodeLine(raw)
		if err != nil {
			return err
		}
		return fn(l)
	})
}

// groupedLines keeps a grouped table's rows in a spill file, by group: a
// group is the rows of one reason, in the order its first row came, said
// once as a comment line above them. A comment line picks the group of the
// rows added after it. Only a digest of each reason is looked up, so that
// memory does not grow with the reasons either.
type groupedLines struct {
	f            *spill.File
	groups, rows uint64
	// group is the current group (0 before the first comment), reason its
	// comment.
	group  uint64
	reason string
	// err is a failure to pick a group (Table.Comment returns none): the
	// next add or each returns it.
	err error
}

const groupsBucket = "groups"

func (g *groupedLines) add(l tableLine) error {
	if g.err != nil {
		return g.err
	}
	if l.isComment {
		g.err = g.pick(l.comment)
		return g.err
	}
	g.rows++
	return g.f.Put(linesBucket, lineKey(g.group, g.rows), encodeLine(l))
}

// pick makes reason's group the current one, new after every other when
// it has none yet.
func (g *groupedLines) pick(reason string) error {
	if g.group != 0 && reason == g.reason {
		return nil
	}
	sum := sha256.Sum256([]byte(reason))
	digest := string(sum[:16])
	v, err := g.f.Get(groupsBucket, digest)
	if err != nil {
		return err
	}
	if v != nil {
		g.group, g.reason = binary.BigEndian.Uint64(v), reason
		return nil
	}
	g.groups++
	g.group, g.reason = g.groups, reason
	if err := g.f.Put(groupsBucket, digest, binary.BigEndian.AppendUint64(nil, g.group)); err != nil {
		return err
	}
	return g.f.Put(linesBucket, lineKey(g.group, 0), encodeLine(tableLine{comment: reason, isComment: true}))
}

func lineKey(group, row uint64) string {
	return string(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, group), row))
}

func (g *groupedLines) each(fn func(tableLine) error) error {
	if g.err != nil {
		return g.err
	}
	return (&spilledLines{f: g.f}).each(fn)
}
