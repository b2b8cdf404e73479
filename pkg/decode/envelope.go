package decode

import "google.golang.org/protobuf/encoding/protowire"

// unknown is a runtime.Unknown envelope as Meta needs it; raw aliases the
// value it was read from.
type unknown struct {
	apiVersion, kind string
	raw              []byte
}

// envelope reads the runtime.Unknown envelope of a protobuf value (after
// the magic) without copying its raw object, as every value of a scan is
// read. It accepts only the envelope kube-apiserver writes: fields 1
// (typeMeta: apiVersion 1, kind 2), 2 (raw), 3 (contentEncoding) and 4
// (contentType), each with its wire type, the last of a field winning. ok
// is false for anything else, and the generated decoder then reads the
// value (its error is the one users see, worded as the API server's).
func envelope(b []byte) (u unknown, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || num < 1 || num > 4 {
			return unknown{}, false
		}
		b = b[n:]
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return unknown{}, false
		}
		b = b[m:]
		switch num {
		case 1:
			if !typeMeta(v, &u) {
				return unknown{}, false
			}
		case 2:
			u.raw = v
		}
	}
	return u, true
}

// typeMeta reads runtime.TypeMeta's apiVersion and kind into u; later
// fields win, as the generated decoder merges a repeated message.
func typeMeta(b []byte, u *unknown) bool {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 || typ != protowire.BytesType || (num != 1 && num != 2) {
			return false
		}
		b = b[n:]
		v, m := protowire.ConsumeBytes(b)
		if m < 0 {
			return false
		}
		b = b[m:]
		if num == 1 {
			u.apiVersion = string(v)
		} else {
			u.kind = string(v)
		}
	}
	return true
}
