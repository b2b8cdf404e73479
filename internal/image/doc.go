// Package image builds regghost's container image from the static binaries
// `make release` builds, without a Docker daemon and without a base image:
// one image per platform (linux/amd64, linux/arm64) holding the binary as
// /usr/local/bin/regghost, an empty /tmp and a CycloneDX SBOM read from the
// binary's Go build information, gathered in an OCI image index.
//
// Build writes the index as an OCI image layout (for crane push, skopeo copy
// oci:, containerd's import after tar), one docker-archive tarball per
// platform (docker load and podman load take one platform each) and each
// platform's SBOM beside them (for cosign or oras to attach after a push).
//
// Everything is a function of the binaries, the version and the commit:
// file times and the image's creation time are the commit's time (or
// SOURCE_DATE_EPOCH), so two builds of one commit give one digest.
package image
