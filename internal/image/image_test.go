package image

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func TestMain(m *testing.M) {
	code := m.Run()
	if dir, err := repo(); err == nil {
		os.RemoveAll(dir)
		for _, p := range tinyBinaries.paths {
			os.Remove(p)
		}
	}
	os.Exit(code)
}

// TestBuildReadsBack: the layout holds an OCI index of one image per
// platform, annotated; each image runs the binary as root from an empty
// base, dated at the commit; its one layer holds the binary, the SBOM and
// /tmp; the docker archive beside it is the same image under the tag.
func TestBuildReadsBack(t *testing.T) {
	o := tinyOptions(t)
	res, err := Build(o)
	if err != nil {
		t.Fatal(err)
	}
	wantAnn := map[string]string{
		AnnotationSource:   "https://github.com/regghost/regghost",
		AnnotationVersion:  "v1.2.3",
		AnnotationCreated:  "2026-03-14T15:09:26Z",
		AnnotationTitle:    "regghost",
		AnnotationDesc:     "Finds and safely removes ghost resources in a Kubernetes cluster's etcd",
		AnnotationLicenses: "Apache-2.0",
		AnnotationRevision: "",
	}
	if res.Reference != "registry.example.com/team/regghost:v1.2.3" {
		t.Errorf("reference %s", res.Reference)
	}

	lp, err := layout.FromPath(filepath.Join(o.Out, LayoutDir))
	if err != nil {
		t.Fatal(err)
	}
	top, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	topManifest, err := top.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(topManifest.Manifests) != 1 {
		t.Fatalf("index.json lists %d entries, want the one index", len(topManifest.Manifests))
	}
	entry := topManifest.Manifests[0]
	if entry.MediaType != types.OCIImageIndex || entry.Digest != res.Index ||
		entry.Annotations[AnnotationRefName] != "v1.2.3" || entry.Annotations[AnnotationContainerdName] != res.Reference {
		t.Errorf("index.json entry %+v, want the OCI index %s named v1.2.3", entry, res.Index)
	}
	idx, err := top.ImageIndex(entry.Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	wantAnn[AnnotationRevision] = im.Annotations[AnnotationRevision]
	if len(wantAnn[AnnotationRevision]) != 40 {
		t.Errorf("revision annotation %q, want the commit of the binaries", wantAnn[AnnotationRevision])
	}
	if !reflect.DeepEqual(im.Annotations, wantAnn) {
		t.Errorf("index annotations %v, want %v", im.Annotations, wantAnn)
	}
	if len(im.Manifests) != len(Platforms) {
		t.Fatalf("%d images, want %d", len(im.Manifests), len(Platforms))
	}
	for i, desc := range im.Manifests {
		p := Platforms[i]
		t.Run(platformKey(p), func(t *testing.T) {
			if desc.Platform == nil || !reflect.DeepEqual(*desc.Platform, p) || desc.MediaType != types.OCIManifestSchema1 {
				t.Errorf("descriptor %+v, want platform %v", desc, p)
			}
			img, err := idx.Image(desc.Digest)
			if err != nil {
				t.Fatal(err)
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(m.Annotations, wantAnn) || m.Config.MediaType != types.OCIConfigJSON || len(m.Layers) != 1 || m.Layers[0].MediaType != types.OCILayer {
				t.Errorf("manifest %+v", m)
			}
			cf, err := img.ConfigFile()
			if err != nil {
				t.Fatal(err)
			}
			if cf.OS != p.OS || cf.Architecture != p.Architecture || cf.Variant != p.Variant || !cf.Created.Time.Equal(commitTime) {
				t.Errorf("config platform %s/%s/%s created %v", cf.OS, cf.Architecture, cf.Variant, cf.Created)
			}
			if !reflect.DeepEqual(cf.Config.Entrypoint, []string{BinaryPath}) || cf.Config.User != "0:0" || len(cf.Config.Cmd) != 0 || !reflect.DeepEqual(cf.Config.Labels, wantAnn) {
				t.Errorf("config %+v", cf.Config)
			}
			if len(cf.History) != 1 || !cf.History[0].Created.Time.Equal(commitTime) || len(cf.RootFS.DiffIDs) != 1 {
				t.Errorf("history %+v rootfs %+v", cf.History, cf.RootFS)
			}

			files := layerFiles(t, img)
			var names []string
			for n, f := range files {
				names = append(names, n)
				if f.header.Uid != 0 || f.header.Gid != 0 || !f.header.ModTime.Equal(commitTime) {
					t.Errorf("%s: owner %d:%d, time %v", n, f.header.Uid, f.header.Gid, f.header.ModTime)
				}
			}
			want := []string{"tmp/", "usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/regghost", "usr/local/share/", "usr/local/share/sbom/", "usr/local/share/sbom/regghost.cdx.json"}
			if !sameSet(names, want) {
				t.Errorf("layer holds %v, want %v", names, want)
			}
			bin, err := os.ReadFile(o.Binaries[platformKey(p)])
			if err != nil {
				t.Fatal(err)
			}
			if f := files["usr/local/bin/regghost"]; !bytes.Equal(f.content, bin) || f.header.Mode != 0o755 {
				t.Errorf("the binary in the layer differs from %s, or has mode %o", o.Binaries[platformKey(p)], f.header.Mode)
			}
			if f := files["tmp/"]; f.header.Mode != 0o1777 {
				t.Errorf("/tmp mode %o, want 1777", f.header.Mode)
			}

			sbomInLayer := files["usr/local/share/sbom/regghost.cdx.json"].content
			pi := res.Images[i]
			beside, err := os.ReadFile(pi.SBOM)
			if err != nil || !bytes.Equal(beside, sbomInLayer) {
				t.Errorf("the SBOM beside the layout (%s, %v) differs from the one in the image", pi.SBOM, err)
			}
			checkSBOM(t, sbomInLayer, bin, p)

			if pi.Digest != desc.Digest || pi.Platform.Architecture != p.Architecture || pi.Binary != int64(len(bin)) || pi.Compressed != m.Layers[0].Size {
				t.Errorf("result %+v, descriptor %+v", pi, desc)
			}
			tag, err := name.NewTag(res.Reference)
			if err != nil {
				t.Fatal(err)
			}
			docker, err := tarball.ImageFromPath(pi.DockerArchive, &tag)
			if err != nil {
				t.Fatalf("read %s as a docker archive: %v", pi.DockerArchive, err)
			}
			if got, err := docker.ConfigName(); err != nil || got != pi.Config {
				t.Errorf("docker archive's image ID %v (%v), want %s", got, err, pi.Config)
			}
			if got, err := docker.Layers(); err != nil || len(got) != 1 {
				t.Errorf("docker archive layers %d (%v)", len(got), err)
			} else if d, _ := got[0].Digest(); d != m.Layers[0].Digest {
				t.Errorf("docker archive layer %s, want %s", d, m.Layers[0].Digest)
			}
		})
	}
}

// checkSBOM: a CycloneDX document naming the binary (by its SHA-256) and
// the version, its platform, the Go standard library and the module it
// links.
func checkSBOM(t *testing.T, doc, bin []byte, p v1.Platform) {
	t.Helper()
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(doc), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		t.Fatalf("decode the SBOM: %v", err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != cdx.SpecVersion1_5 || !strings.HasPrefix(bom.SerialNumber, "urn:uuid:") || bom.Metadata == nil || bom.Metadata.Component == nil {
		t.Fatalf("SBOM header %s %v %s %+v", bom.BOMFormat, bom.SpecVersion, bom.SerialNumber, bom.Metadata)
	}
	if bom.Metadata.Timestamp != "2026-03-14T15:09:26Z" {
		t.Errorf("SBOM timestamp %s", bom.Metadata.Timestamp)
	}
	mc := bom.Metadata.Component
	sum := sha256.Sum256(bin)
	if mc.Name != "regghost" || mc.Version != "v1.2.3" || mc.Hashes == nil || (*mc.Hashes)[0].Value != hex.EncodeToString(sum[:]) {
		t.Errorf("SBOM main component %+v", mc)
	}
	props := map[string]string{}
	for _, pr := range *mc.Properties {
		props[pr.Name] = pr.Value
	}
	if props["cdx:gomod:build:env:GOARCH"] != p.Architecture || props["cdx:gomod:build:env:CGO_ENABLED"] != "0" || props["cdx:gomod:build:setting:-trimpath"] != "true" {
		t.Errorf("SBOM build properties %v", props)
	}
	purls := map[string]bool{}
	for _, c := range *bom.Components {
		purls[c.PackageURL] = true
	}
	if !purls["pkg:golang/github.com/google/uuid@v1.6.0"] || !purls["pkg:golang/stdlib@"+strings.TrimPrefix(goVersion(t), "go")] {
		t.Errorf("SBOM components %v", purls)
	}
	if bom.Dependencies == nil || len(*(*bom.Dependencies)[0].Dependencies) != len(*bom.Components) {
		t.Errorf("SBOM dependencies %+v", bom.Dependencies)
	}
}

func goVersion(t *testing.T) string {
	t.Helper()
	bi, err := buildinfo.ReadFile(tiny(t, "amd64"))
	if err != nil {
		t.Fatal(err)
	}
	return bi.GoVersion
}

// TestBuildIsReproducible: two builds of the same binaries give the same
// index digest and the same bytes in every file; another creation time
// (SOURCE_DATE_EPOCH) gives another digest.
func TestBuildIsReproducible(t *testing.T) {
	o1, o2 := tinyOptions(t), tinyOptions(t)
	r1, err := Build(o1)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Build(o2)
	if err != nil {
		t.Fatal(err)
	}
	if r1.Index != r2.Index {
		t.Fatalf("two builds: index %s and %s", r1.Index, r2.Index)
	}
	if h1, h2 := treeHash(t, o1.Out), treeHash(t, o2.Out); !reflect.DeepEqual(h1, h2) {
		t.Errorf("two builds wrote different files:\n%v\n%v", h1, h2)
	}
	o3 := tinyOptions(t)
	o3.Created = commitTime.Add(time.Hour)
	r3, err := Build(o3)
	if err != nil {
		t.Fatal(err)
	}
	if r3.Index == r1.Index {
		t.Errorf("another creation time, same digest %s", r3.Index)
	}
}

// treeHash is the SHA-256 of every file under dir, by relative path.
func treeHash(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		out[rel] = hex.EncodeToString(sum[:])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBuildRefuses: what cannot make a working image is refused with one
// line, and the previous build in the output directory stays whole.
func TestBuildRefuses(t *testing.T) {
	dir, err := repo()
	if err != nil {
		t.Fatal(err)
	}
	scratch := t.TempDir()
	dynamic := filepath.Join(scratch, "cgo")
	if err := os.MkdirAll(dynamic, 0o755); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dynamic, "go.mod"), "module example.com/cgo\n\ngo 1.26\n")
	mustWrite(t, filepath.Join(dynamic, "main.go"), cgoProgram)
	dynamicBin := goBuild(t, dynamic, "amd64", filepath.Join(scratch, "dynamic"), true, false)
	noVCS := goBuild(t, dir, "amd64", filepath.Join(scratch, "novcs"), false, false)
	script := filepath.Join(scratch, "script")
	mustWrite(t, script, "#!/bin/sh\necho regghost\n")
	foreign := filepath.Join(scratch, "home")
	mustWrite(t, filepath.Join(foreign, "notes.txt"), "mine")

	tests := []struct {
		name   string
		modify func(o *Options)
		want   string
	}{
		{"no arm64 binary", func(o *Options) { delete(o.Binaries, "linux/arm64") }, "no binary for linux/arm64"},
		{"an unknown platform", func(o *Options) { o.Binaries["windows/amd64"] = script }, "platform windows/amd64"},
		{"the arm64 binary given for amd64", func(o *Options) { o.Binaries["linux/amd64"] = o.Binaries["linux/arm64"] }, "is built for linux/arm64, not linux/amd64"},
		{"a dynamically linked binary", func(o *Options) { o.Binaries["linux/amd64"] = dynamicBin }, "is dynamically linked"},
		{"not a Go binary", func(o *Options) { o.Binaries["linux/amd64"] = script }, "read Go build information"},
		{"a binary that is not there", func(o *Options) { o.Binaries["linux/amd64"] = filepath.Join(scratch, "missing") }, "read linux/amd64 binary"},
		{"binaries of two commits", func(o *Options) { o.Binaries["linux/amd64"] = noVCS }, "is built from commit"},
		{"a version that is not a tag", func(o *Options) { o.Version = "v1 2" }, "image name"},
		{"no source URL", func(o *Options) { o.Source = "" }, "no source repository URL"},
		{"an output directory of other files", func(o *Options) { o.Out = foreign }, "holds files and no image built before"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tinyOptions(t)
			if _, err := Build(o); err != nil {
				t.Fatal(err)
			}
			tt.modify(&o)
			want := treeHash(t, o.Out)
			_, err := Build(o)
			if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %v, want one line with %q", err, tt.want)
			}
			if got := treeHash(t, o.Out); !reflect.DeepEqual(got, want) {
				t.Errorf("the refused build changed %s", o.Out)
			}
		})
	}

	t.Run("binaries without commit information, given none", func(t *testing.T) {
		o := tinyOptions(t)
		arm := goBuild(t, dir, "arm64", filepath.Join(scratch, "novcs-arm64"), false, false)
		o.Binaries = map[string]string{"linux/amd64": noVCS, "linux/arm64": arm}
		if _, err := Build(o); err == nil || !strings.Contains(err.Error(), "no commit or commit time") {
			t.Fatalf("error %v", err)
		}
		o.Revision, o.Created = "0123456789abcdef0123456789abcdef01234567", commitTime
		if _, err := Build(o); err != nil {
			t.Fatalf("with the revision and time given: %v", err)
		}
	})
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func sameSet(a, b []string) bool {
	m := map[string]int{}
	for _, s := range a {
		m[s]++
	}
	for _, s := range b {
		m[s]--
	}
	for _, n := range m {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}
