package cmd

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/session"
)

// completions registers what the shell completes, on every command of the
// tree: -o's formats, -n's namespaces (read from etcd as the command would
// read it, within 2 seconds), and restore's backup directories.
func completions(g *globalOptions, root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("output"); f != nil {
			_, list, _ := strings.Cut(f.Usage, "output format: ")
			list, _, _ = strings.Cut(list, " (")
			list, _, _ = strings.Cut(list, ";")
			var formats []string
			for _, v := range strings.Split(list, ",") {
				if v = strings.TrimSpace(v); v != "" {
					formats = append(formats, strings.TrimSuffix(strings.Fields(v)[0], "…"))
				}
			}
			_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats, cobra.ShellCompDirectiveNoFileComp))
		}
		if c.Flags().Lookup("namespace") != nil {
			_ = c.RegisterFlagCompletionFunc("namespace", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
				return completeNamespaces(c, g), cobra.ShellCompDirectiveNoFileComp
			})
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range root.Commands() {
		if c.Name() == "restore" {
			c.ValidArgsFunction = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
				return completeBackups(), cobra.ShellCompDirectiveNoFileComp
			}
		}
	}
}

// completeNamespaces lists the namespace keys etcd holds; nothing when etcd
// does not answer within 2 seconds.
func completeNamespaces(c *cobra.Command, g *globalOptions) []string {
	g.noteGiven(c.Root().PersistentFlags())
	g.errOut = &strings.Builder{} // completion prints nothing but its words
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	store, closeStore, err := g.OpenStore(ctx, session.Reads{PageSize: etcdscan.DefaultPageSize})
	if err != nil {
		return nil
	}
	defer closeStore()
	prefix := g.Prefix + "namespaces/"
	var out []string
	_ = store.Range(ctx, prefix, etcdscan.PrefixEnd(prefix), true, func(kv *mvccpb.KeyValue) error {
		out = append(out, strings.TrimPrefix(string(kv.Key), prefix))
		return nil
	})
	return out
}

// completeBackups lists the backup directories under the backup root.
func completeBackups() []string {
	root := envOr("REGGHOST_BACKUP_DIR", defaultBackupRoot)
	dirs, err := os.ReadDir(root)
	if err != nil {
		return nil
	}
	var out []string
	for _, d := range dirs {
		if d.IsDir() {
			out = append(out, filepath.Join(root, d.Name()))
		}
	}
	return out
}
