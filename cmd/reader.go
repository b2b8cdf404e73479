package cmd

import (
	"context"

	"github.com/regghost/regghost/pkg/objread"
)

// contentReader is the read-through for values a check needs the fields
// of: decrypted with --encryption-provider-config (or the node's), else read
// through the API server when it answers.
func (g *globalOptions) contentReader(ctx context.Context) (*objread.Reader, error) {
	r := &objread.Reader{Registry: g.prefix}
	dec, err := g.decrypter(ctx)
	if err != nil {
		return nil, err
	}
	if dec != nil {
		r.Decrypter = dec
	}
	if view, _ := g.api(); view != nil {
		r.API = view
	}
	return r, nil
}
