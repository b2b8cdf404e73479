package image

import (
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// binary is one platform's regghost, checked and read.
type binary struct {
	platform v1.Platform
	path     string
	content  []byte
	sha256   string
	info     *debug.BuildInfo
	settings map[string]string
}

// readBinary reads a regghost binary built for p and checks that it can run
// in an image with nothing else: a Go binary of p's OS and architecture,
// statically linked (no ELF interpreter: there is no libc to load).
func readBinary(p v1.Platform, path string) (*binary, error) {
	content, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s binary: %w", p, err)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read Go build information of %s: %w", path, err)
	}
	b := &binary{platform: p, path: path, content: content, info: info, settings: map[string]string{}}
	for _, s := range info.Settings {
		b.settings[s.Key] = s.Value
	}
	if b.settings["GOOS"] != p.OS || b.settings["GOARCH"] != p.Architecture {
		return nil, fmt.Errorf("%s is built for %s/%s, not %s", path, b.settings["GOOS"], b.settings["GOARCH"], p)
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s as ELF: %w", path, err)
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s is dynamically linked (build it with CGO_ENABLED=0): the image has no libc", path)
		}
	}
	sum := sha256.Sum256(content)
	b.sha256 = hex.EncodeToString(sum[:])
	return b, nil
}

// revision is the commit the binary was built from, as Go recorded it.
func (b *binary) revision() string { return b.settings["vcs.revision"] }

// commitTime is the time of that commit, as Go recorded it.
func (b *binary) commitTime() (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, b.settings["vcs.time"])
	return t, err == nil
}
