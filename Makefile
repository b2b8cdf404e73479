# regghost: `make demo` runs scan/purge/restore on a throwaway local cluster,
# `make test` runs every check CI runs. Both build etcd and kube-apiserver from
# the Go module proxy; the Go build cache keeps them after the first run.

GO ?= go

.PHONY: all build test lint unit e2e demo catalog bench tools release clean

all: build

build:
	$(GO) build -o bin/regghost .

# release builds static linux/amd64 and linux/arm64 binaries with the version
# stamped in, kubectl-plugin archives, SHA256SUMS and a krew manifest in dist/.
release:
	GO=$(GO) hack/release.sh

# tools builds (and caches) etcd 3.7, 3.6 and 3.5, etcdctl, etcdutl, kine (cgo, SQLite),
# kube-apiserver, kube-controller-manager and kubectl v1.37.2, v1.36.3 and v1.34.4
# (the release matrix; v1.34.4 about 9 minutes cold on 2 idle cores), Prometheus
# (for serve's e2e test; about 15 minutes cold on 2 cores) and Helm (to lint and
# render the chart).
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

e2e: tools
	$(GO) test -count=1 -timeout 45m ./e2e/...

test: lint tools
	$(GO) test -count=1 -timeout 45m ./...

demo:
	hack/demo.sh

# bench loads a real etcd with 1,000,000 keys and measures regghost scan
# side by side with etcdctl (about 6 minutes; BENCH_KEYS=100000 for a quick run).
BENCH_KEYS ?= 1000000
bench: tools
	$(GO) test -run '^$$' -bench . -benchmem ./pkg/decode/ ./pkg/etcdscan/
	$(GO) run ./bench -keys $(BENCH_KEYS) -out bench/results.md

# catalog regenerates pkg/catalog/builtin.json from a live kube-apiserver.
catalog: tools
	REGGHOST_UPDATE_CATALOG=1 $(GO) test -count=1 -run TestBuiltinCatalogMatchesAPIServer ./e2e/

clean:
	rm -rf bin dist
