package cmd

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
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

// encodeLine writes a line as a spill file holds it: 1 and the comment, or
// 0 and the cells, each string its length and bytes.
func encodeLine(l tableLine) []byte {
	str := func(b []byte, x string) []byte { return append(binary.AppendUvarint(b, uint64(len(x))), x...) }
	if l.isComment {
		return str([]byte{1}, l.comment)
	}
	b := binary.AppendUvarint([]byte{0}, uint64(len(l.cells)))
	for _, c := range l.cells {
		b = str(b, c)
	}
	return b
}

var errLine = errors.New("read spilled table line: record cut short")

func decodeLine(raw []byte) (tableLine, error) {
	str := func() (string, bool) {
		n, k := binary.Uvarint(raw)
		if k <= 0 || n > uint64(len(raw)-k) {
			return "", false
		}
		s := string(raw[k : k+int(n)])
		raw = raw[k+int(n):]
		return s, true
	}
	if len(raw) == 0 {
		return tableLine{}, errLine
	}
	kind := raw[0]
	raw = raw[1:]
	if kind == 1 {
		c, ok := str()
		if !ok {
			return tableLine{}, errLine
		}
		return tableLine{comment: c, isComment: true}, nil
	}
	n, k := binary.Uvarint(raw)
	if k <= 0 || n > uint64(len(raw)) {
		return tableLine{}, errLine
	}
	raw = raw[k:]
	cells := make([]string, n)
	for i := range cells {
		c, ok := str()
		if !ok {
			return tableLine{}, errLine
		}
		cells[i] = c
	}
	return tableLine{cells: cells}, nil
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
// once as a comment line above them. Only a digest of each reason is
// looked up, so that memory does not grow with the reasons either.
type groupedLines struct {
	f              *spill.File
	groups, rows   uint64
	lastReason     string
	lastGroup      uint64
	haveLastReason bool
}

const groupsBucket = "groups"

// addRow adds a row of cells under reason (escaped already).
func (g *groupedLines) addRow(reason string, cells []string) error {
	group := g.lastGroup
	if !g.haveLastReason || reason != g.lastReason {
		digest := sha256.Sum256([]byte(reason))
		v, err := g.f.Get(groupsBucket, string(digest[:16]))
		if err != nil {
			return err
		}
		if v != nil {
			group = binary.BigEndian.Uint64(v)
		} else {
			g.groups++
			group = g.groups
			if err := g.f.Put(groupsBucket, string(digest[:16]), binary.BigEndian.AppendUint64(nil, group)); err != nil {
				return err
			}
			if err := g.f.Put(linesBucket, lineKey(group, 0), encodeLine(tableLine{comment: reason, isComment: true})); err != nil {
				return err
			}
		}
		g.lastReason, g.lastGroup, g.haveLastReason = reason, group, true
	}
	g.rows++
	return g.f.Put(linesBucket, lineKey(group, g.rows), encodeLine(tableLine{cells: cells}))
}

func lineKey(group, row uint64) string {
	return string(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, group), row))
}

func (g *groupedLines) add(l tableLine) error {
	return fmt.Errorf("a grouped table's lines are added by addRow")
}

func (g *groupedLines) each(fn func(tableLine) error) error {
	return (&spilledLines{f: g.f}).each(fn)
}
