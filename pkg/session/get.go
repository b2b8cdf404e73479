package session

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/resolve"
)

// Stored is one key as etcd holds it, and the object decoded from it.
type Stored struct {
	Key   string
	Value []byte
	// Object is the object decoded (and decrypted); nil when only the
	// bytes were asked for.
	Object runtime.Object
}

// Get reads the key target names (a key, or kubectl's TYPE/NAME or TYPE
// NAME, with namespace for a namespaced type: a mistake in it is a usage
// error) and, unless raw, decodes its value.
func (s *Settings) Get(ctx context.Context, target []string, namespace string, raw bool) (*Stored, error) {
	store, closeStore, err := s.OpenStore(ctx, Reads{PageSize: 1, Stream: true})
	if err != nil {
		return nil, err
	}
	defer closeStore()
	key, err := resolve.Target(ctx, store, s.Prefix, target, namespace)
	if err != nil {
		return nil, err
	}
	kv, err := etcdscan.GetCopy(ctx, store, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if kv == nil {
		return nil, fmt.Errorf("key %s does not exist in etcd", key)
	}
	st := &Stored{Key: key, Value: kv.Value}
	if raw {
		return st, nil
	}
	dec, err := s.Decrypter(ctx)
	if err != nil {
		return nil, err
	}
	obj, meta, err := decrypt.DecodeStored(ctx, dec, s.Prefix, key, kv.Value)
	if err != nil {
		if meta != nil && meta.Format != "" {
			return nil, fmt.Errorf("decode %s (%s): %w", key, meta.Format, err)
		}
		return nil, fmt.Errorf("decode %s: %w", key, err)
	}
	st.Object = obj
	return st, nil
}
