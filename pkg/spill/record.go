package spill

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record builds a value for a spill file: numbers as varints, booleans as
// a byte, strings as their length and bytes. It is read back with Reader,
// in the same order.
type Record struct{ B []byte }

// Uint appends x.
func (r *Record) Uint(x uint64) { r.B = binary.AppendUvarint(r.B, x) }

// Int appends x.
func (r *Record) Int(x int64) { r.B = binary.AppendVarint(r.B, x) }

// Bool appends x.
func (r *Record) Bool(x bool) {
	if x {
		r.B = append(r.B, 1)
	} else {
		r.B = append(r.B, 0)
	}
}

// String appends s whole.
func (r *Record) String(s string) {
	r.Uint(uint64(len(s)))
	r.B = append(r.B, s...)
}

// ErrShort is a record that ends before what was read from it.
var ErrShort = errors.New("record cut short")

// Reader reads a Record. The first error sticks: every read after it
// returns a zero value, and Err says what it was.
type Reader struct {
	b   []byte
	err error
}

// NewReader reads b.
func NewReader(b []byte) *Reader { return &Reader{b: b} }

// Uint reads a number written by Record.Uint.
func (r *Reader) Uint() uint64 { return varint(r, binary.Uvarint) }

// Int reads a number written by Record.Int.
func (r *Reader) Int() int64 { return varint(r, binary.Varint) }

// varint reads one variable-length number with read.
func varint[T uint64 | int64](r *Reader, read func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	x, n := read(r.b)
	if n <= 0 {
		r.err = ErrShort
		return 0
	}
	r.b = r.b[n:]
	return x
}

// Bool reads a boolean; a byte other than 0 or 1 is an error.
func (r *Reader) Bool() bool {
	if r.err != nil {
		return false
	}
	if len(r.b) == 0 {
		r.err = ErrShort
		return false
	}
	x := r.b[0]
	r.b = r.b[1:]
	if x > 1 {
		r.err = fmt.Errorf("%d is not a boolean", x)
	}
	return x == 1
}

// String reads a string written by Record.String.
func (r *Reader) String() string {
	n := r.Uint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.Fail(ErrShort)
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// Count reads a list's length, refusing one longer than the bytes left
// (each element takes one at least).
func (r *Reader) Count() int {
	n := r.Uint()
	if n > uint64(len(r.b)) {
		r.Fail(ErrShort)
		return 0
	}
	return int(n)
}

// Fail records err, unless an error came first.
func (r *Reader) Fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

// Err is the first error, or one for bytes left over once the record has
// been read whole.
func (r *Reader) Err() error {
	if r.err == nil && len(r.b) != 0 {
		return fmt.Errorf("%d bytes left over", len(r.b))
	}
	return r.err
}
