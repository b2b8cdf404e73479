package etcdscan

import (
	"fmt"
	"hash/maphash"
	"time"

	"github.com/regghost/regghost/pkg/spill"
)

// A spilled finding is written in a compact binary form rather than JSON:
// a scan of many findings reads each back several times, and JSON's
// decoding was most of its time. Strings many findings share (a reason, a
// witness's answer, a resource) are written once into a dictionary kept in
// memory beside the file, up to maxShared of them, and referred to by
// number; a finding's own strings (its key, name and UID) are written whole.
// A string is admitted once a second finding writes it: one finding writes
// its own sentences several times (a reason is also its witness's answer,
// and a finding is written again as its verdicts settle), and those must
// not fill the dictionary.

// maxShared bounds the dictionary: sentences that differ per finding must
// not make it grow with the findings. A string is admitted when a second
// finding writes it, so that one-off sentences (a key's own "value of
// <key>") do not fill it; maxCandidates bounds the strings seen in one
// finding only, forgotten all together when there are that many.
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
	// once holds strings written whole by one finding only, not yet
	// admitted, with the hash of that finding's key.
	once map[string]uint64
	seed maphash.Seed
}

func newSharedStrings() *sharedStrings {
	return &sharedStrings{ids: map[string]uint64{}, once: map[string]uint64{}, seed: maphash.MakeSeed()}
}

// owner names the finding of key among those that write strings.
func (d *sharedStrings) owner(key string) uint64 { return maphash.String(d.seed, key) }

// id returns the number of s in the dictionary, admitting it when a finding
// other than owner wrote it before and there is room.
func (d *sharedStrings) id(s string, owner uint64) (uint64, bool) {
	if id, ok := d.ids[s]; ok {
		return id, true
	}
	if len(d.strs) >= maxShared {
		return 0, false
	}
	if first, seen := d.once[s]; !seen || first == owner {
		if !seen && len(d.once) >= maxCandidates {
			clear(d.once)
		}
		d.once[s] = owner
		return 0, false
	}
	delete(d.once, s)
	id := uint64(len(d.strs))
	d.ids[s] = id
	d.strs = append(d.strs, s)
	return id, true
}

type encoder struct {
	spill.Record
	dict  *sharedStrings
	owner uint64
}

// shared writes a string by its number in the dictionary (number + 1), or
// whole when it is not in it (0 and the string).
func (e *encoder) shared(s string) {
	if id, ok := e.dict.id(s, e.owner); ok {
		e.Uint(id + 1)
		return
	}
	e.Uint(0)
	e.String(s)
}

// writeShared writes a list of strings (or of a string type: classes) as
// its length and each by shared.
func writeShared[T ~string](e *encoder, xs []T) {
	e.Uint(uint64(len(xs)))
	for _, x := range xs {
		e.shared(string(x))
	}
}

// encodeFinding appends f to b.
func encodeFinding(b []byte, f *Finding, dict *sharedStrings) []byte {
	e := &encoder{Record: spill.Record{B: append(b, codecVersion)}, dict: dict, owner: dict.owner(f.Key)}
	e.String(f.Key)
	e.shared(f.Resource)
	e.shared(f.APIVersion)
	e.shared(f.Kind)
	e.shared(f.Namespace)
	e.String(f.Name)
	writeShared(e, f.Classes)
	writeShared(e, f.Reasons)
	e.Bool(f.Ghost)
	e.Bool(f.SingleWitness)
	e.Uint(uint64(len(f.Evidence)))
	for _, ev := range f.Evidence {
		e.shared(string(ev.Class))
		e.shared(string(ev.Witness))
		e.shared(ev.Asked)
		e.shared(string(ev.Answer))
		e.shared(ev.Said)
	}
	writeShared(e, f.Absent)
	e.String(f.UID)
	e.shared(f.Format)
	e.shared(f.Encryption)
	e.Int(f.CreateRevision)
	e.Int(f.ModRevision)
	e.Bool(f.Created != nil)
	if f.Created != nil {
		e.Int(f.Created.Unix())
		e.Int(int64(f.Created.Nanosecond()))
	}
	return e.B
}

type decoder struct {
	*spill.Reader
	dict *sharedStrings
}

func (d *decoder) shared() string {
	id := d.Uint()
	if id == 0 {
		return d.String()
	}
	if id > uint64(len(d.dict.strs)) {
		d.Fail(fmt.Errorf("shared string %d not in the dictionary", id-1))
		return ""
	}
	return d.dict.strs[id-1]
}

// readShared reads a list written by writeShared; an empty one is nil.
func readShared[T ~string](d *decoder) []T {
	n := d.Count()
	if n == 0 {
		return nil
	}
	xs := make([]T, n)
	for i := range xs {
		xs[i] = T(d.shared())
	}
	return xs
}

// decodeFinding reads a finding written by encodeFinding.
func decodeFinding(key string, raw []byte, dict *sharedStrings) (*Finding, error) {
	if len(raw) == 0 || raw[0] != codecVersion {
		return nil, fmt.Errorf("read spilled finding %s: not a record of this regghost", key)
	}
	d := &decoder{Reader: spill.NewReader(raw[1:]), dict: dict}
	f := &Finding{}
	f.Key = d.String()
	f.Resource, f.APIVersion, f.Kind, f.Namespace = d.shared(), d.shared(), d.shared(), d.shared()
	f.Name = d.String()
	f.Classes = readShared[Class](d)
	f.Reasons = readShared[string](d)
	f.Ghost, f.SingleWitness = d.Bool(), d.Bool()
	if n := d.Count(); n > 0 {
		f.Evidence = make([]Evidence, n)
		for i := range f.Evidence {
			f.Evidence[i] = Evidence{Class: Class(d.shared()), Witness: Witness(d.shared()), Asked: d.shared(), Answer: Answer(d.shared()), Said: d.shared()}
		}
	}
	f.Absent = readShared[string](d)
	f.UID = d.String()
	f.Format, f.Encryption = d.shared(), d.shared()
	f.CreateRevision, f.ModRevision = d.Int(), d.Int()
	if d.Bool() {
		sec, nsec := d.Int(), d.Int()
		t := time.Unix(sec, nsec) // local, as metav1.Time decodes it
		f.Created = &t
	}
	if err := d.Err(); err != nil {
		return nil, fmt.Errorf("read spilled finding %s: %w", key, err)
	}
	return f, nil
}
