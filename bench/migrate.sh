#!/bin/sh
# Objects migrated per second by `regghost migrate secrets` at 100,000 Secrets
# rotated from key1 to key2, on a real etcd and kube-apiserver, and the p99 of
# another client's ConfigMap updates (one every 20 ms) during the migration
# against idle, in one run. The servers are built as `make test` builds them.
# Usage: bench/migrate.sh [SECRETS]   (default 100000); the line to copy into
# bench/results.md is printed last.
set -eu
cd "$(dirname "$0")/.."
n="${1:-100000}"
REGGHOST_MIGRATE_SECRETS="$n" go test -count=1 -timeout 60m -run '^TestMigrateSecretsToANewKey$' -v ./e2e/ 2>&1 |
	tee /tmp/regghost-bench-migrate.log | grep -E 'migrate of [0-9]+ Secrets|^(--- |ok|FAIL)'
