package cli

import (
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/regghost/regghost/pkg/backup"
)

// Cluster is what a completion reads from the cluster, as the command
// completed would reach it.
type Cluster interface {
	// Ready readies the settings for a completion of c, which prints
	// nothing but its words, and says the registry prefix.
	Ready(c *cobra.Command) (prefix string)
	// KeysFrom lists the keys starting with prefix, trim cut from each,
	// at most limit of them (0: all).
	KeysFrom(ctx context.Context, prefix, trim string, limit int) []string
	// MemberNames lists etcd's members by name.
	MemberNames(ctx context.Context) []string
}

// completionBudget is how long a completion may read etcd: a shell waits
// for it.
const completionBudget = 2 * time.Second

// Completions registers what the shell completes, on every command of the
// tree: -o's formats, -n's namespaces (read from etcd as the command would
// read it, within 2 seconds), the keys of get, history and ls, the members
// of members replace, the CRDs of migrate, unstick's targets and restore's
// backup directories.
func Completions(root *cobra.Command, cl Cluster) {
	none := cobra.ShellCompDirectiveNoFileComp
	// under lists the names of the keys under the registry's dir/.
	under := func(c *cobra.Command, dir string) []string {
		prefix := cl.Ready(c)
		ctx, cancel := context.WithTimeout(context.Background(), completionBudget)
		defer cancel()
		return cl.KeysFrom(ctx, prefix+dir, prefix+dir, 0)
	}
	for _, c := range commands(root) {
		if f := c.Flags().Lookup("output"); f != nil {
			_ = c.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(formats(f.Usage), none))
		}
		if c.Flags().Lookup("namespace") != nil {
			_ = c.RegisterFlagCompletionFunc("namespace", func(c *cobra.Command, _ []string, _ string) ([]string, cobra.ShellCompDirective) {
				return under(c, "namespaces/"), none
			})
		}
	}
	// keys lists up to 100 keys starting with what was typed (the registry
	// prefix when nothing was); nothing when etcd does not answer in time.
	keys := func(c *cobra.Command, args []string, typed string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, none
		}
		prefix := cl.Ready(c)
		if typed == "" {
			return []string{prefix}, none | cobra.ShellCompDirectiveNoSpace
		}
		ctx, cancel := context.WithTimeout(context.Background(), completionBudget)
		defer cancel()
		return cl.KeysFrom(ctx, typed, "", 100), none | cobra.ShellCompDirectiveNoSpace
	}
	byPath := map[string]cobra.CompletionFunc{
		"regghost restore": func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return backup.Dirs(BackupRoot()), none
		},
		"regghost get":     keys,
		"regghost history": keys,
		"regghost ls":      keys,
		"regghost members replace": func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, none
			}
			cl.Ready(c)
			ctx, cancel := context.WithTimeout(context.Background(), completionBudget)
			defer cancel()
			return cl.MemberNames(ctx), none
		},
		"regghost migrate": func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, none
			}
			return under(c, "customresourcedefinitions/"), none
		},
		"regghost unstick": func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			switch {
			case len(args) == 0:
				return []string{"namespace", "crd"}, none
			case len(args) == 1 && (args[0] == "namespace" || args[0] == "ns"):
				return under(c, "namespaces/"), none
			case len(args) == 1 && args[0] == "crd":
				return under(c, "customresourcedefinitions/"), none
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

// formats are the values -o's help lists ("output format: table, wide,
// json (…)").
func formats(usage string) []string {
	_, list, _ := strings.Cut(usage, "output format: ")
	list, _, _ = strings.Cut(list, " (")
	list, _, _ = strings.Cut(list, ";")
	var out []string
	for _, v := range strings.Split(list, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, strings.TrimSuffix(strings.Fields(v)[0], "…"))
		}
	}
	return out
}

// commands lists every command of a tree.
func commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, s := range c.Commands() {
		out = append(out, commands(s)...)
	}
	return out
}
