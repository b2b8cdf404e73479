package cmd

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/pflag"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/help"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/recovery"
)

// TestHelpFitsAndAgrees renders every command's help: no line is over
// help.Width columns, every command a person runs has examples, and every
// value an override flag's help offers is one its command accepts.
func TestHelpFitsAndAgrees(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	// The parsers each command checks its override values with.
	parsers := map[string]func(string) error{
		"purge --accept-impact":   func(s string) error { _, err := impact.ParseKind(s); return err },
		"unstick --accept-impact": func(s string) error { _, err := impact.ParseStripKind(s); return err },
		"recover --accept-impact": func(s string) error { _, err := recovery.ParseImpact(s); return err },
		"purge --force-class":     func(s string) error { _, err := etcdscan.ParseForceable(s); return err },
	}
	checked := map[string]bool{}
	for _, c := range commands(root) {
		name := strings.TrimPrefix(c.CommandPath(), "regghost ")
		t.Run(c.CommandPath(), func(t *testing.T) {
			var out bytes.Buffer
			c.SetOut(&out)
			if err := c.Help(); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(out.String(), "\n") {
				if n := utf8.RuneCountInString(line); n > help.Width {
					t.Errorf("line %d is %d columns: %q", i+1, n, line)
				}
			}
			if c.Runnable() && c.Name() != "help" && !strings.HasPrefix(name, "completion") && c.Example == "" {
				t.Errorf("%s has no examples", c.CommandPath())
			}
			for _, ex := range strings.Split(c.Example, "\n") {
				if strings.Contains(ex, "| xargs") && strings.Contains(ex, "--confirm") {
					t.Errorf("a destructive one-liner among the examples: %q", ex)
				}
			}
			// pflag takes a back-quoted word in a flag's help as its value's
			// name ("--delete-unavailable-apiservice regghost restore"),
			// pushing every description into a strip: help renders as
			// written only without back quotes.
			c.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if strings.Contains(f.Usage, "`") {
					t.Errorf("--%s's help has back quotes, which pflag renders as the value's name: %q", f.Name, f.Usage)
				}
			})
			for _, flag := range []string{"accept-impact", "force-class"} {
				f := c.LocalFlags().Lookup(flag)
				if f == nil {
					continue
				}
				parse, ok := parsers[name+" --"+flag]
				if !ok {
					t.Fatalf("no parser known for %s --%s", name, flag)
				}
				checked[name+" --"+flag] = true
				_, list, _ := strings.Cut(f.Usage, ": ")
				list, _, _ = strings.Cut(list, " (")
				for _, v := range strings.Split(list, ", ") {
					if err := parse(strings.TrimSpace(v)); err != nil {
						t.Errorf("--%s offers %q, which %s refuses: %v", flag, v, name, err)
					}
				}
			}
		})
	}
	var scan bytes.Buffer
	sc, _, _ := root.Find([]string{"scan"})
	sc.SetOut(&scan)
	_ = sc.Help()
	for _, class := range etcdscan.Classes {
		if !strings.Contains(scan.String(), "  "+string(class)+" ") {
			t.Errorf("scan --help does not list the class %s", class)
		}
	}
	for k := range parsers {
		if !checked[k] {
			t.Errorf("%s was not found in the help", k)
		}
	}
}

// TestRootHelpRoutesByIncident: the root help lists the commands under the
// incident they serve, every command a person runs for an incident in a
// group, only the helpers (version, options, overrides, help, completion)
// last.
func TestRootHelpRoutesByIncident(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	var out bytes.Buffer
	root.SetOut(&out)
	if err := root.Help(); err != nil {
		t.Fatal(err)
	}
	for _, g := range help.Groups {
		if !strings.Contains(out.String(), "\n"+g.Title+"\n") {
			t.Errorf("root help lacks the heading %q", g.Title)
		}
	}
	helpers := map[string]bool{"version": true, "options": true, "overrides": true, "help": true, "completion": true}
	for _, c := range root.Commands() {
		if c.GroupID == "" && !helpers[c.Name()] {
			t.Errorf("%s is in no group of the root help", c.Name())
		}
	}
}

// TestOneFlagOneShape walks the command tree: a flag name has one type and
// one shorthand wherever it appears, and a shorthand names one flag, so
// what an operator types once works the same everywhere.
func TestOneFlagOneShape(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	shape := map[string]string{}
	where := map[string]string{}
	short := map[string]string{}
	for _, c := range commands(root) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			s := f.Value.Type() + " -" + f.Shorthand
			if prev, ok := shape[f.Name]; ok && prev != s {
				t.Errorf("--%s is %q in %s but %q in %s", f.Name, s, c.CommandPath(), prev, where[f.Name])
			}
			shape[f.Name], where[f.Name] = s, c.CommandPath()
			if f.Shorthand == "" {
				return
			}
			if prev, ok := short[f.Shorthand]; ok && prev != f.Name {
				t.Errorf("-%s is --%s in %s but --%s elsewhere", f.Shorthand, f.Name, c.CommandPath(), prev)
			}
			short[f.Shorthand] = f.Name
		})
	}
}

// TestRootHelpPrintsTheExitCodes: the root help prints the exit-code table
// every command keeps, one line a code.
func TestRootHelpPrintsTheExitCodes(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	var out bytes.Buffer
	root.SetOut(&out)
	if err := root.Help(); err != nil {
		t.Fatal(err)
	}
	for _, code := range []int{ExitOK, ExitError, ExitUsage, ExitGhosts} {
		if !strings.Contains(out.String(), fmt.Sprintf("\n  %d  ", code)) {
			t.Errorf("the root help does not say what exit code %d means", code)
		}
	}
}

// durationNames are the only names a duration flag has, each for one kind
// of time: a wait for what the command changed to settle is --wait on
// every command that has one, never a name of its own.
var durationNames = map[string]string{
	"wait":              "how long to wait",
	"dial-timeout":      "",
	"command-timeout":   "",
	"interval":          "",
	"members-interval":  "",
	"terminating-after": "",
	"older-than":        "",
	"event-ttl":         "",
}

// TestOneNamePerKindOfWait walks the command tree: a duration flag has a
// known name, and every --wait says what it waits for in the same words.
func TestOneNamePerKindOfWait(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	for _, c := range commands(root) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			lead, ok := durationNames[f.Name]
			if !ok {
				t.Errorf("%s --%s: a duration with a name of its own (a wait is --wait)", c.CommandPath(), f.Name)
			}
			if !strings.HasPrefix(f.Usage, lead) {
				t.Errorf("%s --%s: its help %q does not start %q", c.CommandPath(), f.Name, f.Usage, lead)
			}
		})
	}
}

// TestOneDurationRule runs every command with each of its duration flags
// negative and 0: a negative one is a usage error everywhere, and so is 0
// unless the flag's help says what 0 means.
func TestOneDurationRule(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	for _, c := range commands(root) {
		if !c.Runnable() {
			continue
		}
		path := strings.Fields(c.CommandPath())[1:]
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Value.Type() != "duration" {
				return
			}
			for _, v := range []string{"-1s", "0"} {
				args := append(append([]string{}, path...), "--"+f.Name, v, "--endpoints", "127.0.0.1:1", "--dial-timeout", "100ms")
				if f.Name == "dial-timeout" {
					args = append(append([]string{}, path...), "--endpoints", "127.0.0.1:1", "--"+f.Name, v)
				}
				if v == "0" && strings.Contains(f.Usage, "0:") {
					// Accepted: checked without running the command (serve
					// would serve).
					fresh := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
					fc, _, err := fresh.Find(path)
					if err == nil {
						err = fc.ParseFlags([]string{"--" + f.Name, v})
					}
					if err == nil {
						err = cli.CheckDurations(fc)
					}
					if err != nil {
						t.Errorf("%v: 0 is refused though the help says what it means: %v", args, err)
					}
					continue
				}
				// A command's arguments are checked before its flags: give
				// it as many as it takes.
				var out, errOut bytes.Buffer
				var code int
				for _, pos := range [][]string{nil, {"x"}, {"x", "y"}} {
					out.Reset()
					errOut.Reset()
					code = Run(append(append(append([]string{}, path...), pos...), args[len(path):]...), strings.NewReader(""), &out, &errOut)
					if !strings.Contains(errOut.String(), "arg(s)") {
						break
					}
				}
				want := "--" + f.Name + " must be positive"
				if v != "0" {
					want = "--" + f.Name + " must not be negative"
				}
				if code != ExitUsage || !strings.Contains(errOut.String(), want) {
					t.Errorf("%v: exit %d, want %d with %q:\n%s", args, code, ExitUsage, want, errOut.String())
				}
			}
		})
	}
}

// TestRootHelpNamesStandApart: in the root help's command lists every
// command's name is followed by a blank, however long the longest name.
func TestRootHelpNamesStandApart(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	var out bytes.Buffer
	root.SetOut(&out)
	if err := root.Help(); err != nil {
		t.Fatal(err)
	}
	for _, c := range root.Commands() {
		if !c.IsAvailableCommand() {
			continue
		}
		if !strings.Contains(out.String(), "\n  "+c.Name()+" ") {
			t.Errorf("the root help does not list %q apart from its description:\n%s", c.Name(), out.String())
		}
	}
}

// TestEveryExampleSaysWhatItDoes walks the command tree (examples written
// in Go as well as in internal/help's files): every example command is led
// by a # line saying what it does, as kubectl's are.
func TestEveryExampleSaysWhatItDoes(t *testing.T) {
	root := NewRoot(nil, &bytes.Buffer{}, &bytes.Buffer{})
	for _, c := range commands(root) {
		prev, cont := "", false
		for _, l := range strings.Split(c.Example, "\n") {
			l = strings.TrimSpace(l)
			if strings.HasPrefix(l, "regghost ") && !cont && !strings.HasPrefix(prev, "# ") {
				t.Errorf("%s: the example %q has no # line saying what it does", c.CommandPath(), l)
			}
			cont = strings.HasSuffix(l, `\`)
			prev = l
		}
	}
}
