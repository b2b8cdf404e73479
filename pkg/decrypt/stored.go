package decrypt

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// DecodeStored decodes the value stored under key into a typed object. A
// value encrypted at rest is decrypted first when d is set: the key's
// resource (read from its path under prefix) picks the provider, as in
// kube-apiserver.
func DecodeStored(ctx context.Context, d *Decrypter, prefix, key string, value []byte) (runtime.Object, *decode.Object, error) {
	obj, meta, err := decode.Typed(value)
	if !errors.Is(err, decode.ErrEncrypted) || d == nil {
		return obj, meta, err
	}
	k, err := etcdscan.ParseKey(prefix, key)
	if err != nil {
		return nil, meta, err
	}
	r := catalog.New("", catalog.Builtin(), nil).ResourceFor(k.Prefix)
	plain, err := d.Decrypt(ctx, key, schema.GroupResource{Group: r.Group, Resource: r.Resource}, value)
	if err != nil {
		return nil, meta, fmt.Errorf("decrypt %s: %w", key, err)
	}
	return decode.Typed(plain)
}

// DecodeMeta decodes the envelope, type and metadata of the value stored
// under key (decode.Meta), decrypting it first when it is encrypted at rest
// and d is set. An encrypted value d cannot decrypt (or with no d) is
// returned with its Encryption and an error saying so.
func DecodeMeta(ctx context.Context, d *Decrypter, prefix, key string, value []byte) (*decode.Object, error) {
	meta, err := decode.Meta(value)
	if err != nil || meta.Encryption == nil {
		return meta, err
	}
	if d == nil {
		return meta, fmt.Errorf("encrypted at rest (%s): give --encryption-provider-config to read it", meta.Encryption)
	}
	k, err := etcdscan.ParseKey(prefix, key)
	if err != nil {
		return meta, err
	}
	r := catalog.New("", catalog.Builtin(), nil).ResourceFor(k.Prefix)
	plain, err := d.Decrypt(ctx, key, schema.GroupResource{Group: r.Group, Resource: r.Resource}, value)
	if err != nil {
		return meta, fmt.Errorf("encrypted at rest (%s), and it cannot be decrypted: %w", meta.Encryption, err)
	}
	return decode.Meta(plain)
}
