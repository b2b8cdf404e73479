package help

import (
	"io/fs"
	"strings"
	"testing"
)

// uncommentedExamples returns the example commands of a help file that no
// '#' line says the purpose of (issue 52, kubectl's templates.Examples):
// under "Examples:", every line starting with regghost must follow, at its
// own indent, a '#' line with something to say. An example whose lines end
// in '\' is one example, and its continuations need no line of their own.
// It also returns how many examples there are.
func uncommentedExamples(text string) (bad []string, examples int) {
	_, section, ok := strings.Cut(text, "\nExamples:\n")
	if !ok {
		return nil, 0
	}
	prev, continued := "", false
	for _, line := range strings.Split(section, "\n") {
		body := strings.TrimLeft(line, " \t")
		indent := line[:len(line)-len(body)]
		if !continued && (body == "regghost" || strings.HasPrefix(body, "regghost ")) {
			examples++
			comment, said := strings.CutPrefix(prev, indent+"# ")
			if !said || strings.TrimSpace(comment) == "" {
				bad = append(bad, line)
			}
		}
		continued = strings.HasSuffix(line, `\`)
		prev = line
	}
	return bad, examples
}

// TestEveryExampleSaysWhatItDoes: in every help file the package embeds,
// each example command is led by a '#' line saying what it does.
func TestEveryExampleSaysWhatItDoes(t *testing.T) {
	files, err := fs.Glob(helpFiles, "text/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("help files: %v, %v", files, err)
	}
	examples := 0
	for _, name := range files {
		t.Run(strings.TrimPrefix(name, "text/"), func(t *testing.T) {
			text, err := helpFiles.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			bad, n := uncommentedExamples(string(text))
			examples += n
			for _, line := range bad {
				t.Errorf("no '# what it does' line above the example %q", strings.TrimSpace(line))
			}
		})
	}
	if examples == 0 {
		t.Error("no example found in any help file")
	}
	t.Logf("%d examples in %d help files", examples, len(files))
}

// TestUncommentedExamples holds the check itself to what it must catch
// and what it must let through.
func TestUncommentedExamples(t *testing.T) {
	tests := []struct {
		name, text string
		bad        []string
	}{
		{"no examples", "scan walks the keyspace.\n", nil},
		{"bare", "Long.\n\nExamples:\n  regghost scan\n  regghost scan -o wide\n",
			[]string{"  regghost scan", "  regghost scan -o wide"}},
		{"each led", "Long.\n\nExamples:\n  # list the ghosts\n  regghost scan\n\n  # with their keys\n  regghost scan -o wide\n", nil},
		{"one led, one not", "Long.\n\nExamples:\n  # list the ghosts\n  regghost scan\n  regghost scan -o wide\n",
			[]string{"  regghost scan -o wide"}},
		{"blank line between", "Long.\n\nExamples:\n  # list the ghosts\n\n  regghost scan\n",
			[]string{"  regghost scan"}},
		{"empty comment", "Long.\n\nExamples:\n  #\n  regghost scan\n", []string{"  regghost scan"}},
		{"comment at another indent", "Long.\n\nExamples:\n# list the ghosts\n  regghost scan\n", []string{"  regghost scan"}},
		{"continued example is one", "Long.\n\nExamples:\n  # serve over TLS\n  regghost serve --cert-dir /d \\\n    --kubeconfig k\n", nil},
		{"continued line starting regghost", "Long.\n\nExamples:\n  # save, then read\n  regghost snapshot save x.db \\\n  regghost space --db x.db\n", nil},
		{"continued example unled", "Long.\n\nExamples:\n  regghost serve --cert-dir /d \\\n    --kubeconfig k\n",
			[]string{"  regghost serve --cert-dir /d \\"}},
		{"shell line before", "Long.\n\nExamples:\n  # the backup\n  B=/backups/x\n  regghost snapshot restore $B/s.jsonl\n",
			[]string{"  regghost snapshot restore $B/s.jsonl"}},
		{"regghost in the long text", "regghost reads etcd.\n  regghost scan\n\nExamples:\n  # list\n  regghost scan\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := uncommentedExamples(tt.text)
			if strings.Join(got, "\n") != strings.Join(tt.bad, "\n") {
				t.Errorf("uncommented %q, want %q", got, tt.bad)
			}
		})
	}
}
