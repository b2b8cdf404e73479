package cmd

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/pkg/backup"
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
			return backup.Dirs(cli.BackupRoot()), none
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
	ctx, cancel := completing(c, g)
	defer cancel()
	return g.KeysFrom(ctx, prefix, trim, limit)
}

// completing readies g for a completion, which prints nothing but its
// words and reads etcd for completionBudget at most.
func completing(c *cobra.Command, g *globalOptions) (context.Context, context.CancelFunc) {
	g.noteGiven(c.Root().PersistentFlags())
	g.errOut, g.Notices = &strings.Builder{}, nil
	return context.WithTimeout(context.Background(), completionBudget)
}

// completeMembers lists etcd's members by name.
func completeMembers(c *cobra.Command, g *globalOptions) []string {
	ctx, cancel := completing(c, g)
	defer cancel()
	return g.MemberNames(ctx)
}

// completeNamespaces lists the namespace keys etcd holds.
func completeNamespaces(c *cobra.Command, g *globalOptions) []string {
	return completeUnder(c, g, "namespaces/")
}
