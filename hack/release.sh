#!/usr/bin/env bash
# release.sh builds what an SRE copies onto a control-plane node that has no
# Go: static regghost binaries (CGO_ENABLED=0) for linux/amd64 and
# linux/arm64 with the version stamped in, a tar.gz per platform holding the
# binary as kubectl-regghost (a kubectl plugin) with README.md and LICENSE
# (krew requires the license in the archive), sha256 sums, and the krew
# plugin manifest that points at them; and the container image deploy/
# runs: an OCI image index of those binaries (hack/image), with copies of
# deploy/ that name its tag.
#
#   make release VERSION=v0.1.0 [RELEASE_URL=https://github.com/regghost/regghost/releases/download]
#   make image [VERSION=v0.1.0] [IMAGE_REPO=registry.example.com/team/regghost]
#
# It publishes nothing: CONTRIBUTING.md#publishing-a-release says what a
# maintainer uploads where.
#
# release.sh image builds the binaries, the image and the deploy copies
# only; release.sh binaries the binaries only.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=${1:-release}
case $MODE in
release | image | binaries) ;;
*)
	echo "usage: $0 [release|image|binaries]" >&2
	exit 2
	;;
esac
VERSION=$(hack/version.sh)
REVISION=$(git rev-parse HEAD 2>/dev/null || true)
COMMIT=${REVISION:0:12}
COMMIT=${COMMIT:-unknown}
# The image's creation time, and its files' times: the commit's, so that
# two builds of one commit give one digest.
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || true)}
export SOURCE_DATE_EPOCH
RELEASE_URL=${RELEASE_URL:-https://github.com/regghost/regghost/releases/download}
IMAGE_REPO=${IMAGE_REPO:-ghcr.io/regghost/regghost}
OUT=${OUT:-dist}
GO=${GO:-go}
PKG=github.com/regghost/regghost/pkg/version

if [ "$MODE" = release ]; then
	rm -rf "$OUT"
fi
mkdir -p "$OUT"
for arch in amd64 arm64; do
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch $GO build -trimpath \
		-ldflags "-s -w -X $PKG.Version=$VERSION -X $PKG.Commit=$COMMIT" \
		-o "$OUT/regghost-$VERSION-linux-$arch" .
done
[ "$MODE" = binaries ] && exit 0

# image writes the OCI image index of the binaries to $OUT/image (hack/image
# prints its digest), and copies of deploy/ to $OUT/deploy whose static pod
# and chart run that tag.
image() {
	$GO run ./hack/image -version "$VERSION" -repository "$IMAGE_REPO" -revision "$REVISION" \
		-binary "linux/amd64=$OUT/regghost-$VERSION-linux-amd64" \
		-binary "linux/arm64=$OUT/regghost-$VERSION-linux-arm64" \
		-out "$OUT/image"
	rm -rf "$OUT/deploy"
	cp -R deploy "$OUT/deploy"
	local pod=$OUT/deploy/static-pod/regghost.yaml chart=$OUT/deploy/helm/regghost
	sed -i -E "s#^([[:space:]]*image:[[:space:]]*).*regghost.*#\1$IMAGE_REPO:$VERSION#" "$pod"
	sed -i -E "s#^appVersion:.*#appVersion: \"$VERSION\"#" "$chart/Chart.yaml"
	sed -i -E "s#^([[:space:]]+repository:[[:space:]]*).*regghost.*#\1$IMAGE_REPO#" "$chart/values.yaml"
	grep -q "image: $IMAGE_REPO:$VERSION\$" "$pod" &&
		grep -q "^appVersion: \"$VERSION\"\$" "$chart/Chart.yaml" &&
		grep -q "repository: $IMAGE_REPO\$" "$chart/values.yaml" || {
		echo "release.sh: could not stamp $IMAGE_REPO:$VERSION into $OUT/deploy" >&2
		exit 1
	}
	echo "deploy/ for $IMAGE_REPO:$VERSION in $OUT/deploy/"
}
if [ "$MODE" = image ]; then
	image
	exit 0
fi

for arch in amd64 arm64; do
	name=regghost-$VERSION-linux-$arch
	stage=$(mktemp -d)
	cp "$OUT/$name" "$stage/kubectl-regghost"
	cp README.md LICENSE "$stage/"
	tar -C "$stage" -czf "$OUT/$name.tar.gz" kubectl-regghost README.md LICENSE
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
image
echo "release $VERSION ($COMMIT) in $OUT/:"
ls -l "$OUT"
