package image

import (
	"fmt"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// OCI annotation keys (image-spec annotations.md) Build sets on the index,
// on each image manifest and, as labels, in each image's config (docker
// load keeps the config, not the manifest).
const (
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationVersion  = "org.opencontainers.image.version"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationCreated  = "org.opencontainers.image.created"
	AnnotationTitle    = "org.opencontainers.image.title"
	AnnotationDesc     = "org.opencontainers.image.description"
	// AnnotationLicenses is the SPDX expression of the license regghost
	// is under (the LICENSE file at the repository's root).
	AnnotationLicenses = "org.opencontainers.image.licenses"
	// AnnotationRefName names the index in the layout's index.json: the
	// tag skopeo's oci:DIR:TAG and podman's oci: transport look for.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationContainerdName is the full reference containerd's import
	// (ctr, nerdctl) gives the index.
	AnnotationContainerdName = "io.containerd.image.name"
)

// License is the SPDX identifier of regghost's license, the LICENSE file
// the release archives carry too.
const License = "Apache-2.0"

// User is the user the image runs as: root. regghost reads the node's etcd
// client key, which kubeadm writes mode 0600 owned by root; deploy/'s
// static pod and chart run it as user 0 with every capability dropped, so
// it reads what root owns and nothing more.
const User = "0:0"

// Platforms are the platforms regghost is released for, in index order.
var Platforms = []v1.Platform{
	{OS: "linux", Architecture: "amd64"},
	{OS: "linux", Architecture: "arm64", Variant: "v8"},
}

// Options says what to build.
type Options struct {
	// Repository is the image's name without tag, e.g. ghcr.io/regghost/regghost.
	Repository string
	// Version is the tag and the org.opencontainers.image.version.
	Version string
	// Source is the repository URL (org.opencontainers.image.source).
	Source string
	// Binaries maps each platform of Platforms ("linux/amd64") to its
	// static regghost binary.
	Binaries map[string]string
	// Revision and Created default to the commit and commit time Go
	// recorded in the binaries (vcs.revision, vcs.time).
	Revision string
	Created  time.Time
	// Out is the directory Build writes; it is replaced as a whole.
	Out string
}

// Result is what Build wrote.
type Result struct {
	// Reference is Repository:Version.
	Reference string
	// Index is the digest of the image index.
	Index v1.Hash
	// Layout is the OCI image layout directory.
	Layout string
	// Images are the index's images, in Platforms order.
	Images []PlatformImage
}

// PlatformImage is one image of the index.
type PlatformImage struct {
	Platform v1.Platform
	// Digest is the image manifest's digest; Config the config's (the
	// image ID docker load prints).
	Digest, Config v1.Hash
	// Compressed is the size of its layer as pulled, Binary of the binary.
	Compressed, Binary int64
	// DockerArchive and SBOM are the files written for it.
	DockerArchive, SBOM string
}

// built is an image with what Build needs to write beside it.
type built struct {
	img      v1.Image
	bin      *binary
	sbom     []byte
	platform v1.Platform
}

// Build builds the index and writes it (see the package doc).
func Build(o Options) (*Result, error) {
	tag, err := name.NewTag(o.Repository+":"+o.Version, name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("image name %s:%s: %w", o.Repository, o.Version, err)
	}
	if o.Source == "" {
		return nil, fmt.Errorf("no source repository URL (org.opencontainers.image.source)")
	}
	if o.Out == "" {
		return nil, fmt.Errorf("no output directory")
	}
	if err := replaceable(o.Out); err != nil {
		return nil, err
	}
	for p := range o.Binaries {
		if !knownPlatform(p) {
			return nil, fmt.Errorf("platform %s: regghost images are built for %v", p, Platforms)
		}
	}
	var bins []*binary
	for _, p := range Platforms {
		path, ok := o.Binaries[platformKey(p)]
		if !ok {
			return nil, fmt.Errorf("no binary for %s", platformKey(p))
		}
		b, err := readBinary(p, path)
		if err != nil {
			return nil, err
		}
		bins = append(bins, b)
	}
	if err := o.fillFromBinaries(bins); err != nil {
		return nil, err
	}

	annotations := map[string]string{
		AnnotationSource:   o.Source,
		AnnotationVersion:  o.Version,
		AnnotationRevision: o.Revision,
		AnnotationCreated:  o.Created.UTC().Format(time.RFC3339),
		AnnotationTitle:    "regghost",
		AnnotationDesc:     "Finds and safely removes ghost resources in a Kubernetes cluster's etcd",
		AnnotationLicenses: License,
	}
	var images []built
	adds := make([]mutate.IndexAddendum, 0, len(bins))
	for _, b := range bins {
		bi, err := platformImage(b, o, annotations)
		if err != nil {
			return nil, err
		}
		images = append(images, bi)
		p := b.platform
		adds = append(adds, mutate.IndexAddendum{Add: plainImage{bi.img}, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	idx = mutate.Annotations(mutate.AppendManifests(idx, adds...), annotations).(v1.ImageIndex)
	return write(o, tag, idx, images)
}

// plainImage is an image whose descriptor in the index has no
// artifactType: go-containerregistry would set the config's media type
// there, a field image-spec 1.1 means for artifacts, which containers/image
// before 5.26 (skopeo 1.9, podman 4.3 in Debian 12) cannot copy with
// --preserve-digests.
type plainImage struct{ v1.Image }

// ArtifactType is empty: this is an image, not an artifact.
func (plainImage) ArtifactType() (string, error) { return "", nil }

// platformImage is b's image: the root file system layer, a config that
// runs the binary as User with Created at the commit's time, and the OCI
// annotations.
func platformImage(b *binary, o Options, annotations map[string]string) (built, error) {
	doc, err := sbom(b, o, o.Created)
	if err != nil {
		return built{}, err
	}
	layer, err := rootfsLayer(b.content, doc, o.Created)
	if err != nil {
		return built{}, fmt.Errorf("%s layer: %w", platformKey(b.platform), err)
	}
	created := v1.Time{Time: o.Created.UTC()}
	img, err := mutate.Append(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON),
		mutate.Addendum{Layer: layer, MediaType: types.OCILayer, History: v1.History{
			Created:   created,
			CreatedBy: "hack/image: " + BinaryPath + ", " + SBOMPath + ", " + TmpPath,
			Comment:   "regghost " + o.Version + " " + platformKey(b.platform),
		}})
	if err != nil {
		return built{}, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return built{}, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = b.platform.OS, b.platform.Architecture, b.platform.Variant
	cf.Created = created
	cf.Config = v1.Config{
		Entrypoint:   []string{BinaryPath},
		Env:          []string{"PATH=/usr/local/bin:/usr/bin:/bin"},
		User:         User,
		WorkingDir:   "/",
		Labels:       annotations,
		ExposedPorts: map[string]struct{}{"9819/tcp": {}},
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return built{}, err
	}
	img = mutate.Annotations(img, annotations).(v1.Image)
	return built{img: img, bin: b, sbom: doc, platform: b.platform}, nil
}

// fillFromBinaries takes Revision and Created from the binaries' build
// information where they are not given, and checks that every binary was
// built from the same commit.
func (o *Options) fillFromBinaries(bins []*binary) error {
	for _, b := range bins[1:] {
		if b.revision() != bins[0].revision() {
			return fmt.Errorf("%s is built from commit %q but %s from %q", b.path, b.revision(), bins[0].path, bins[0].revision())
		}
	}
	if o.Revision == "" {
		o.Revision = bins[0].revision()
	}
	if o.Created.IsZero() {
		if t, ok := bins[0].commitTime(); ok {
			o.Created = t
		}
	}
	if o.Revision == "" || o.Created.IsZero() {
		return fmt.Errorf("%s has no commit or commit time in its build information (built outside git?): give the revision and the creation time", bins[0].path)
	}
	return nil
}

func platformKey(p v1.Platform) string { return p.OS + "/" + p.Architecture }

func knownPlatform(key string) bool {
	for _, p := range Platforms {
		if platformKey(p) == key {
			return true
		}
	}
	return false
}
