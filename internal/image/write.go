package image

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// LayoutDir is the OCI image layout's directory under Options.Out.
const LayoutDir = "oci"

// write writes the layout, a docker-archive and an SBOM per platform into
// a new directory beside o.Out, then puts it in o.Out's place: a failed
// build leaves the previous one whole.
func write(o Options, tag name.Tag, idx v1.ImageIndex, images []built) (*Result, error) {
	parent := filepath.Dir(filepath.Clean(o.Out))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", parent, err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(o.Out)+"-")
	if err != nil {
		return nil, fmt.Errorf("create a directory beside %s: %w", o.Out, err)
	}
	defer os.RemoveAll(tmp)
	res, err := writeInto(tmp, o, tag, idx, images)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(o.Out); err != nil {
		return nil, fmt.Errorf("replace %s: %w", o.Out, err)
	}
	if err := os.Rename(tmp, o.Out); err != nil {
		return nil, fmt.Errorf("replace %s: %w", o.Out, err)
	}
	res.Layout = strings.Replace(res.Layout, tmp, o.Out, 1)
	for i := range res.Images {
		res.Images[i].DockerArchive = strings.Replace(res.Images[i].DockerArchive, tmp, o.Out, 1)
		res.Images[i].SBOM = strings.Replace(res.Images[i].SBOM, tmp, o.Out, 1)
	}
	return res, nil
}

func writeInto(dir string, o Options, tag name.Tag, idx v1.ImageIndex, images []built) (*Result, error) {
	res := &Result{Reference: tag.String(), Layout: filepath.Join(dir, LayoutDir)}
	var err error
	if res.Index, err = idx.Digest(); err != nil {
		return nil, err
	}
	lp, err := layout.Write(res.Layout, empty.Index)
	if err != nil {
		return nil, fmt.Errorf("write the OCI layout: %w", err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		AnnotationRefName:        o.Version,
		AnnotationContainerdName: tag.String(),
	})); err != nil {
		return nil, fmt.Errorf("write the OCI layout: %w", err)
	}
	for _, b := range images {
		base := fmt.Sprintf("regghost-%s-%s-%s", o.Version, b.platform.OS, b.platform.Architecture)
		pi := PlatformImage{
			Platform:      b.platform,
			Binary:        int64(len(b.bin.content)),
			DockerArchive: filepath.Join(dir, base+".docker.tar"),
			SBOM:          filepath.Join(dir, base+".cdx.json"),
		}
		if pi.Digest, err = b.img.Digest(); err != nil {
			return nil, err
		}
		if pi.Config, err = b.img.ConfigName(); err != nil {
			return nil, err
		}
		layers, err := b.img.Layers()
		if err != nil {
			return nil, err
		}
		for _, l := range layers {
			n, err := l.Size()
			if err != nil {
				return nil, err
			}
			pi.Compressed += n
		}
		if err := tarball.WriteToFile(pi.DockerArchive, tag, b.img); err != nil {
			return nil, fmt.Errorf("write %s: %w", pi.DockerArchive, err)
		}
		if err := os.WriteFile(pi.SBOM, b.sbom, 0o644); err != nil {
			return nil, fmt.Errorf("write %s: %w", pi.SBOM, err)
		}
		res.Images = append(res.Images, pi)
	}
	return res, nil
}

// replaceable refuses to replace anything but a directory Build wrote (one
// holding an OCI layout) or an empty one.
func replaceable(out string) error {
	entries, err := os.ReadDir(out)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("output directory: %w", err)
	}
	if len(entries) == 0 {
		return nil
	}
	if _, err := os.Stat(filepath.Join(out, LayoutDir, "oci-layout")); err != nil {
		return fmt.Errorf("output directory %s holds files and no image built before: not replacing it", out)
	}
	return nil
}
