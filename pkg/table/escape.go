package table

import (
	"fmt"
	"io"

	"github.com/regghost/regghost/pkg/textsafe"
)

// Escape makes a value from etcd safe to print in one cell or on one line:
// every control character (C0, DEL, C1; newline and tab too, which would
// break the row) and every byte that is not UTF-8 is written as a visible
// escape. The rule is textsafe.Escape, shared with the exporter's labels.
// Tables, Para and Command escape what they print with it.
func Escape(s string) string { return textsafe.Escape(s) }

// SafeWriter passes output through with every control character but
// newline and tab written as \u00XX: a JSON-valid escape, and inert on a
// terminal. The encoders already escape C0 inside JSON strings; DEL and C1
// they leave raw, and a table cell or a template prints whatever it holds.
//
// A write may hold back its last byte (the first half of a C1 control
// split across writes): Flush writes it.
type SafeWriter struct {
	w io.Writer
	// pending holds the first byte of a two-byte C1 sequence (0xc2) split
	// across writes.
	pending []byte
}

// NewSafeWriter returns a SafeWriter writing to w.
func NewSafeWriter(w io.Writer) *SafeWriter { return &SafeWriter{w: w} }

// Write writes p to the underlying writer, control characters escaped. It
// returns len(p) unless the underlying writer fails.
func (s *SafeWriter) Write(p []byte) (int, error) {
	n := len(p)
	data := p
	if len(s.pending) > 0 {
		data = append(s.pending, p...)
	}
	s.pending = nil
	if len(data) > 0 && data[len(data)-1] == 0xc2 {
		s.pending = []byte{0xc2}
		data = data[:len(data)-1]
	}
	// The text up to the first byte that may need escaping goes out as it
	// is: most output has none.
	clean := 0
	for clean < len(data) {
		c := data[clean]
		if (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f || c == 0xc2 {
			break
		}
		clean++
	}
	if clean > 0 {
		if _, err := s.w.Write(data[:clean]); err != nil {
			return 0, err
		}
		data = data[clean:]
		if len(data) == 0 {
			return n, nil
		}
	}
	out := make([]byte, 0, min(len(data)+64, 64<<10))
	for i := 0; i < len(data); i++ {
		if len(out) >= 64<<10-8 {
			// Written in pieces: a large report is not copied whole.
			if _, err := s.w.Write(out); err != nil {
				return 0, err
			}
			out = out[:0]
		}
		c := data[i]
		switch {
		case c == '\n' || c == '\t':
			out = append(out, c)
		case c < 0x20 || c == 0x7f:
			out = fmt.Appendf(out, `\u%04x`, c)
		case c == 0xc2 && i+1 < len(data) && data[i+1] >= 0x80 && data[i+1] <= 0x9f:
			out = fmt.Appendf(out, `\u%04x`, data[i+1])
			i++
		default:
			out = append(out, c)
		}
	}
	if _, err := s.w.Write(out); err != nil {
		return 0, err
	}
	return n, nil
}

// Flush writes a byte held back at the end.
func (s *SafeWriter) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	_, err := s.w.Write(s.pending)
	s.pending = nil
	return err
}
