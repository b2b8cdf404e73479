package cli

import (
	"strings"

	"github.com/spf13/pflag"
)

// ShellWord is s as one word of a POSIX shell: as it is when it holds
// nothing the shell reads otherwise, else in single quotes.
func ShellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@%+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Again is the command line that runs a command again: words, then each
// flag named that was given a value other than its default, so the next
// run is made with this one's settings. A --backup-dir is written unless
// it is the built-in root: a REGGHOST_BACKUP_DIR of this shell may not be
// set in the next. Each word is a shell word.
func Again(f *pflag.FlagSet, words []string, flags ...string) string {
	line := make([]string, 0, len(words)+2*len(flags))
	for _, w := range words {
		line = append(line, ShellWord(w))
	}
	for _, name := range flags {
		fl := f.Lookup(name)
		if fl == nil {
			continue
		}
		def := fl.DefValue
		if name == "backup-dir" {
			def = DefaultBackupRoot
		}
		if v := fl.Value.String(); v != def {
			line = append(line, "--"+name, ShellWord(v))
		}
	}
	return strings.Join(line, " ")
}
