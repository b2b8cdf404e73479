package spill

import (
	"errors"
	"strings"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	var w Record
	w.Uint(300)
	w.Int(-7)
	w.Bool(true)
	w.String("héllo")
	w.Uint(2)
	w.String("")
	r := NewReader(w.B)
	if u, i, b, s, n := r.Uint(), r.Int(), r.Bool(), r.String(), r.Uint(); u != 300 || i != -7 || !b || s != "héllo" || n != 2 {
		t.Fatalf("read %d %d %v %q %d", u, i, b, s, n)
	}
	if s := r.String(); s != "" || r.Err() != nil {
		t.Fatalf("read %q, %v", s, r.Err())
	}
}

// TestReaderRefusesDamage: a cut record, bytes left over and a byte that
// is no boolean are errors; the first one sticks.
func TestReaderRefusesDamage(t *testing.T) {
	var w Record
	w.String("abc")
	w.Uint(1 << 20)
	for n := range len(w.B) {
		r := NewReader(w.B[:n])
		_ = r.String()
		r.Uint()
		if !errors.Is(r.Err(), ErrShort) {
			t.Errorf("cut to %d bytes: %v, want ErrShort", n, r.Err())
		}
	}
	r := NewReader(append(append([]byte{}, w.B...), 9))
	_ = r.String()
	r.Uint()
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "1 bytes left over") {
		t.Errorf("a byte left over: %v", err)
	}
	r = NewReader([]byte{2, 1})
	if r.Bool(); r.Err() == nil || !strings.Contains(r.Err().Error(), "not a boolean") {
		t.Errorf("byte 2 as a boolean: %v", r.Err())
	}
	r.Fail(ErrShort)
	if !strings.Contains(r.Err().Error(), "not a boolean") {
		t.Errorf("the first error did not stick: %v", r.Err())
	}
	r = NewReader([]byte{5, 'a'})
	if n := r.Count(); n != 0 || !errors.Is(r.Err(), ErrShort) {
		t.Errorf("a count of 5 with 1 byte left: %d, %v", n, r.Err())
	}
}
