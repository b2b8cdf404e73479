// Command grammarstats prints the figures issue 52 ("one tool, one
// grammar") tracks: commands, distinct local flag names, local flag uses,
// words of help (every command's short and long text, examples and flag
// help) and words of hand-written documentation.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/regghost/regghost/cmd"
)

func main() {
	root := cmd.NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	commands, uses, helpWords := 0, 0, 0
	flags := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" || c.HasParent() && c.Parent().Name() == "completion" {
			return
		}
		if c.Runnable() && c.HasParent() {
			commands++
		}
		helpWords += len(strings.Fields(c.Short + " " + c.Long + " " + c.Example))
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Name == "help" {
				return
			}
			if c.HasParent() {
				flags[f.Name] = true
				uses++
			}
			helpWords += len(strings.Fields(f.Usage))
		})
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	docWords := 0
	pages := []string{"README.md", "CONTRIBUTING.md"}
	for _, g := range []string{"docs/*.md", "docs/how-to/*.md"} {
		m, _ := filepath.Glob(g)
		pages = append(pages, m...)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err == nil {
			docWords += len(strings.Fields(string(b)))
		}
	}
	fmt.Printf("commands %d\nlocal flag names %d\nlocal flag uses %d\nhelp words %d\nhand-written doc words %d\n", commands, len(flags), uses, helpWords, docWords)
}
