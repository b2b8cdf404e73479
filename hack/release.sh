#!/usr/bin/env bash
# release.sh builds what an SRE copies onto a control-plane node that has no
# Go: static regghost binaries (CGO_ENABLED=0) for linux/amd64 and
# linux/arm64 with the version stamped in, a tar.gz per platform holding the
# binary as kubectl-regghost (a kubectl plugin), sha256 sums, and the krew
# plugin manifest that points at them.
#
#   make release VERSION=v0.3.0 [RELEASE_URL=https://github.com/regghost/regghost/releases/download]
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
COMMIT=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
RELEASE_URL=${RELEASE_URL:-https://github.com/regghost/regghost/releases/download}
OUT=${OUT:-dist}
GO=${GO:-go}
PKG=github.com/regghost/regghost/pkg/version

rm -rf "$OUT"
mkdir -p "$OUT"
for arch in amd64 arm64; do
	name=regghost-$VERSION-linux-$arch
	stage=$(mktemp -d)
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath \
		-ldflags "-s -w -X $PKG.Version=$VERSION -X $PKG.Commit=$COMMIT" \
		-o "$OUT/$name" .
	cp "$OUT/$name" "$stage/kubectl-regghost"
	cp README.md "$stage/"
	tar -C "$stage" -czf "$OUT/$name.tar.gz" kubectl-regghost README.md
	rm -rf "$stage"
done
(cd "$OUT" && sha256sum regghost-* > SHA256SUMS)

sum() { awk -v f="$1" '$2 == f { print $1 }' "$OUT/SHA256SUMS"; }
cat > "$OUT/regghost.krew.yaml" <<MANIFEST
apiVersion: krew.googlecontainertools.github.com/v1alpha2
kind: Plugin
metadata:
  name: regghost
spec:
  version: $VERSION
  homepage: https://github.com/regghost/regghost
  shortDescription: Find and safely remove ghost resources in etcd
  description: |
    regghost reads the Kubernetes keyspace in etcd directly on a control-plane
    node, reports objects Kubernetes can no longer manage (ghosts: objects of a
    force-deleted namespace, custom resources whose CRD is gone, undecodable
    values) and removes them behind a verified snapshot and per-key backup
    that restore can put back.
  platforms:
  - selector:
      matchLabels:
        os: linux
        arch: amd64
    uri: $RELEASE_URL/$VERSION/regghost-$VERSION-linux-amd64.tar.gz
    sha256: $(sum "regghost-$VERSION-linux-amd64.tar.gz")
    bin: kubectl-regghost
  - selector:
      matchLabels:
        os: linux
        arch: arm64
    uri: $RELEASE_URL/$VERSION/regghost-$VERSION-linux-arm64.tar.gz
    sha256: $(sum "regghost-$VERSION-linux-arm64.tar.gz")
    bin: kubectl-regghost
MANIFEST
echo "release $VERSION ($COMMIT) in $OUT/:"
ls -l "$OUT"
