package etcdscan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"
)

// A spilled finding is written in a compact binary form rather than JSON:
// a scan of many findings reads each back several times, and JSON's
// decoding was most of its time. Strings many findings share (a reason, a
// witness's answer, a resource) are written once into a dictionary kept in
// memory beside the file, up to maxShared of them, and referred to by
// number; a finding's own strings (its key, name and UID) are written whole.

// maxShared bounds the dictionary: sentences that differ per finding must
// not make it grow with the findings. A string is admitted the second time
// it is written, so that one-off sentences (a key's own "value of <key>")
// do not fill it; maxCandidates bounds the strings seen once, forgotten
// all together when there are that many.
const (
	maxShared     = 4096
	maxCandidates = 16384
)

// codecVersion starts every record, so a record from another layout is
// refused rather than misread.
const codecVersion = 1

// sharedStrings is the dictionary of one spill file.
type sharedStrings struct {
	ids  map[string]uint64
	strs []string
	// once holds strings written whole once, not yet admitted.
	once map[string]struct{}
}

func newSharedStrings() *sharedStrings {
	return &sharedStrings{ids: map[string]uint64{}, once: map[string]struct{}{}}
}

// id returns the number of s in the dictionary, admitting it when it is
// seen for the second time and there is room.
func (d *sharedStrings) id(s string) (uint64, bool) {
	if id, ok := d.ids[s]; ok {
		return id, true
	}
	if len(d.strs) >= maxShared {
		return 0, false
	}
	if _, again := d.once[s]; !again {
		if len(d.once) >= maxCandidates {
			clear(d.once)
		}
		d.once[s] = struct{}{}
		return 0, false
	}
	delete(d.once, s)
	id := uint64(len(d.strs))
	d.ids[s] = id
	d.strs = append(d.strs, s)
	return id, true
}

type encoder struct {
	b    []byte
	dict *sharedStrings
}

func (e *encoder) uint(x uint64) { e.b = binary.AppendUvarint(e.b, x) }
func (e *encoder) int(x int64)   { e.b = binary.AppendVarint(e.b, x) }

func (e *encoder) bool(x bool) {
	if x {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// own writes a string whole: 0, then its length and bytes.
func (e *encoder) own(s string) {
	e.uint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// shared writes a string by its number in the dictionary (number + 1), or
// whole when the dictionary is full (0 and the string).
func (e *encoder) shared(s string) {
	if id, ok := e.dict.id(s); ok {
		e.uint(id + 1)
		return
	}
	e.uint(0)
	e.own(s)
}

func (e *encoder) sharedList(xs []string) {
	e.uint(uint64(len(xs)))
	for _, x := range xs {
		e.shared(x)
	}
}

// encodeFinding appends f to b.
func encodeFinding(b []byte, f *Finding, dict *sharedStrings) []byte {
	e := &encoder{b: append(b, codecVersion), dict: dict}
	e.own(f.Key)
	e.shared(f.Resource)
	e.shared(f.APIVersion)
	e.shared(f.Kind)
	e.shared(f.Namespace)
	e.own(f.Name)
	e.uint(uint64(len(f.Classes)))
	for _, c := range f.Classes {
		e.shared(string(c))
	}
	e.sharedList(f.Reasons)
	e.bool(f.Ghost)
	e.bool(f.SingleWitness)
	e.uint(uint64(len(f.Evidence)))
	for _, ev := range f.Evidence {
		e.shared(string(ev.Class))
		e.shared(string(ev.Witness))
		e.shared(ev.Asked)
		e.shared(string(ev.Answer))
		e.shared(ev.Said)
	}
	e.sharedList(f.Absent)
	e.own(f.UID)
	e.shared(f.Format)
	e.shared(f.Encryption)
	e.int(f.CreateRevision)
	e.int(f.ModRevision)
	e.bool(f.Created != nil)
	if f.Created != nil {
		e.int(f.Created.Unix())
		e.int(int64(f.Created.Nanosecond()))
	}
	return e.b
}

type decoder struct {
	b    []byte
	dict *sharedStrings
	err  error
}

var errShort = errors.New("record cut short")

func (d *decoder) uint() uint64 { return varint(d, binary.Uvarint) }
func (d *decoder) int() int64   { return varint(d, binary.Varint) }

// varint reads one variable-length number with read.
func varint[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	if d.err != nil {
		return 0
	}
	x, n := read(d.b)
	if n <= 0 {
		d.err = errShort
		return 0
	}
	d.b = d.b[n:]
	return x
}

func (d *decoder) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) == 0 {
		d.err = errShort
		return false
	}
	x := d.b[0]
	d.b = d.b[1:]
	if x > 1 {
		d.err = fmt.Errorf("%d is not a boolean", x)
	}
	return x == 1
}

func (d *decoder) own() string {
	n := d.uint()
	if d.err != nil || n > uint64(len(d.b)) {
		d.err = errShort
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) shared() string {
	id := d.uint()
	if id == 0 {
		return d.own()
	}
	if id > uint64(len(d.dict.strs)) {
		if d.err == nil {
			d.err = fmt.Errorf("shared string %d not in the dictionary", id-1)
		}
		return ""
	}
	return d.dict.strs[id-1]
}

// count reads a list's length, refusing one longer than the bytes left.
func (d *decoder) count() int {
	n := d.uint()
	if n > uint64(len(d.b)) {
		d.err = errShort
		return 0
	}
	return int(n)
}

func (d *decoder) sharedList() []string {
	n := d.count()
	if n == 0 {
		return nil
	}
	xs := make([]string, n)
	for i := range xs {
		xs[i] = d.shared()
	}
	return xs
}

// decodeFinding reads a finding written by encodeFinding.
func decodeFinding(key string, raw []byte, dict *sharedStrings) (*Finding, error) {
	if len(raw) == 0 || raw[0] != codecVersion {
		return nil, fmt.Errorf("read spilled finding %s: not a record of this regghost", key)
	}
	d := &decoder{b: raw[1:], dict: dict}
	f := &Finding{}
	f.Key = d.own()
	f.Resource, f.APIVersion, f.Kind, f.Namespace = d.shared(), d.shared(), d.shared(), d.shared()
	f.Name = d.own()
	if n := d.count(); n > 0 {
		f.Classes = make([]Class, n)
		for i := range f.Classes {
			f.Classes[i] = Class(d.shared())
		}
	}
	f.Reasons = d.sharedList()
	f.Ghost, f.SingleWitness = d.bool(), d.bool()
	if n := d.count(); n > 0 {
		f.Evidence = make([]Evidence, n)
		for i := range f.Evidence {
			f.Evidence[i] = Evidence{Class: Class(d.shared()), Witness: Witness(d.shared()), Asked: d.shared(), Answer: Answer(d.shared()), Said: d.shared()}
		}
	}
	f.Absent = d.sharedList()
	f.UID = d.own()
	f.Format, f.Encryption = d.shared(), d.shared()
	f.CreateRevision, f.ModRevision = d.int(), d.int()
	if d.bool() {
		sec, nsec := d.int(), d.int()
		t := time.Unix(sec, nsec) // local, as metav1.Time decodes it
		f.Created = &t
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d bytes left over", len(d.b))
	}
	if d.err != nil {
		return nil, fmt.Errorf("read spilled finding %s: %w", key, d.err)
	}
	return f, nil
}
