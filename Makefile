# regghost: `make demo` runs scan/purge/restore on a throwaway local cluster,
# `make test` runs every check CI runs. Both build etcd and kube-apiserver from
# the Go module proxy; the Go build cache keeps them after the first run.

GO ?= go

.PHONY: all build test test-fast lint unit e2e demo catalog bench tools release image clean runtime docs

all: build

build:
	$(GO) build -o bin/regghost .

# release builds static linux/amd64 and linux/arm64 binaries with the version
# stamped in, kubectl-plugin archives, SHA256SUMS, a krew manifest and the
# image (below) in dist/, and prints the image's digest.
release:
	GO=$(GO) hack/release.sh

# image builds the OCI image index of those binaries (no Docker daemon, no
# base image) in dist/image/, and copies of deploy/ naming its tag in
# dist/deploy/. The version is hack/version.sh's; IMAGE_REPO names the image.
image:
	GO=$(GO) hack/release.sh image

# tools builds (and caches) etcd 3.7, 3.6 and 3.5, etcdctl, etcdutl, kine (cgo,
# SQLite: needs a C compiler), kube-apiserver, kube-controller-manager and kubectl
# v1.37.2, v1.36.3 and v1.34.4 (the release matrix; each release about 9 minutes
# cold on 2 idle cores, far longer shared), Prometheus (for serve's e2e test;
# about 15 minutes) and Helm (to lint and render the chart): about 45 minutes
# cold on 2 idle cores in all, as README.md#requirements and CONTRIBUTING.md say.
tools:
	cd e2e/tools/etcd && $(GO) tool -n etcd >/dev/null && $(GO) tool -n etcdctl >/dev/null && $(GO) tool -n etcdutl >/dev/null
	cd e2e/tools/etcd35 && $(GO) tool -n etcd35 >/dev/null
	cd e2e/tools/etcd36 && $(GO) tool -n etcd36 >/dev/null
	cd e2e/tools/kine && $(GO) tool -n kine >/dev/null
	cd e2e/tools/kube-apiserver && $(GO) tool -n kube-apiserver >/dev/null && $(GO) tool -n kube-controller-manager >/dev/null && $(GO) tool -n kubectl >/dev/null
	cd e2e/tools/kube136 && $(GO) tool -n kube-apiserver >/dev/null && $(GO) tool -n kube-controller-manager >/dev/null && $(GO) tool -n kubectl >/dev/null
	cd e2e/tools/kube134 && $(GO) tool -n kube-apiserver >/dev/null && $(GO) tool -n kube-controller-manager >/dev/null && $(GO) tool -n kubectl >/dev/null
	cd e2e/tools/prometheus && $(GO) tool -n prometheus >/dev/null
	cd e2e/tools/helm && $(GO) tool -n helm >/dev/null

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	cd e2e/tools/etcd && $(GO) vet ./...
	cd e2e/tools/etcd35 && $(GO) vet ./...
	cd e2e/tools/etcd36 && $(GO) vet ./...

unit:
	$(GO) test -count=1 ./pkg/... ./cmd/... ./internal/...

# test-fast is the inner loop: lint, and every test but the e2e package (no
# server built, a few minutes); CI runs `make test`.
test-fast: lint
	$(GO) test -count=1 $$($(GO) list ./... | grep -v /e2e)

# The e2e tests wait on their servers more than they use the CPU: three run
# at a time (measured on 2 cores: each takes about 1.4 times as long as
# alone, and the package finishes in 1351 s against about 1460 two at a time).
E2E_PARALLEL ?= 3

e2e: tools runtime
	$(GO) test -count=1 -timeout 70m -parallel $(E2E_PARALLEL) ./e2e/...

# runtime installs podman, runc and skopeo from Debian's packages where they
# are missing and apt-get may run (as root), so the image's e2e test runs
# the image in a real container runtime; without them that step is skipped.
runtime:
	@command -v podman >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
		DEBIAN_FRONTEND=noninteractive timeout 600 sh -c 'apt-get update -qq && apt-get install -y -qq podman runc skopeo >/dev/null' ; } || \
		echo "podman is not installed: the image's e2e test will not run it in a container"

test: lint tools runtime
	$(GO) test -count=1 -timeout 70m -parallel $(E2E_PARALLEL) ./...

# docs regenerates what is generated from code: the command reference
# (docs/reference, docs/man) and the witness's RBAC rules (internal/witnessrole);
# tests fail when the checked-in files differ.
docs:
	$(GO) run ./hack/gendocs

demo:
	hack/demo.sh

# bench loads a real etcd with 1,000,000 keys and measures regghost scan
# side by side with etcdctl (about 6 minutes; BENCH_KEYS=100000 for a quick run).
BENCH_KEYS ?= 1000000
bench: tools
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/decode/ ./pkg/etcdscan/
	$(GO) run ./bench -keys $(BENCH_KEYS) -out bench/results.md

# catalog regenerates pkg/catalog/builtin.json from a live kube-apiserver,
# and pkg/dangling/bootstrap_policy.json and pkg/catalog/releases.json from
# every tested release's.
catalog: tools
	REGGHOST_UPDATE_CATALOG=1 $(GO) test -count=1 -run 'TestBuiltinCatalogMatchesAPIServer|TestBootstrapPolicyTable$$|TestReleaseStorageTable$$|TestKubernetesReleasesV.*/(bootstrap_policy|storage_table)' ./e2e/

clean:
	rm -rf bin dist
