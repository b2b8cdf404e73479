package etcdscan

import (
	"context"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/catalog"
)

// OfflineCatalog is the catalog used when the API server cannot be reached:
// the resources a stock kube-apiserver serves, plus one custom resource for
// every CustomResourceDefinition key found in the store. The scope and kind of
// those custom resources are unknown, so scope and kind checks skip them.
func OfflineCatalog(ctx context.Context, store Store, registry string) (*catalog.Catalog, error) {
	rs := catalog.Builtin()
	start := registry + "apiextensions.k8s.io/customresourcedefinitions/"
	err := store.Range(ctx, start, PrefixEnd(start), true, func(kv *mvccpb.KeyValue) error {
		if r, ok := catalog.CustomFromCRDName(string(kv.Key[len(start):])); ok {
			rs = append(rs, r)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return catalog.New("built-in kube-apiserver resources and the CRDs stored in etcd (API server not used)", rs, nil), nil
}
