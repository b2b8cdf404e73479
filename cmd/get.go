package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
)

func newGetCmd(g *globalOptions) *cobra.Command {
	var output string
	c := &cobra.Command{
		Use:   "get KEY",
		Short: "Decode the object stored under one etcd key",
		Example: `  regghost get /registry/pods/kb-system/p1 -o yaml
  regghost get /registry/secrets/kb-system/s1 --encryption-provider-config /etc/kubernetes/enc.yaml
  regghost get /registry/pods/kb-system/p1 --db /var/backups/etcd.db
  regghost get /registry/secrets/kb-system/s1 -o raw > s1.bin`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			switch output {
			case "yaml", "json", "raw":
			default:
				return usageError("--output %q is not one of yaml, json, raw", output)
			}
			return runGet(c.Context(), g, args[0], output, c.OutOrStdout())
		},
	}
	c.Flags().StringVarP(&output, "output", "o", "yaml", "output format: yaml, json, or raw (the stored bytes)")
	return c
}

func runGet(ctx context.Context, g *globalOptions, key, output string, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.etcd.CommandTimeout)
	defer cancel()
	store, closeStore, err := g.openStore(ctx, readSettings{pageSize: 1, stream: true})
	if err != nil {
		return err
	}
	defer closeStore()
	kv, err := store.Get(ctx, key)
	if err != nil {
		return fmt.Errorf("read %s: %w", key, err)
	}
	if kv == nil {
		return fmt.Errorf("key %s does not exist in etcd", key)
	}
	value := kv.Value
	if output == "raw" {
		_, err := out.Write(value)
		return err
	}
	obj, meta, err := decode.Typed(value)
	if errors.Is(err, decode.ErrEncrypted) && g.encryptionConfig != "" {
		dec, derr := g.decrypter(ctx)
		if derr != nil {
			return derr
		}
		k, perr := etcdscan.ParseKey(g.prefix, key)
		if perr != nil {
			return perr
		}
		r := catalog.New("", catalog.Builtin(), nil).ResourceFor(k.Prefix)
		plain, derr := dec.Decrypt(ctx, key, schema.GroupResource{Group: r.Group, Resource: r.Resource}, value)
		if derr != nil {
			return fmt.Errorf("decrypt %s: %w", key, derr)
		}
		obj, meta, err = decode.Typed(plain)
	}
	if err != nil {
		return fmt.Errorf("decode %s (%s): %w", key, meta.Format, err)
	}
	return printStructured(out, output, obj)
}
