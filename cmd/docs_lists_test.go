package cmd

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/regghost/regghost/internal/help"
)

// The lists in README.md and docs/*.md that name commands, flags and exit
// codes are checked here against the code, so that they cannot drift. Each
// list sits between two HTML comments, <!-- NAME:begin --> and
// <!-- NAME:end -->, and names each command, flag or code in backticks.

// markedBlocks returns the text between <!-- name:begin --> and
// <!-- name:end --> in file (every such block), failing when there is none.
func markedBlocks(t *testing.T, file, name string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- "+name+":begin -->", "<!-- "+name+":end -->"
	var blocks []string
	for rest := string(b); ; {
		_, after, ok := strings.Cut(rest, begin)
		if !ok {
			break
		}
		block, tail, ok := strings.Cut(after, end)
		if !ok {
			t.Fatalf("%s: %s without %s", file, begin, end)
		}
		blocks = append(blocks, block)
		rest = tail
	}
	if len(blocks) == 0 {
		t.Fatalf("%s has no list marked %s … %s", file, begin, end)
	}
	return blocks
}

var backticked = regexp.MustCompile("`([^`]+)`")

// spans returns the backticked spans of text, whitespace collapsed.
func spans(text string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(text, -1) {
		out = append(out, strings.Join(strings.Fields(m[1]), " "))
	}
	return out
}

// tree is regghost's command tree by path ("space reclaim"), without the
// root, help and completion.
type tree map[string]*cobra.Command

func commandTree(t *testing.T) tree {
	t.Helper()
	tr := tree{}
	for _, c := range commands(NewRoot(bytes.NewReader(nil), io.Discard, io.Discard)) {
		path := strings.TrimPrefix(c.CommandPath(), "regghost")
		path = strings.TrimSpace(path)
		if path == "" || c.Hidden || c.Deprecated != "" || c.Name() == "help" || strings.HasPrefix(path, "completion") {
			continue
		}
		tr[path] = c
	}
	return tr
}

// command turns a backticked span into the command path it names: the
// longest run of its first words that is a command ("regghost unstick
// namespace NAME" is unstick), "" for a span that names no command (a flag,
// `-o json`, a value).
func (tr tree) command(span string) string {
	words := strings.Fields(strings.TrimPrefix(span, "regghost "))
	for n := len(words); n > 0; n-- {
		if _, ok := tr[strings.Join(words[:n], " ")]; ok {
			return strings.Join(words[:n], " ")
		}
	}
	return ""
}

// named returns the commands a list names: each backticked span must name
// one (a span starting with '-' is a flag and is skipped).
func (tr tree) named(t *testing.T, where, text string) []string {
	t.Helper()
	var out []string
	for _, s := range spans(text) {
		if strings.HasPrefix(s, "-") {
			continue
		}
		c := tr.command(s)
		if c == "" {
			t.Errorf("%s names `%s`, which is no regghost command", where, s)
			continue
		}
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	slices.Sort(out)
	return out
}

// rows returns the cells of each row of the markdown tables in text,
// without the header and its rule.
func rows(text string) [][]string {
	var out [][]string
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			continue
		}
		line = strings.ReplaceAll(strings.Trim(line, "|"), `\|`, "\x00")
		var cells []string
		for _, c := range strings.Split(line, "|") {
			cells = append(cells, strings.TrimSpace(strings.ReplaceAll(c, "\x00", "|")))
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			// The rule under a table's header: the row before it was the
			// header.
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			continue
		}
		out = append(out, cells)
	}
	return out
}

// diffSets reports what want has that got lacks, and what got has that want
// lacks.
func diffSets(t *testing.T, where string, got, want []string, missing, extra string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("%s: %s %q", where, missing, w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("%s: %s %q", where, extra, g)
		}
	}
}

// TestCommandListsNameEveryCommand: README's command table names every
// command regghost runs, subcommands included (`space reclaim`, `backup
// prune`), and nothing else; docs/README.md's names every top-level command
// and each has its generated reference page under docs/reference.
func TestCommandListsNameEveryCommand(t *testing.T) {
	tr := commandTree(t)
	var runnable, top []string
	for path, c := range tr {
		if c.Runnable() {
			runnable = append(runnable, path)
		}
		if !strings.Contains(path, " ") {
			top = append(top, path)
		}
	}
	slices.Sort(runnable)
	slices.Sort(top)

	var readme []string
	for _, block := range markedBlocks(t, "../README.md", "commands") {
		for _, r := range rows(block) {
			readme = append(readme, tr.named(t, "README.md's command table", r[0])...)
		}
	}
	for _, c := range runnable {
		if !slices.Contains(readme, c) {
			t.Errorf("README.md's command table does not name `%s`", c)
		}
	}

	var docs []string
	for _, block := range markedBlocks(t, "../docs/README.md", "commands") {
		for _, r := range rows(block) {
			docs = append(docs, tr.named(t, "docs/README.md's command table", r[0])...)
		}
	}
	for _, c := range top {
		if !slices.Contains(docs, c) {
			t.Errorf("docs/README.md's command table does not name `%s`", c)
		}
		if _, err := os.Stat(filepath.Join("../docs/reference", "regghost_"+c+".md")); err != nil {
			t.Errorf("command %s has no reference page: %v", c, err)
		}
	}
}

// TestOneDescriptionPerCommand: a command is described once, by its help
// (docs/reference and docs/man are generated from it); the command tables
// link there, and no hand-written page describes a command again.
func TestOneDescriptionPerCommand(t *testing.T) {
	if _, err := os.Stat("../docs/commands"); !os.IsNotExist(err) {
		t.Errorf("docs/commands is back (%v): a command's description is its help, generated into docs/reference", err)
	}
	link := regexp.MustCompile(`\]\(([^)]+)\)`)
	for _, f := range []struct{ path, ref string }{{"../README.md", "docs/reference/regghost_"}, {"../docs/README.md", "reference/regghost_"}} {
		for _, block := range markedBlocks(t, f.path, "commands") {
			for _, r := range rows(block) {
				for _, m := range link.FindAllStringSubmatch(r[0], -1) {
					if !strings.HasPrefix(m[1], f.ref) {
						t.Errorf("%s's command table links %s, not the command's reference (%s…)", f.path, m[1], f.ref)
					}
				}
			}
		}
	}
}

// definers returns the commands that define flag (not inherited), sorted.
func definers(tr tree, flag string) []string {
	var out []string
	for path, c := range tr {
		if f := c.LocalNonPersistentFlags().Lookup(flag); f != nil && !f.Hidden && f.Deprecated == "" {
			out = append(out, path)
		}
	}
	slices.Sort(out)
	return out
}

// TestOverridesNameTheCommandsOfEachFlag: docs/overrides.md's table has a
// row for --confirm and for every flag a refusal links to (help's override
// links), each with its anchor, and each row and each section's
// **Commands:** line name exactly the commands that define that flag.
func TestOverridesNameTheCommandsOfEachFlag(t *testing.T) {
	tr := commandTree(t)
	b, err := os.ReadFile("../docs/overrides.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)

	// Every flag of every command that a refusal links to this page is an
	// override, and so is --confirm.
	overrides := []string{"confirm"}
	for _, c := range tr {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || slices.Contains(overrides, f.Name) {
				return
			}
			if strings.Contains(help.WithOverrideLink("refused: --"+f.Name), "regghost overrides "+f.Name+")") {
				overrides = append(overrides, f.Name)
			}
		})
	}
	slices.Sort(overrides)

	var table []string
	for _, block := range markedBlocks(t, "../docs/overrides.md", "overrides") {
		for _, r := range rows(block) {
			s := spans(r[0])
			if len(s) == 0 || !strings.HasPrefix(s[0], "--") {
				t.Errorf("docs/overrides.md: a row that names no flag: %q", r[0])
				continue
			}
			flag := strings.TrimPrefix(strings.Fields(s[0])[0], "--")
			table = append(table, flag)
			want := definers(tr, flag)
			if len(want) == 0 {
				t.Errorf("docs/overrides.md lists --%s, which no command has", flag)
				continue
			}
			if len(r) < 2 {
				t.Errorf("docs/overrides.md: the row of --%s names no command", flag)
				continue
			}
			diffSets(t, "docs/overrides.md's row for --"+flag, tr.named(t, "docs/overrides.md's row for --"+flag, r[1]), want,
				"does not name a command that takes it:", "names a command that does not take it:")
		}
	}
	slices.Sort(table)
	diffSets(t, "docs/overrides.md's table", table, overrides, "has no row for the override", "has a row for a flag that is no override:")

	// Each flag's section says which commands take it, and has its anchor.
	sections := regexp.MustCompile(`(?m)^## --([a-z-]+)\s*$`).FindAllStringSubmatchIndex(page, -1)
	var seen []string
	for i, m := range sections {
		flag := page[m[2]:m[3]]
		end := len(page)
		if i+1 < len(sections) {
			end = sections[i+1][0]
		}
		body := page[m[1]:end]
		if !strings.Contains(page, `<a id="`+flag+`"></a>`) {
			t.Errorf("docs/overrides.md: ## --%s has no anchor #%s (refusals link to it)", flag, flag)
		}
		_, after, ok := strings.Cut(body, "**Commands:**")
		if !ok {
			t.Errorf("docs/overrides.md: ## --%s has no **Commands:** line", flag)
			continue
		}
		para, _, _ := strings.Cut(after, "\n\n")
		seen = append(seen, flag)
		diffSets(t, "docs/overrides.md's **Commands:** of --"+flag, tr.named(t, "docs/overrides.md's **Commands:** of --"+flag, para), definers(tr, flag),
			"does not name a command that takes it:", "names a command that does not take it:")
	}
	for _, f := range overrides {
		if !slices.Contains(seen, f) {
			t.Errorf("docs/overrides.md has no section ## --%s", f)
		}
	}
}

// source is one of cmd's Go files (tests left out) and its text.
type source struct{ file, text string }

// cmdSources reads cmd's Go files, tests left out, in name order.
func cmdSources(t *testing.T) []source {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var out []source
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, source{f, string(b)})
	}
	return out
}

// refusesDB returns what each call of refuseDB in cmd's code names as the
// command that refuses --db ("purge", "unstick --confirm"), sorted.
func refusesDB(t *testing.T) []string {
	t.Helper()
	call := regexp.MustCompile(`refuseDB\(g, "([^"]+)"\)`)
	var out []string
	for _, src := range cmdSources(t) {
		for _, m := range call.FindAllStringSubmatch(src.text, -1) {
			if !slices.Contains(out, m[1]) {
				out = append(out, m[1])
			}
		}
	}
	slices.Sort(out)
	if len(out) == 0 {
		t.Fatal("no call of refuseDB found in cmd: has the guard moved?")
	}
	return out
}

// TestDBListsAgreeWithTheCode: the lists of the commands that refuse --db
// (docs/overrides.md, docs/troubleshooting.md) name exactly those whose code
// calls refuseDB, as it names them ("unstick --confirm"); README's list of
// the commands that read a db file with --db names commands that do (each
// run here against a snapshot, with no etcd to reach), and every command is
// in one of those lists or known here to have no use for --db.
func TestDBListsAgreeWithTheCode(t *testing.T) {
	tr := commandTree(t)
	refusing := refusesDB(t)
	for _, r := range refusing {
		if tr.command(r) == "" {
			t.Errorf("refuseDB names %q, which is no command", r)
		}
	}
	for _, file := range []string{"../docs/overrides.md", "../docs/troubleshooting.md"} {
		var listed []string
		for _, block := range markedBlocks(t, file, "db-refused") {
			for _, s := range spans(block) {
				if !strings.HasPrefix(s, "-") && !slices.Contains(listed, s) {
					listed = append(listed, s)
				}
			}
		}
		slices.Sort(listed)
		diffSets(t, file+"'s commands that refuse --db", listed, refusing, "does not name", "names what does not refuse --db:")
	}

	// How to run each command that reads a db file.
	args := map[string][]string{
		"scan":            nil,
		"stored-versions": nil,
		"space":           nil,
		"dangling":        nil,
		"get":             {"/registry/pods/shop/web"},
		"ls":              {"/registry/pods/"},
		"history":         {"/registry/pods/shop/web"},
		"unstick":         {"namespace", "shop"},
		"migrate":         {"configmaps"},
		"leases":          nil,
	}
	// Commands that never read etcd's keyspace through --db: serve and
	// members read the live cluster only and refuse --db; diff takes its two
	// files as arguments; the rest do not read etcd's keyspace.
	noDB := []string{"serve", "members", "members replace", "diff", "version", "options", "overrides", "backup", "backup ls", "backup show", "backup prune", "snapshot", "snapshot save", "snapshot status"}

	var readers []string
	for _, block := range markedBlocks(t, "../README.md", "db-readers") {
		readers = append(readers, tr.named(t, "README.md's --db readers", block)...)
	}
	for path := range tr {
		unconditional := slices.Contains(refusing, path)
		switch {
		case slices.Contains(readers, path) && unconditional:
			t.Errorf("README.md says %s reads a db file with --db, but it refuses --db", path)
		case !slices.Contains(readers, path) && !unconditional && !slices.Contains(noDB, path):
			t.Errorf("%s: say in README.md's --db list whether it reads a db file, or add it to noDB in this test", path)
		}
	}

	_, _, db := goldenSnapshot(t)
	for _, path := range readers {
		a, ok := args[path]
		if !ok {
			t.Errorf("README.md says %s reads a db file: say in this test how to run it", path)
			continue
		}
		t.Run(path, func(t *testing.T) {
			argv := append(append(strings.Fields(path), a...), "--db", db, "--no-api", "--endpoints", "127.0.0.1:1", "--node-root", t.TempDir())
			var out, errOut bytes.Buffer
			code := Run(argv, strings.NewReader(""), &out, &errOut)
			if (code != ExitOK && code != ExitGhosts) || !strings.Contains(errOut.String(), "db file "+db) {
				t.Errorf("regghost %s: exit %d, want it to read the db file:\n%s\n%s", strings.Join(argv, " "), code, errOut.String(), out.String())
			}
		})
	}
}

// TestExitCodeTablesAgreeWithTheCode: the exit-code tables (README.md,
// docs/output.md) list exactly the exit codes cmd defines, and the row of
// ExitGhosts names exactly the commands whose code returns it.
func TestExitCodeTablesAgreeWithTheCode(t *testing.T) {
	tr := commandTree(t)
	constant := regexp.MustCompile(`(?m)^\s*(Exit[A-Z]\w*)\s*=\s*(\d+)\s*$`)
	codes := map[string]string{}
	var ghosts []string
	exits, err := os.ReadFile("../internal/cli/exit.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range constant.FindAllStringSubmatch(string(exits), -1) {
		codes[m[2]] = m[1]
	}
	for _, src := range cmdSources(t) {
		f := src.file
		if strings.Contains(src.text, "Exit(ExitGhosts,") {
			name := strings.ReplaceAll(strings.TrimSuffix(f, ".go"), "_", " ")
			if _, ok := tr[name]; !ok {
				name = strings.ReplaceAll(name, " ", "-") // stored_versions.go
			}
			if _, ok := tr[name]; !ok {
				t.Fatalf("%s returns ExitGhosts, but names no command: say here which command it is", f)
			}
			ghosts = append(ghosts, name)
		}
	}
	if codes[strconv.Itoa(ExitGhosts)] != "ExitGhosts" || len(codes) < 4 {
		t.Fatalf("exit code constants found: %v", codes)
	}
	slices.Sort(ghosts)
	var want []string
	for c := range codes {
		want = append(want, c)
	}
	slices.Sort(want)
	for _, file := range []string{"../README.md", "../docs/output.md"} {
		var listed []string
		for _, block := range markedBlocks(t, file, "exit-codes") {
			for _, r := range rows(block) {
				listed = append(listed, r[0])
				if len(r) < 2 || len(strings.Fields(r[1])) < 2 {
					t.Errorf("%s: exit code %s has no meaning", file, r[0])
					continue
				}
				if r[0] == strconv.Itoa(ExitGhosts) {
					diffSets(t, file+"'s exit code 3", tr.named(t, file+"'s exit code 3", r[1]), ghosts,
						"does not name a command that returns it:", "names a command that never returns it:")
				}
			}
		}
		slices.Sort(listed)
		diffSets(t, file+"'s exit codes", listed, want, "lacks code", "lists a code cmd does not define:")
	}
}

// TestReadmeRoutesBySymptom: README's first 60 lines hold the symptom
// router and the install section; the router says the words people search
// for, names commands that exist, and routes to every how-to guide, each
// link to a page that exists.
func TestReadmeRoutesBySymptom(t *testing.T) {
	tr := commandTree(t)
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	first := strings.Join(lines[:min(60, len(lines))], "\n")
	for _, s := range []string{"<!-- symptoms:end -->", "\n## Install"} {
		if !strings.Contains(first, s) {
			t.Errorf("README.md's first 60 lines lack %q", strings.TrimSpace(s))
		}
	}
	router := strings.Join(markedBlocks(t, "../README.md", "symptoms"), "\n")
	for _, s := range []string{"Terminating", "database space exceeded", "NOSPACE", "failed calling webhook", "ServiceNotFound", "FailedDiscoveryCheck", "MissingEndpoints", "NamespaceDeletionDiscoveryFailure"} {
		if !strings.Contains(router, s) {
			t.Errorf("README.md's symptom router does not say %q", s)
		}
	}
	for _, r := range rows(router) {
		if len(r) < 3 {
			t.Errorf("README.md's symptom router: row %q lacks a command or a guide", r[0])
			continue
		}
		if len(tr.named(t, "README.md's symptom router", r[1])) == 0 {
			t.Errorf("README.md's symptom router: %q names no command", r[0])
		}
	}
	links := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`).FindAllStringSubmatch(router, -1)
	var linked []string
	for _, l := range links {
		linked = append(linked, l[1])
		if _, err := os.Stat(filepath.Join("..", l[1])); err != nil {
			t.Errorf("README.md's symptom router links %s: %v", l[1], err)
		}
	}
	guides, err := filepath.Glob("../docs/how-to/*.md")
	if err != nil || len(guides) == 0 {
		t.Fatalf("no how-to guides: %v", err)
	}
	for _, g := range guides {
		rel := strings.TrimPrefix(g, "../")
		if !slices.Contains(linked, rel) {
			t.Errorf("README.md's symptom router does not route to %s", rel)
		}
	}
}

// TestOneVersionEverywhere: every example that names regghost's version
// (make release VERSION=…, regghost-v…-linux-amd64, go install …@v…) names
// the one CHANGELOG.md says the first release will be.
func TestOneVersionEverywhere(t *testing.T) {
	changelog, err := os.ReadFile("../CHANGELOG.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`first release, (v\d+\.\d+\.\d+)`).FindSubmatch(changelog)
	if m == nil {
		t.Fatal("CHANGELOG.md does not say which version the first release will be")
	}
	want := string(m[1])
	named := regexp.MustCompile(`(?:VERSION=|regghost-|regghost@|-version |\()(v0\.\d+\.\d+)`)
	files := []string{"../README.md", "../CONTRIBUTING.md", "../hack/release.sh", "../hack/version.sh", "../hack/image/main.go"}
	docs, err := filepath.Glob("../docs/*/*.md")
	if err != nil {
		t.Fatal(err)
	}
	top, _ := filepath.Glob("../docs/*.md")
	for _, f := range append(append(files, top...), docs...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range named.FindAllSubmatch(b, -1) {
			if string(v[1]) != want {
				t.Errorf("%s names regghost %s; CHANGELOG.md's first release is %s", f, v[1], want)
			}
		}
	}
}

// TestDeployNamesNoUnpublishedImage: nothing is published yet, so deploy/
// names no image a registry could serve: only registry.invalid, which never
// resolves (make image stamps the real name into dist/deploy/).
func TestDeployNamesNoUnpublishedImage(t *testing.T) {
	ref := regexp.MustCompile(`(?m)^\s*(?:image|repository):\s*"?([^"\s#]+)`)
	for _, f := range []string{"../deploy/static-pod/regghost.yaml", "../deploy/helm/regghost/values.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		found := ref.FindAllStringSubmatch(string(b), -1)
		if len(found) == 0 {
			t.Errorf("%s names no image", f)
		}
		for _, m := range found {
			if !strings.HasPrefix(m[1], "registry.invalid/") {
				t.Errorf("%s names image %s, which is not published: name registry.invalid/…", f, m[1])
			}
		}
	}
}

// commands lists every command of a tree.
func commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, s := range c.Commands() {
		out = append(out, commands(s)...)
	}
	return out
}
