package cmd

import (
	"context"
	"errors"
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
	none := cobra.ShellCompDirectiveNoFileComp
	keys := func(c *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, none
		}
		return completeKeys(c, g, toComplete), none | cobra.ShellCompDirectiveNoSpace
	}
	byPath := map[string]cobra.CompletionFunc{
		"regghost restore": func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return completeBackups(), none
		},
		"regghost get":     keys,
		"regghost history": keys,
		"regghost ls":      keys,
		"regghost members replace": func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, none
			}
			return completeMembers(c, g), none
		},
		"regghost migrate": func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, none
			}
			return completeUnder(c, g, "customresourcedefinitions/"), none
		},
		"regghost unstick": func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0:
				return []string{"namespace", "crd"}, none
			case len(args) == 1 && (args[0] == "namespace" || args[0] == "ns"):
				return completeUnder(c, g, "namespaces/"), none
			case len(args) == 1 && args[0] == "crd":
				return completeUnder(c, g, "customresourcedefinitions/"), none
			}
			return nil, none
		},
	}
	for _, c := range commands(root) {
		if fn, ok := byPath[c.CommandPath()]; ok {
			c.ValidArgsFunction = fn
		}
	}
}

// commands lists every command of a tree.
func commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, s := range c.Commands() {
		out = append(out, commands(s)...)
	}
	return out
}

// completionBudget is how long a completion may read etcd: a shell waits
// for it.
const completionBudget = 2 * time.Second

// completeKeys lists up to 100 keys starting with what was typed (the
// registry prefix when nothing was); nothing when etcd does not answer in
// time.
func completeKeys(c *cobra.Command, g *globalOptions, typed string) []string {
	if typed == "" {
		return []string{g.Prefix}
	}
	return completeRange(c, g, typed, "", 100)
}

// completeUnder lists the names of the keys under the registry's dir/
// (namespaces/, customresourcedefinitions/).
func completeUnder(c *cobra.Command, g *globalOptions, dir string) []string {
	return completeRange(c, g, g.Prefix+dir, g.Prefix+dir, 0)
}

// completeRange lists the keys starting with prefix, trim cut from each,
// at most limit of them (0: all).
func completeRange(c *cobra.Command, g *globalOptions, prefix, trim string, limit int) []string {
	g.noteGiven(c.Root().PersistentFlags())
	g.errOut = &strings.Builder{} // completion prints nothing but its words
	ctx, cancel := context.WithTimeout(context.Background(), completionBudget)
	defer cancel()
	store, closeStore, err := g.OpenStore(ctx, session.Reads{PageSize: etcdscan.DefaultPageSize})
	if err != nil {
		return nil
	}
	defer closeStore()
	var out []string
	errEnough := errors.New("enough")
	_ = store.Range(ctx, prefix, etcdscan.PrefixEnd(prefix), true, func(kv *mvccpb.KeyValue) error {
		out = append(out, strings.TrimPrefix(string(kv.Key), trim))
		if limit > 0 && len(out) >= limit {
			return errEnough
		}
		return nil
	})
	return out
}

// completeMembers lists etcd's members by name; nothing when etcd does not
// answer in time.
func completeMembers(c *cobra.Command, g *globalOptions) []string {
	g.noteGiven(c.Root().PersistentFlags())
	g.errOut = &strings.Builder{}
	ctx, cancel := context.WithTimeout(context.Background(), completionBudget)
	defer cancel()
	cli, err := g.Connect(ctx)
	if err != nil {
		return nil
	}
	defer cli.Close()
	resp, err := cli.MemberList(ctx)
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range resp.Members {
		if m.Name != "" {
			out = append(out, m.Name)
		}
	}
	return out
}

// completeNamespaces lists the namespace keys etcd holds; nothing when etcd
// does not answer within completionBudget.
func completeNamespaces(c *cobra.Command, g *globalOptions) []string {
	return completeUnder(c, g, "namespaces/")
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
