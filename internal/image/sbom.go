package image

import (
	"bytes"
	"fmt"
	"sort"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/uuid"
)

// SBOMMediaType is the media type of the SBOM files Build writes.
const SBOMMediaType = "application/vnd.cyclonedx+json"

// sbomSpec is the CycloneDX version written: 1.5 is read by every
// scanner in use (Trivy, Grype, Dependency-Track) and holds all that Go's
// build information says.
const sbomSpec = cdx.SpecVersion1_5

// sbomNamespace seeds the BOM's serial number, a UUID derived from the
// binary's digest, so that one binary always gets the same SBOM.
var sbomNamespace = uuid.MustParse("6f3b1c2e-5a55-4e7b-9a35-2f1ad5c0e7a1")

// sbom is a CycloneDX document of what Go compiled into b: the module
// regghost itself (with the binary's SHA-256 and its build settings), the
// Go standard library of the toolchain that built it, and every module it
// links, as Go's build information lists them (replacements resolved).
// Go records no graph between modules, so each is a direct dependency of
// the main module.
func sbom(b *binary, o Options, created time.Time) ([]byte, error) {
	mainRef := purl(b.info.Main.Path, b.info.Main.Version)
	main := cdx.Component{
		BOMRef:     mainRef,
		Type:       cdx.ComponentTypeApplication,
		Name:       "regghost",
		Version:    o.Version,
		PackageURL: mainRef,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: b.sha256}},
		ExternalReferences: &[]cdx.ExternalReference{
			{Type: cdx.ERTypeVCS, URL: o.Source},
		},
		Properties: buildProperties(b),
	}
	goVersion := strings.TrimPrefix(b.info.GoVersion, "go")
	stdRef := purl("stdlib", goVersion)
	components := []cdx.Component{{BOMRef: stdRef, Type: cdx.ComponentTypeLibrary, Name: "stdlib", Version: goVersion, PackageURL: stdRef}}
	for _, d := range b.info.Deps {
		path, version := d.Path, d.Version
		var props *[]cdx.Property
		if d.Replace != nil {
			props = &[]cdx.Property{{Name: "cdx:gomod:replaces", Value: d.Path + "@" + d.Version}}
			path, version = d.Replace.Path, d.Replace.Version
		}
		ref := purl(path, version)
		components = append(components, cdx.Component{BOMRef: ref, Type: cdx.ComponentTypeLibrary, Name: path, Version: version, PackageURL: ref, Properties: props})
	}
	sort.Slice(components[1:], func(i, j int) bool { return components[1+i].BOMRef < components[1+j].BOMRef })
	deps := make([]string, 0, len(components))
	for _, c := range components {
		deps = append(deps, c.BOMRef)
	}

	bom := cdx.NewBOM()
	bom.SerialNumber = "urn:uuid:" + uuid.NewSHA1(sbomNamespace, []byte(b.sha256+" "+o.Version)).String()
	bom.Metadata = &cdx.Metadata{
		Timestamp: created.UTC().Format(time.RFC3339),
		Tools: &cdx.ToolsChoice{Components: &[]cdx.Component{{
			Type: cdx.ComponentTypeApplication, Name: "regghost hack/image", Version: o.Version,
			Description: "reads the binary's Go build information (debug/buildinfo)",
		}}},
		Component: &main,
	}
	bom.Components = &components
	bom.Dependencies = &[]cdx.Dependency{{Ref: mainRef, Dependencies: &deps}}
	var out bytes.Buffer
	enc := cdx.NewBOMEncoder(&out, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.EncodeVersion(bom, sbomSpec); err != nil {
		return nil, fmt.Errorf("encode the SBOM of %s: %w", b.path, err)
	}
	return out.Bytes(), nil
}

// buildProperties are the binary's Go build settings (GOOS, GOARCH,
// CGO_ENABLED, -trimpath, -ldflags, vcs.revision, ...) in the names
// cyclonedx-gomod gives them.
func buildProperties(b *binary) *[]cdx.Property {
	props := []cdx.Property{{Name: "cdx:gomod:build:goversion", Value: b.info.GoVersion}}
	for _, s := range b.info.Settings {
		name := "cdx:gomod:build:setting:" + s.Key
		if s.Key == "CGO_ENABLED" || strings.HasPrefix(s.Key, "GO") {
			name = "cdx:gomod:build:env:" + s.Key
		}
		props = append(props, cdx.Property{Name: name, Value: s.Value})
	}
	return &props
}

// purl is the package URL of a Go module (pkg:golang/<path>@<version>);
// '+' of +incompatible versions is escaped, as the purl specification asks.
func purl(path, version string) string {
	p := "pkg:golang/" + path
	if version != "" && version != "(devel)" {
		p += "@" + strings.ReplaceAll(version, "+", "%2B")
	}
	return p
}
