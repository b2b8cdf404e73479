// Package help gives regghost's commands their help: the long text and
// examples of each command from its file under text/, the class lists and
// override values from the definitions the code checks, a usage template
// that wraps to Width and leaves the global flags to 'regghost options',
// the reference generated from the commands (markdown and man pages), and
// the link from a refusal to what its override risks.
package help

import (
	"embed"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// Width is the widest a help line may be: help is wrapped to fit it.
const Width = 100

// helpFiles hold each command's long help and examples, one file a command
// named after its path ("snapshot_restore.txt"; the root's is
// "regghost.txt"): the long text, then "Examples:" and the examples.
//
//go:embed text/*.txt
var helpFiles embed.FS

// helpName is the help file of c.
func helpName(c *cobra.Command) string {
	if !c.HasParent() {
		return "text/" + c.Name() + ".txt"
	}
	return "text/" + strings.ReplaceAll(strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" "), " ", "_") + ".txt"
}

// Set gives every command of root its help file and the templates that
// wrap help to Width and leave the global flags to 'regghost options'.
func Set(root *cobra.Command) {
	cobra.AddTemplateFunc("wrappedFlags", func(f *pflag.FlagSet) string { return f.FlagUsagesWrapped(Width) })
	cobra.AddTemplateFunc("commandLine", func(c *cobra.Command) string {
		// Every name of the list and one blank more, so that the longest
		// (stored-versions) never runs into its description.
		pad := 0
		for _, s := range c.Parent().Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				pad = max(pad, len(s.Name()))
			}
		}
		pad++
		return wrapText(fmt.Sprintf("  %-*s", pad, c.Name())+c.Short, pad+2)
	})
	root.SetUsageTemplate(usageTemplate)
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if text, err := helpFiles.ReadFile(helpName(c)); err == nil {
			long, example, _ := strings.Cut(classLists.Replace(string(text)), "\nExamples:\n")
			c.Long, c.Example = strings.TrimSpace(long), strings.TrimRight(example, "\n")
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
}

// classLists put the classes, each with its meaning, where a help file
// says {{ghost classes}} or {{suspect classes}}: one definition of them.
var classLists = func() *strings.Replacer {
	var ghosts, suspects strings.Builder
	for _, c := range etcdscan.Classes {
		w := &suspects
		if c.Ghost() {
			w = &ghosts
		}
		w.WriteString(wrapText(fmt.Sprintf("  %-19s %s", c, etcdscan.Meaning[c]), 22) + "\n")
	}
	return strings.NewReplacer("{{ghost classes}}\n", ghosts.String(), "{{suspect classes}}\n", suspects.String())
}()

// wrapText breaks a line longer than Width at spaces, the following
// lines indented by indent.
func wrapText(line string, indent int) string {
	return wrapAt(line, indent, Width)
}

// wrapAt breaks a line longer than width at spaces, the following lines
// indented by indent.
func wrapAt(line string, indent, width int) string {
	var out strings.Builder
	for len(line) > width {
		cut := strings.LastIndex(line[:width+1], " ")
		if cut <= indent {
			break
		}
		out.WriteString(strings.TrimRight(line[:cut], " ") + "\n")
		line = strings.Repeat(" ", indent) + strings.TrimLeft(line[cut:], " ")
	}
	out.WriteString(line)
	return out.String()
}

// OptionsCommand prints the global flags, which every command takes and
// no command's help repeats (as 'kubectl options' does).
func OptionsCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "options",
		Short: "Print the flags every command takes (etcd connection, API server, prefix)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.OutOrStdout(), "The following options can be passed to any command:\n\n%s",
				c.Root().PersistentFlags().FlagUsagesWrapped(Width))
			return err
		},
	}
}

// Groups are the root help's headings, by incident (cobra's groups, as
// etcdctl's; kubectl's command groups for the headings): each command's
// GroupID is one of their IDs, and a command without one is listed last.
var Groups = []*cobra.Group{
	{ID: "find", Title: "Find what etcd holds that Kubernetes cannot manage (read-only):"},
	{ID: "end", Title: "End an incident (each a dry run unless --confirm):"},
	{ID: "back", Title: "Put things back:"},
	{ID: "migrate", Title: "Stored versions and encryption keys:"},
	{ID: "etcd", Title: "etcd's space and members:"},
	{ID: "watch", Title: "Watch a cluster:"},
}

// commandGroups puts each command under its incident in the root help
// (Groups); the others (version, options, overrides, help, completion)
// are listed last.
var commandGroups = map[string]string{
	"scan": "find", "get": "find", "ls": "find", "diff": "find", "history": "find",
	"purge": "end", "unstick": "end", "dangling": "end",
	"restore": "back", "recover": "back", "snapshot": "back", "backup": "back",
	"stored-versions": "migrate", "migrate": "migrate",
	"space": "etcd", "members": "etcd", "leases": "etcd",
	"serve": "watch",
}

// Group adds Groups to root's help and puts each of its commands under
// its own.
func Group(root *cobra.Command) {
	root.AddGroup(Groups...)
	for _, c := range root.Commands() {
		if group, ok := commandGroups[c.Name()]; ok {
			c.GroupID = group
		}
	}
}

// usageTemplate is cobra's, with flags wrapped to Width, commands'
// summaries wrapped, and the global flags named once: in the root's help
// and in 'regghost options'.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}{{$cmds := .Commands}}{{if eq (len .Groups) 0}}

Available Commands:{{range $cmds}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
{{commandLine .}}{{end}}{{end}}{{else}}{{range $group := .Groups}}

{{.Title}}{{range $cmds}}{{if (and (eq .GroupID $group.ID) (or .IsAvailableCommand (eq .Name "help")))}}
{{commandLine .}}{{end}}{{end}}{{end}}

Other Commands:{{range $cmds}}{{if (and (eq .GroupID "") (or .IsAvailableCommand (eq .Name "help")))}}
{{commandLine .}}{{end}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{wrappedFlags .LocalFlags | trimTrailingWhitespaces}}{{end}}{{if not .HasParent}}

Every command takes these flags too; 'regghost options' lists them.{{else}}

Use "regghost options" for the flags every command takes (etcd connection, API server, prefix).{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`
