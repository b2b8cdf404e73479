package help

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// referenceDate is the date the man pages carry: fixed, so that the pages
// change only when the commands do.
var referenceDate = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

// WriteReference writes the command reference generated from the commands
// themselves: a markdown page per command into mdDir and a man page per
// command into manDir (docs/reference and docs/man; 'make docs').
func WriteReference(root *cobra.Command, mdDir, manDir string) error {
	root.DisableAutoGenTag = true
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for _, dir := range []string{mdDir, manDir} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s: %w", dir, err)
		}
	}
	if err := doc.GenMarkdownTree(root, mdDir); err != nil {
		return fmt.Errorf("markdown reference: %w", err)
	}
	header := &doc.GenManHeader{Title: "REGGHOST", Section: "1", Source: "regghost", Manual: "regghost manual", Date: &referenceDate}
	if err := doc.GenManTree(root, header, manDir); err != nil {
		return fmt.Errorf("man pages: %w", err)
	}
	return nil
}

// ReferenceFiles lists the files WriteReference writes into dir.
func ReferenceFiles(dir string) ([]string, error) {
	return filepath.Glob(filepath.Join(dir, "*"))
}
