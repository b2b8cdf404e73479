package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"path"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Paths inside the image.
const (
	// BinaryPath is the image's entrypoint.
	BinaryPath = "/usr/local/bin/regghost"
	// SBOMPath is the CycloneDX SBOM of the binary beside it (the name
	// ends in .cdx.json, which SBOM-aware scanners such as Syft look for).
	SBOMPath = "/usr/local/share/sbom/regghost.cdx.json"
	// TmpPath is where a scan spills findings ($TMPDIR unset): empty and
	// world-writable with the sticky bit, as on any Linux system.
	TmpPath = "/tmp"
)

// layerFile is one regular file or directory of the layer.
type layerFile struct {
	name    string
	mode    int64
	content []byte
	dir     bool
}

// rootfsLayer is the image's only layer: the binary, its SBOM and /tmp,
// owned by root (the binary must not be writable by the user it runs as),
// every time set to mtime, in a fixed order, gzip-compressed: the same
// inputs give the same bytes.
func rootfsLayer(bin, sbom []byte, mtime time.Time) (v1.Layer, error) {
	files := []layerFile{{name: TmpPath, mode: 0o1777, dir: true}}
	for _, f := range []layerFile{{name: BinaryPath, mode: 0o755, content: bin}, {name: SBOMPath, mode: 0o644, content: sbom}} {
		files = append(files, parents(f.name)...)
		files = append(files, f)
	}
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	seen := map[string]bool{}
	for _, f := range files {
		if seen[f.name] {
			continue
		}
		seen[f.name] = true
		h := &tar.Header{
			Name:    f.name[1:],
			Mode:    f.mode,
			ModTime: mtime.UTC().Truncate(time.Second),
			Format:  tar.FormatPAX,
		}
		if f.dir {
			h.Typeflag, h.Name = tar.TypeDir, h.Name+"/"
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.content))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, fmt.Errorf("write %s to the layer: %w", f.name, err)
		}
		if _, err := tw.Write(f.content); err != nil {
			return nil, fmt.Errorf("write %s to the layer: %w", f.name, err)
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close the layer: %w", err)
	}
	// gzip with no name and no time in its header: only the content counts.
	var gz bytes.Buffer
	zw, err := gzip.NewWriterLevel(&gz, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, fmt.Errorf("compress the layer: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("compress the layer: %w", err)
	}
	compressed := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(compressed)), nil
	}, tarball.WithMediaType(types.OCILayer))
}

// parents are the directories above name, outermost first.
func parents(name string) []layerFile {
	var out []layerFile
	for d := path.Dir(name); d != "/"; d = path.Dir(d) {
		out = append([]layerFile{{name: d, mode: 0o755, dir: true}}, out...)
	}
	return out
}
