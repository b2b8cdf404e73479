#!/usr/bin/env bash
# version.sh prints regghost's version, the one place it comes from: make
# release and make image stamp it into the binaries (regghost version), the
# image's tag and org.opencontainers.image.version, and the copies of
# deploy/ they write to dist/deploy (the chart's appVersion, the static
# pod's image). $VERSION when set, else `git describe --tags --always
# --dirty` (v0.1.0 on a tagged commit), else dev.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${VERSION:-}" ]; then
	echo "$VERSION"
	exit
fi
git describe --tags --always --dirty 2>/dev/null || echo dev
