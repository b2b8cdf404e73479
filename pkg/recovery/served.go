package recovery

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/resolve"
)

// Serving says whether the API server serves a resource now
// (*apiview.View).
type Serving interface {
	Serves(ctx context.Context, r catalog.Resource) error
}

// WaitServed waits, at most wait, until the API server serves the custom
// resources of a CRD just written, at its storage version: it asks every
// half second. It is what RunOptions.Served does with an API server.
func WaitServed(ctx context.Context, api Serving, crd *Object, wait time.Duration) error {
	res, err := CRDResource(crd)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		err := api.Serves(ctx, res)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s not served after %s: %s", res.GroupResource(), wait, firstLine(err))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// LoadTypes names resources as the live cluster does (Options.Types):
// the API server's discovery when view is set and answers, the CRDs stored
// in live under registry (decrypted with dec when set), and the release
// catalog.
func LoadTypes(ctx context.Context, live etcdscan.Store, registry string, view *apiview.View, dec *decrypt.Decrypter) (*resolve.Resolver, error) {
	var served *catalog.Catalog
	if view != nil {
		// Without discovery the types come from etcd and the catalog.
		served, _ = view.Catalog(ctx)
	}
	var d resolve.Decrypter
	if dec != nil {
		d = dec
	}
	return resolve.Load(ctx, live, registry, served, d)
}

// firstLine is an error's message up to its first line break.
func firstLine(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}
