// Command gendocs writes regghost's command reference, generated from the
// commands: docs/reference/*.md and docs/man/*.1 ('make docs'). A test in
// cmd fails when the checked-in pages differ from what this writes.
package main

import (
	"fmt"
	"os"

	"github.com/regghost/regghost/cmd"
)

func main() {
	for _, dir := range []string{"docs/reference", "docs/man"} {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
			os.Exit(1)
		}
	}
	if err := cmd.WriteReference("docs/reference", "docs/man"); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: %v\n", err)
		os.Exit(1)
	}
}
