package cli

import (
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/session"
)

// ScanPaceHelp is --max-keys-per-second's help where reads are paced to a
// ceiling (scan, serve, space).
const ScanPaceHelp = "pace reads to leave etcd room for the API server (0: as fast as etcd serves)"

// ReadsVar adds the flags of how a command reads the keyspace into r:
// --page-size, --max-keys-per-second (paceHelp says how it paces) and
// --stream, each defaulting to r's value.
func ReadsVar(f *pflag.FlagSet, r *session.Reads, paceHelp string) {
	f.Int64Var(&r.PageSize, "page-size", r.PageSize, "keys per etcd range request when paging (etcd older than 3.7, or --stream=false)")
	f.IntVar(&r.MaxKeysPerSecond, "max-keys-per-second", r.MaxKeysPerSecond, paceHelp)
	f.BoolVar(&r.Stream, "stream", r.Stream, "read with etcd's RangeStream where the server has it (3.7+): bounded chunks, no per-page count")
}

// CheckReads refuses a --page-size out of 1 to 10000 and a negative
// --max-keys-per-second.
func CheckReads(r session.Reads) error {
	if r.PageSize <= 0 || r.PageSize > 10000 {
		return Usage("--page-size must be between 1 and 10000, got %d", r.PageSize)
	}
	if r.MaxKeysPerSecond < 0 {
		return Usage("--max-keys-per-second must be 0 (no limit) or more, got %d", r.MaxKeysPerSecond)
	}
	return nil
}

// PacingVar adds the flags of how fast a command deletes into p:
// --batch-size and --rate.
func PacingVar(f *pflag.FlagSet, p *etcdwrite.Pacing) {
	f.IntVar(&p.BatchSize, "batch-size", etcdwrite.DefaultBatchSize, "keys per delete transaction (at most 128, etcd's default --max-txn-ops)")
	f.Float64Var(&p.PerSecond, "rate", etcdwrite.DefaultRate, "delete transactions per second")
}

// CheckPacing refuses a --batch-size out of 1 to 128 and a --rate that is
// not positive.
func CheckPacing(p etcdwrite.Pacing) error {
	if p.BatchSize < 1 || p.BatchSize > 128 {
		return Usage("--batch-size must be between 1 and 128, got %d", p.BatchSize)
	}
	if p.PerSecond <= 0 {
		return Usage("--rate must be positive, got %g", p.PerSecond)
	}
	return nil
}

// CheckNamespace refuses a -n that is not a namespace's name.
func CheckNamespace(ns string) error {
	if ns == "" {
		return nil
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return Usage("--namespace %q is not a valid namespace name: %s", ns, errs[0])
	}
	return nil
}

// CheckScan checks the flags of a scan's reads and verdicts (scan, serve,
// space).
func CheckScan(reads session.Reads, terminatingAfter time.Duration, apiCheckLimit int) error {
	if err := CheckReads(reads); err != nil {
		return err
	}
	if terminatingAfter <= 0 {
		return Usage("--terminating-after must be positive, got %s", terminatingAfter)
	}
	if apiCheckLimit < 1 {
		return Usage("--api-check-limit must be at least 1, got %d (--no-api leaves the API server out)", apiCheckLimit)
	}
	return nil
}
