package session

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/leases"
	"github.com/regghost/regghost/pkg/names"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/objread"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/usage"
)

// ScanOptions are the settings of one scan over a Read.
type ScanOptions struct {
	Namespace        string
	TerminatingAfter time.Duration
	APICheckLimit    int
	// SpillAfter is how many findings stay in memory before they spill
	// (0: SpillAfterEnv's, else etcdscan's default).
	SpillAfter int
	Now        func() time.Time
	// KMSKeyIDs asks the KMS v2 plugins that write their key ID (not
	// offline: the live plugin's key ID is not a snapshot's).
	KMSKeyIDs bool
	// Existed, if set, is asked about a namespace of which etcd holds
	// nothing before that is refused as a typo: true when something else
	// (a regghost backup named after it) shows it existed, and the scan
	// then reports it empty.
	Existed func(namespace string) bool
	// Progress, if set, starts the progress display and returns the
	// function the scan reports to and the one that ends the display.
	Progress func() (report notice.Progress, done func())
	// Leases, if set, audits etcd's leases from the scan's own pass (no
	// second read): the report counts each class (Report.Leases).
	Leases *leases.Options
	// AuditLeases, with Settings.Scan over the whole registry, sets
	// Leases as this node's kube-apiserver settings judge them.
	AuditLeases bool
}

// APIError is an error of the API server's discovery: the scan did not
// start because the API server's catalog could not be read.
type APIError struct{ Err error }

func (e *APIError) Error() string { return e.Err.Error() }
func (e *APIError) Unwrap() error { return e.Err }

// Scan runs one scan over the keyspace, with the API server as the second
// witness when there is one, and adds the dangling references of live
// objects to the report. The report's spill file is the caller's to close.
func (r *Read) Scan(ctx context.Context, so ScanOptions) (*etcdscan.Report, error) {
	if so.SpillAfter == 0 {
		spill, err := SpillAfter()
		if err != nil {
			return nil, err
		}
		so.SpillAfter = spill
	}
	opts := etcdscan.Options{Prefix: r.prefix, Namespace: so.Namespace, APIUnavailable: r.Why,
		TerminatingAfter: so.TerminatingAfter, APICheckLimit: so.APICheckLimit, Now: so.Now, SpillAfter: so.SpillAfter}
	if r.API != nil {
		served, err := r.API.Catalog(ctx)
		if err != nil {
			return nil, &APIError{err}
		}
		opts.API, opts.Served, opts.ServerVersion = r.API, served, r.API.ServerVersion
		view := r.API
		opts.APIServers = func(ctx context.Context) ([]etcdscan.APIChecker, error) {
			peers, err := view.Peers(ctx)
			out := make([]etcdscan.APIChecker, len(peers))
			for i, p := range peers {
				out[i] = p
			}
			return out, err
		}
	}
	if r.Decrypter != nil {
		opts.Decrypter = r.Decrypter
	}
	opts.KMSKeyIDs = so.KMSKeyIDs && !r.DB
	if r.DB {
		// Offline there is no etcd to leave a core to.
		opts.DecodeWorkers = max(1, runtime.GOMAXPROCS(0)-1)
	}
	done := func() {}
	if so.Progress != nil {
		opts.Progress, done = so.Progress()
	}
	store := r.Store
	var tally *leases.Tally
	if so.Leases != nil {
		tally = leases.NewTally(*so.Leases, store.Revision())
		store = tally.Wrap(store)
	}
	rep, err := etcdscan.Scan(ctx, store, opts)
	done()
	if err != nil {
		return nil, fmt.Errorf("scan: %w", err)
	}
	// The report's spill file goes unless it is returned, even on a panic
	// (serve recovers from one and scans again).
	returned := false
	defer func() {
		if !returned {
			rep.Close()
		}
	}()
	if tally != nil && tally.Observed() {
		rep.Leases = tally.Finish(ctx).Counts()
	}
	if err := r.findDangling(ctx, rep); err != nil {
		return nil, err
	}
	// Nothing in the namespace and nothing referring into it: a name that
	// exists nowhere (a namespace force-deleted still has what refers to it).
	if so.Namespace != "" && rep.ScannedKeys == 0 && len(rep.Dangling) == 0 && (so.Existed == nil || !so.Existed(so.Namespace)) {
		if err := r.NamespaceSomewhere(ctx, so.Namespace); err != nil {
			return nil, err
		}
	}
	returned = true
	return rep, nil
}

// Scan opens what reads says, runs one scan over it and closes it; the
// report's spill file is the caller's to close.
func (s *Settings) Scan(ctx context.Context, reads Reads, so ScanOptions) (*etcdscan.Report, error) {
	rs, err := s.Open(ctx, reads)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	if so.AuditLeases && so.Namespace == "" {
		// A scan of one namespace reads no pass over the whole registry:
		// `regghost leases -n NAMESPACE` audits its events.
		lo, _, done, err := s.LeasesOptions(ctx, rs, so.Namespace, leases.Given{}, so.Now)
		if err != nil {
			return nil, err
		}
		defer done()
		so.Leases = &lo
	}
	return rs.Scan(ctx, so)
}

// NamespaceSomewhere refuses a namespace of which etcd holds nothing (no
// namespace key; the caller read no key in it either): a typo, named with
// the namespaces nearest to it, never an empty result that looks like
// success.
func (r *Read) NamespaceSomewhere(ctx context.Context, ns string) error {
	prefix := r.prefix + "namespaces/"
	kv, err := r.Store.Get(ctx, prefix+ns)
	if err != nil {
		return fmt.Errorf("read %s%s: %w", prefix, ns, err)
	}
	if kv != nil {
		return nil
	}
	c, err := ClosestUnder(ctx, r.Store, prefix, ns)
	if err != nil {
		return err
	}
	near := ""
	if len(c) > 0 {
		near = "; did you mean " + strings.Join(c, ", ") + "?"
	}
	return &NowhereError{Msg: fmt.Sprintf("namespace %s: nothing of it is in etcd, neither its namespace key nor any object in it nor anything referring to it (a namespace just purged or deleted leaves nothing either)%s", ns, near)}
}

// ClosestUnder are the names of the keys under prefix (a namespace's, a
// CRD's) nearest to name: what a name that exists nowhere is named with.
func ClosestUnder(ctx context.Context, store etcdscan.Store, prefix, name string) ([]string, error) {
	var have []string
	err := store.Range(ctx, prefix, clientv3.GetPrefixRangeEnd(prefix), true, func(kv *mvccpb.KeyValue) error {
		have = append(have, strings.TrimPrefix(string(kv.Key), prefix))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", prefix, err)
	}
	return names.Closest(have, name, 3), nil
}

// NowhereError is a target the user named of which etcd holds nothing.
type NowhereError struct{ Msg string }

func (e *NowhereError) Error() string { return e.Msg }

// Reader is the read-through over this Read's decrypter and API server.
func (r *Read) Reader() *objread.Reader {
	reader := &objread.Reader{Registry: r.prefix}
	if r.Decrypter != nil {
		reader.Decrypter = r.Decrypter
	}
	if r.API != nil {
		reader.API = r.API
	}
	return reader
}

// findDangling adds to rep the references of live objects into what is gone
// or down (into rep.Namespace only, when the scan has one).
func (r *Read) findDangling(ctx context.Context, rep *etcdscan.Report) error {
	reader := &objread.Reader{Registry: r.prefix}
	o := dangling.Options{Registry: r.prefix, Namespace: rep.Namespace, Reader: reader}
	if r.Decrypter != nil {
		reader.Decrypter = r.Decrypter
	}
	if r.API != nil && rep.APIWitness {
		reader.API, o.API = r.API, r.API
	}
	if r.API != nil {
		o.ServerVersion = r.API.ServerVersion
	}
	found, err := dangling.Find(ctx, r.Store, o)
	if err != nil {
		return fmt.Errorf("dangling references: %w", err)
	}
	rep.Dangling, rep.DanglingByDesign = found.Refs, found.ByDesign
	unreadable := found.Unreadable
	check := etcdscan.Check{Name: "dangling references", Done: len(unreadable) == 0,
		Note: "APIServices, webhook configurations, CRD conversion webhooks, RBAC bindings and PersistentVolumes read"}
	if len(unreadable) > 0 {
		check.Note = fmt.Sprintf("%s that could point into a namespace cannot be read here: %s", plural.Of(len(unreadable), "object"), strings.Join(unreadable, ", "))
	}
	rep.Checks = append(rep.Checks, check)
	return nil
}

// Getter is the API server as a witness of what is gone, or nil.
func (r *Read) Getter() dangling.Getter {
	if r.API == nil {
		return nil
	}
	return r.API
}

// SpillAfterEnv names the variable that sets how many findings a scan
// keeps in memory before it spills them to $TMPDIR.
const SpillAfterEnv = "REGGHOST_SPILL_AFTER"

// SpillAfter reads SpillAfterEnv; 0 (etcdscan's default) when unset, a
// usage error when it is no count.
func SpillAfter() (int, error) {
	v, ok := os.LookupEnv(SpillAfterEnv)
	if !ok || v == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		return 0, usage.Errorf("%s=%q: must be a whole number of findings, at least 1", SpillAfterEnv, v)
	}
	return n, nil
}
