package dbfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// Change is one key that differs between two db files.
type Change struct {
	Key string `json:"key"`
	// Kind is "added" (only in b), "removed" (only in a) or "changed".
	Kind  string `json:"change"`
	RevA  int64  `json:"modRevisionA,omitempty"`
	RevB  int64  `json:"modRevisionB,omitempty"`
	SizeA int    `json:"bytesA,omitempty"`
	SizeB int    `json:"bytesB,omitempty"`
	// HashA and HashB are the sha256 of each side's value (the first 16 hex
	// digits), so a change can be told apart without printing the bytes.
	HashA string `json:"sha256A,omitempty"`
	HashB string `json:"sha256B,omitempty"`
	// ValueA and ValueB are the stored bytes, only when asked for.
	ValueA []byte `json:"valueA,omitempty"`
	ValueB []byte `json:"valueB,omitempty"`
}

// DiffOptions say what a diff reports.
type DiffOptions struct {
	// Prefix limits the diff to the keys under it.
	Prefix string
	// Values adds both sides' bytes to every change.
	Values bool
}

// Diff walks the live keys under o.Prefix of both files together, in key
// order, and calls fn for each key that was added, removed or whose value
// changed. It holds one key of each file at a time: memory does not grow
// with the files, only with what fn keeps. A fault on either file's map is
// the error of the file it is on.
func Diff(ctx context.Context, a, b *Store, o DiffOptions, fn func(Change) error) (err error) {
	defer guardStores(&err, a, b)()
	end := prefixEnd(o.Prefix)
	i, j := a.search(o.Prefix), b.search(o.Prefix)
	for n := 0; a.inRange(i, end) || b.inRange(j, end); n++ {
		if n%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		cmp := 0
		switch {
		case !b.inRange(j, end):
			cmp = -1
		case !a.inRange(i, end):
			cmp = 1
		default:
			ka, err := a.keyAt(i)
			if err != nil {
				return fmt.Errorf("first file: %w", err)
			}
			kb, err := b.keyAt(j)
			if err != nil {
				return fmt.Errorf("second file: %w", err)
			}
			cmp = bytes.Compare(ka, kb)
		}
		var ch Change
		switch {
		case cmp < 0:
			kv, err := a.recordAt(i, false)
			if err != nil {
				return fmt.Errorf("first file: %w", err)
			}
			ch = Change{Key: string(kv.Key), Kind: "removed"}
			ch.setA(kv, o.Values)
			i++
		case cmp > 0:
			kv, err := b.recordAt(j, false)
			if err != nil {
				return fmt.Errorf("second file: %w", err)
			}
			ch = Change{Key: string(kv.Key), Kind: "added"}
			ch.setB(kv, o.Values)
			j++
		default:
			ka, err := a.recordAt(i, false)
			if err != nil {
				return fmt.Errorf("first file: %w", err)
			}
			kb, err := b.recordAt(j, false)
			if err != nil {
				return fmt.Errorf("second file: %w", err)
			}
			i++
			j++
			if bytes.Equal(ka.Value, kb.Value) {
				continue
			}
			ch = Change{Key: string(ka.Key), Kind: "changed"}
			ch.setA(ka, o.Values)
			ch.setB(kb, o.Values)
		}
		if err := fn(ch); err != nil {
			return err
		}
	}
	return nil
}

// setA records the first file's side of a change.
func (c *Change) setA(kv *mvccpb.KeyValue, values bool) {
	c.RevA, c.SizeA, c.HashA = kv.ModRevision, len(kv.Value), hash(kv.Value)
	if values {
		c.ValueA = kv.Value
	}
}

// setB records the second file's side of a change.
func (c *Change) setB(kv *mvccpb.KeyValue, values bool) {
	c.RevB, c.SizeB, c.HashB = kv.ModRevision, len(kv.Value), hash(kv.Value)
	if values {
		c.ValueB = kv.Value
	}
}

// hash is the first 16 hex digits of a value's sha256.
func hash(v []byte) string {
	sum := sha256.Sum256(v)
	return hex.EncodeToString(sum[:8])
}

func prefixEnd(prefix string) string {
	b := []byte(prefix)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] < 0xff {
			b[i]++
			return string(b[:i+1])
		}
	}
	return ""
}
