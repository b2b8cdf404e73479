package decrypt

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Namespaces returns a function that opens an encrypted namespace value
// (the cluster's identity is the kube-system namespace's UID) with the first
// of ds that can; nil when ds holds no decrypter, so a caller can tell
// "cannot decrypt" from "tried and failed".
func Namespaces(ds ...*Decrypter) func(ctx context.Context, key string, value []byte) ([]byte, error) {
	var use []*Decrypter
	for _, d := range ds {
		if d != nil {
			use = append(use, d)
		}
	}
	if len(use) == 0 {
		return nil
	}
	return func(ctx context.Context, key string, value []byte) ([]byte, error) {
		var first error
		for _, d := range use {
			plain, err := d.Decrypt(ctx, key, schema.GroupResource{Resource: "namespaces"}, value)
			if err == nil {
				return plain, nil
			}
			if first == nil {
				first = err
			}
		}
		return nil, first
	}
}
