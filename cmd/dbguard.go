package cmd

import "github.com/regghost/regghost/internal/cli"

// refuseDB refuses a command that writes to the live cluster when --db is
// given: --db reads a file offline, and what a file says must never delete
// or change a live key. It is one line, exit code 2, and comes before
// anything is read or written.
func refuseDB(g *globalOptions, command string) error {
	if g.DB == "" {
		return nil
	}
	return cli.Usage("--db %s reads a file offline, and %s writes to the live cluster: it never acts on a file's verdict; drop --db (regghost scan --db shows what the file holds); nothing was changed", g.DB, command)
}
