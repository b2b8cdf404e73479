package cmd

import (
	"embed"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/regghost/regghost/pkg/etcdscan"
)

// helpWidth is the widest a help line may be: help is wrapped to fit it.
const helpWidth = 100

// helpFiles hold each command's long help and examples, one file a command
// named after its path ("snapshot_restore.txt"; the root's is
// "regghost.txt"): the long text, then "Examples:" and the examples.
//
//go:embed help/*.txt
var helpFiles embed.FS

// helpName is the help file of c.
func helpName(c *cobra.Command) string {
	if !c.HasParent() {
		return "help/" + c.Name() + ".txt"
	}
	return "help/" + strings.ReplaceAll(strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" "), " ", "_") + ".txt"
}

// setHelp gives every command of root its help file and the templates that
// wrap help to helpWidth and leave the global flags to 'regghost options'.
func setHelp(root *cobra.Command) {
	cobra.AddTemplateFunc("wrappedFlags", func(f *pflag.FlagSet) string { return f.FlagUsagesWrapped(helpWidth) })
	cobra.AddTemplateFunc("commandLine", func(c *cobra.Command) string {
		pad := c.Parent().CommandPathPadding() + 2
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

// wrapText breaks a line longer than helpWidth at spaces, the following
// lines indented by indent.
func wrapText(line string, indent int) string {
	var out strings.Builder
	for len(line) > helpWidth {
		cut := strings.LastIndex(line[:helpWidth+1], " ")
		if cut <= indent {
			break
		}
		out.WriteString(strings.TrimRight(line[:cut], " ") + "\n")
		line = strings.Repeat(" ", indent) + strings.TrimLeft(line[cut:], " ")
	}
	out.WriteString(line)
	return out.String()
}

// newOptionsCmd prints the global flags, which every command takes and
// no command's help repeats (as 'kubectl options' does).
func newOptionsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "options",
		Short: "Print the flags every command takes (etcd connection, API server, prefix)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(c.OutOrStdout(), "The following options can be passed to any command:\n\n%s",
				c.Root().PersistentFlags().FlagUsagesWrapped(helpWidth))
			return err
		},
	}
}

// usageTemplate is cobra's, with flags wrapped to helpWidth, commands'
// summaries wrapped, and the global flags named once: in the root's help
// and in 'regghost options'.
const usageTemplate = `Usage:{{if .Runnable}}
  {{.UseLine}}{{end}}{{if .HasAvailableSubCommands}}
  {{.CommandPath}} [command]{{end}}{{if gt (len .Aliases) 0}}

Aliases:
  {{.NameAndAliases}}{{end}}{{if .HasExample}}

Examples:
{{.Example}}{{end}}{{if .HasAvailableSubCommands}}

Available Commands:{{range .Commands}}{{if (or .IsAvailableCommand (eq .Name "help"))}}
{{commandLine .}}{{end}}{{end}}{{end}}{{if .HasAvailableLocalFlags}}

Flags:
{{wrappedFlags .LocalFlags | trimTrailingWhitespaces}}{{end}}{{if not .HasParent}}

Every command takes these flags too; 'regghost options' lists them.{{else}}

Use "regghost options" for the flags every command takes (etcd connection, API server, prefix).{{end}}{{if .HasAvailableSubCommands}}

Use "{{.CommandPath}} [command] --help" for more information about a command.{{end}}
`
