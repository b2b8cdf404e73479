package image

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// commitTime is the commit time of the little programs' repository.
var commitTime = time.Date(2026, 3, 14, 15, 9, 26, 0, time.UTC)

// program is a little Go program that imports a module (so its SBOM has
// one), committed to its own git repository at commitTime so that Go
// stamps vcs.revision and vcs.time as in a release build.
const program = `package main

import (
	"fmt"

	"github.com/google/uuid"
)

func main() { fmt.Println("regghost", uuid.NewSHA1(uuid.NameSpaceURL, []byte("x"))) }
`

// cgoProgram links libc: a dynamically linked binary.
const cgoProgram = `package main

// #include <stdlib.h>
import "C"

func main() { C.abs(1) }
`

// repo is a git repository holding program, made once per test binary.
var repo = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "regghost-image-test")
	if err != nil {
		return "", err
	}
	gomod, err := os.ReadFile("../../go.sum")
	if err != nil {
		return "", err
	}
	var sums []string
	for _, l := range strings.Split(string(gomod), "\n") {
		if strings.HasPrefix(l, "github.com/google/uuid v1.6.0") {
			sums = append(sums, l)
		}
	}
	files := map[string]string{
		"go.mod":  "module example.com/tiny\n\ngo 1.26\n\nrequire github.com/google/uuid v1.6.0\n",
		"go.sum":  strings.Join(sums, "\n") + "\n",
		"main.go": program,
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return "", err
		}
	}
	date := commitTime.Format(time.RFC3339)
	for _, args := range [][]string{{"init", "-q"}, {"add", "."}, {"commit", "-q", "-m", "tiny"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
			"GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE="+date, "GIT_COMMITTER_DATE="+date)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", errors.New("git " + strings.Join(args, " ") + ": " + err.Error() + ": " + string(out))
		}
	}
	return dir, nil
})

// goBuild builds the package in dir for linux/arch into out.
func goBuild(t *testing.T, dir, arch, out string, cgo bool, vcs bool) string {
	t.Helper()
	cgoEnabled := "0"
	if cgo {
		cgoEnabled = "1"
	}
	// -buildvcs on the command line wins over GOFLAGS (which may say false).
	args := []string{"build", "-trimpath", "-buildvcs=" + strconv.FormatBool(vcs), "-o", out}
	cmd := exec.Command("go", append(args, ".")...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgoEnabled, "GOOS=linux", "GOARCH="+arch)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build for %s: %v\n%s", arch, err, b)
	}
	return out
}

// tinyBinaries are the little program built static for each platform.
var tinyBinaries = struct {
	sync.Mutex
	paths map[string]string
}{paths: map[string]string{}}

// tiny returns the little program built for linux/arch (static, from its
// git repository), building it once.
func tiny(t *testing.T, arch string) string {
	t.Helper()
	tinyBinaries.Lock()
	defer tinyBinaries.Unlock()
	if p, ok := tinyBinaries.paths[arch]; ok {
		return p
	}
	dir, err := repo()
	if err != nil {
		t.Fatal(err)
	}
	p := goBuild(t, dir, arch, filepath.Join(dir, "..", filepath.Base(dir)+"-"+arch), false, true)
	tinyBinaries.paths[arch] = p
	return p
}

// tinyOptions builds the little program's image into a new directory.
func tinyOptions(t *testing.T) Options {
	t.Helper()
	return Options{
		Repository: "registry.example.com/team/regghost",
		Version:    "v1.2.3",
		Source:     "https://github.com/regghost/regghost",
		Binaries:   map[string]string{"linux/amd64": tiny(t, "amd64"), "linux/arm64": tiny(t, "arm64")},
		Out:        filepath.Join(t.TempDir(), "image"),
	}
}

// layerFiles reads every entry of an image's layers.
func layerFiles(t *testing.T, img v1.Image) map[string]fileEntry {
	t.Helper()
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]fileEntry{}
	for _, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if _, err := io.Copy(&b, tr); err != nil {
				t.Fatal(err)
			}
			out[h.Name] = fileEntry{header: h, content: b.Bytes()}
		}
		rc.Close()
	}
	return out
}

type fileEntry struct {
	header  *tar.Header
	content []byte
}
