package etcdscan

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/notice"
	"github.com/regghost/regghost/pkg/resolve"
)

// APIChecker is the API server as a witness. *apiview.View implements it.
type APIChecker interface {
	// Get reads one object's metadata through the API server.
	Get(ctx context.Context, r catalog.Resource, namespace, name string) (*metav1.PartialObjectMetadata, error)
	// Host names the API server, for evidence.
	Address() string
}

// Decrypter decrypts values encrypted at rest; *decrypt.Decrypter implements
// it. KMS values are never handed to it.
type Decrypter interface {
	Decrypt(ctx context.Context, key string, gr schema.GroupResource, data []byte) ([]byte, error)
}

// DefaultTerminatingAfter is how long an object may sit in Terminating with
// finalizers before it is reported as stuck.
const DefaultTerminatingAfter = 15 * time.Minute

// DefaultAPICheckLimit bounds how many single-object reads a scan asks the
// API server for.
const DefaultAPICheckLimit = 2000

// Options configure a scan.
type Options struct {
	// Prefix is the registry prefix, ending in "/" (default "/registry/").
	Prefix string
	// Namespace limits the scan to one namespace's objects and the namespace itself.
	Namespace string
	// Served lists what the API server serves (its discovery); nil when the
	// API server is not asked. Set together with API.
	Served *catalog.Catalog
	// Release lists every resource kube-apiserver can serve (catalog.Release
	// when nil): the etcd-side witness of which built-in types exist.
	Release *catalog.Catalog
	// API is the second witness; nil when unreachable or not to be asked.
	API APIChecker
	// APIServers lists every kube-apiserver behind API (the endpoints of
	// the default/kubernetes Service). "Cannot decrypt it" is a witness
	// only when each of them says it: one with a stale encryption config
	// is no proof. Nil when API is one server.
	APIServers func(ctx context.Context) ([]APIChecker, error)
	// ServerVersion is the API server's version (its /version gitVersion).
	ServerVersion string
	// APIUnavailable says why API is nil, for the report.
	APIUnavailable string
	// Decrypter, when set, decrypts encrypted values so they are classified
	// like any other; a value it fails to decrypt is encrypted-unknown.
	Decrypter Decrypter
	// KMSKeyIDs asks the KMS v2 plugin that writes a resource holding its
	// values for the key ID it writes with (once a scan; versions and
	// serve), so its other key IDs count as keys that no longer write.
	KMSKeyIDs bool
	// TerminatingAfter is the stuck-terminating threshold.
	TerminatingAfter time.Duration
	// APICheckLimit bounds the single-object reads made against the API server.
	APICheckLimit int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// DecodeWorkers, when more than 0, decodes values on that many other
	// goroutines ahead of the walk (for db files, where no etcd needs the
	// other cores).
	DecodeWorkers int
	// Progress, when set, is told every few thousand keys how many keys of
	// the scan's range were read, and the range's size (0 when the store
	// cannot count it).
	Progress notice.Progress
	// SpillAfter is how many findings are kept in memory before they move
	// to a spill file (DefaultSpillAfter when 0).
	SpillAfter int
	// SpillDir is where a spill file is made (the temporary directory
	// when empty).
	SpillDir string
}

// Scan walks the keyspace in store and returns what it found.
func Scan(ctx context.Context, store Store, opts Options) (rep *Report, err error) {
	if opts.Prefix == "" {
		opts.Prefix = "/registry/"
	}
	if opts.Prefix[len(opts.Prefix)-1] != '/' {
		return nil, fmt.Errorf("prefix %q must end in /", opts.Prefix)
	}
	if (opts.API == nil) != (opts.Served == nil) {
		return nil, errors.New("scan needs the API server's discovery together with the API server")
	}
	if opts.Release == nil {
		opts.Release = catalog.Release()
	}
	if opts.TerminatingAfter <= 0 {
		opts.TerminatingAfter = DefaultTerminatingAfter
	}
	if opts.APICheckLimit <= 0 {
		opts.APICheckLimit = DefaultAPICheckLimit
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.SpillAfter <= 0 {
		opts.SpillAfter = DefaultSpillAfter
	}
	s := &scan{
		opts: opts, store: store, now: opts.Now(),
		rep: &Report{
			Revision: store.Revision(), Prefix: opts.Prefix, Namespace: opts.Namespace,
			Catalog: catalogSource(opts), Encrypted: map[string]int{}, Summary: map[Class]int{},
		},
		found: newFindingStore(opts.SpillAfter, opts.SpillDir), perNS: map[string]map[string]int{}, uids: newUIDSet(),
		atRev:   fmt.Sprintf("at revision %d", store.Revision()),
		release: compareRelease(opts.ServerVersion), releaseKnown: true,
	}
	// The spill file goes unless a report takes it, even on a panic (serve
	// recovers from one and scans again).
	defer func() {
		if rep == nil {
			s.found.close()
		}
	}()
	return s.run(ctx)
}

// run is Scan once its options are checked.
func (s *scan) run(ctx context.Context) (*Report, error) {
	store, opts := s.store, s.opts
	if err := s.loadNamespaces(ctx); err != nil {
		return nil, err
	}
	if err := s.loadTypes(ctx); err != nil {
		return nil, err
	}
	if err := s.checkSameCluster(ctx); err != nil {
		return nil, err
	}
	var err error
	if opts.Namespace == "" {
		tick := s.progress(ctx, opts.Prefix, PrefixEnd(opts.Prefix))
		if opts.DecodeWorkers > 0 {
			err = s.rangeDecoded(ctx, opts.Prefix, PrefixEnd(opts.Prefix), opts.DecodeWorkers, tick)
		} else {
			err = store.Range(ctx, opts.Prefix, PrefixEnd(opts.Prefix), false, func(kv *mvccpb.KeyValue) error { tick(); return s.visit(ctx, kv) })
		}
	} else {
		err = s.walkNamespace(ctx)
	}
	if err != nil {
		return nil, err
	}
	if err := s.finish(ctx); err != nil {
		return nil, err
	}
	s.rep.APIWitness = s.opts.API != nil
	return s.rep, nil
}

type scan struct {
	opts Options
	// release is serverRelease's answer once releaseKnown.
	release      string
	releaseKnown bool
	store        Store
	now          time.Time
	rep          *Report
	// found holds the findings by key until the report takes them.
	found *findingStore
	// namespaces holds the names of every namespace key.
	namespaces map[string]bool
	// nsCreated is each namespace key's create revision; nsTimes caches
	// namespaces' creation times.
	nsCreated map[string]int64
	nsTimes   map[string]time.Time
	// nsTimeWhy says why a namespace's creation time could not be read.
	nsTimeWhy map[string]string
	// resurrected holds the UID fingerprints of resurrected objects.
	resurrected *uidSet
	// perNS counts objects per namespace and storage prefix.
	perNS map[string]map[string]int
	uids  *uidSet
	// owned are objects none of whose owners had been seen when visited.
	owned []ownedObject
	// terminatingNS are namespaces in Terminating, finished once counts are known.
	terminatingNS []terminatingNamespace
	// confirm are findings the API server is asked about at the end.
	confirm []confirmation
	// types is the shared resolver: the CRD and APIService keys in etcd,
	// discovery and the release catalog.
	types *resolve.Resolver
	// verdicts caches resolve.
	verdicts map[string]typeVerdict
	// holdsNamespaces is false when the keyspace has no default namespace:
	// it is not the cluster's main etcd, and namespaces cannot be judged.
	holdsNamespaces bool
	// foreignKeys counts keys of aggregated or undiscovered groups.
	foreignKeys map[string]int
	// unjudgedNS counts keys whose namespace could not be judged.
	unjudgedNS int
	// unconfirmed counts objects not read back (over the API check limit).
	unconfirmed int
	// unprobed counts encrypted values the API server's answer left undecided.
	unprobed int
	// peers are the kube-apiservers of an HA control plane, once listed.
	peers *peerList
	// apiTally is what the API server answered.
	apiTally *apiTally
	// census counts stored objects by resource and stored version;
	// keyCensus by resource and encryption provider and key; writers are
	// the provider and key that write each resource (with a decrypter that
	// says).
	census    map[string]map[string]int
	keyCensus map[string]map[string]int
	writers   map[string]string
	// keyIDs are the KMS v2 plugins' answers: the key ID each writes with.
	keyIDs map[string]keyIDAnswer
	// atRev is "at revision N", said of every finding.
	atRev string
	// strs holds the strings findings share (see intern).
	strs map[string]string
}

// catalogSource says where the scan learns which types exist.
func catalogSource(opts Options) string {
	src := opts.Release.Source + ", and the CRDs stored in etcd"
	if opts.Served != nil {
		return opts.Served.Source + "; " + src
	}
	return src + " (API server not asked)"
}

func (s *scan) loadNamespaces(ctx context.Context) error {
	s.namespaces = map[string]bool{}
	s.nsCreated = map[string]int64{}
	s.resurrected = newUIDSet()
	s.foreignKeys = map[string]int{}
	start := s.opts.Prefix + "namespaces/"
	// kube-apiserver always keeps the default namespace: a keyspace without
	// it holds only part of the cluster (an --etcd-servers-overrides etcd,
	// or a wrong --prefix).
	def, err := s.store.Get(ctx, start+metav1.NamespaceDefault)
	if err != nil {
		return err
	}
	s.holdsNamespaces = def != nil
	if s.opts.Namespace != "" {
		kv, err := s.store.Get(ctx, start+s.opts.Namespace)
		if err != nil {
			return err
		}
		if kv != nil {
			s.namespaces[s.opts.Namespace] = true
			s.nsCreated[s.opts.Namespace] = kv.CreateRevision
		}
		return nil
	}
	return s.store.Range(ctx, start, PrefixEnd(start), true, func(kv *mvccpb.KeyValue) error {
		s.namespaces[string(kv.Key[len(start):])] = true
		s.nsCreated[string(kv.Key[len(start):])] = kv.CreateRevision
		return nil
	})
}

// walkNamespace visits the namespace key and every key of the namespace.
func (s *scan) walkNamespace(ctx context.Context) error {
	reg, ns := s.opts.Prefix, s.opts.Namespace
	if kv, err := s.store.Get(ctx, reg+"namespaces/"+ns); err != nil {
		return err
	} else if kv != nil {
		if err := s.visit(ctx, kv); err != nil {
			return err
		}
	}
	return WalkNamespace(ctx, s.store, reg, ns, false, func(kv *mvccpb.KeyValue) error { return s.visit(ctx, kv) })
}

// WalkNamespace calls fn for every key of namespace ns under registry: for
// every storage prefix present in the store, only the keys under
// "<prefix>/<ns>/". Prefixes are found by seeking from one to the next, so
// keys of other namespaces are never read.
func WalkNamespace(ctx context.Context, store Store, registry, ns string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	end := PrefixEnd(registry)
	for start := registry; ; {
		kv, err := store.First(ctx, start, end)
		if err != nil {
			return err
		}
		if kv == nil {
			return nil
		}
		prefix, _ := prefixOf(registry, string(kv.Key))
		from := registry + prefix + "/" + ns + "/"
		if err := store.Range(ctx, from, PrefixEnd(from), keysOnly, fn); err != nil {
			return err
		}
		// Skip past every key of this prefix: "/" + 1 is "0".
		start = registry + prefix + "0"
	}
}

// record stores finding f, or, when its key has a finding already, keeps
// that one; then fn, when set, amends it. The strings of a new finding that
// many findings share (a reason, a witness's answer, the namespace key an
// orphan's verdict rests on) are kept once.
func (s *scan) record(f Finding, fn func(*Finding)) error {
	g, err := s.found.get(f.Key)
	if err != nil {
		return err
	}
	if g == nil {
		s.internFinding(&f)
		g = &f
	}
	if fn != nil {
		fn(g)
	}
	return s.found.put(g)
}

// update amends the finding of key, if there is one.
func (s *scan) update(key string, fn func(*Finding)) error {
	f, err := s.found.get(key)
	if err != nil || f == nil {
		return err
	}
	fn(f)
	return s.found.put(f)
}

func (s *scan) finish(ctx context.Context) error {
	if err := s.finishNamespaces(); err != nil {
		return err
	}
	if err := s.resurrectedChains(ctx); err != nil {
		return err
	}
	if err := s.checkOwners(ctx); err != nil {
		return err
	}
	if err := s.confirmWithAPI(ctx); err != nil {
		return err
	}
	classes := map[Class]int{}
	err := s.found.settle(func(f *Finding) {
		f.settle()
		s.rep.Summary[f.Classes[0]]++
		for _, c := range f.Classes {
			classes[c]++
		}
	})
	if err != nil {
		return err
	}
	s.finishVersions(ctx)
	s.rep.take(s.found)
	s.rep.Checks = append(s.rep.Checks, s.typesCheck(), s.namespacesCheck(), s.encryptionCheck(classes), s.apiCheck())
	if c, ok := s.keyIDsCheck(); ok {
		s.rep.Checks = append(s.rep.Checks, c)
	}
	return nil
}

// intern returns the one copy of x the scan keeps. A scan whose findings
// are many (a whole namespace force-deleted) says the same sentences of
// each: kept once, a finding costs little more than its key.
func (s *scan) intern(x string) string {
	if y, ok := s.strs[x]; ok {
		return y
	}
	if s.strs == nil {
		s.strs = map[string]string{}
	}
	if len(s.strs) < maxInterned && !s.found.spilled() {
		s.strs[x] = x
	}
	return x
}

// maxInterned bounds the strings kept by intern: sentences that differ per
// finding must not make it grow with the findings.
const maxInterned = 4096

// internFinding interns the strings of f other findings may share; those
// naming f itself (its key or name) are its own and left alone.
func (s *scan) internFinding(f *Finding) {
	shared := func(x string) string {
		if x == "" || (f.Name != "" && strings.Contains(x, f.Name)) {
			return x
		}
		return s.intern(x)
	}
	f.Resource, f.APIVersion, f.Kind, f.Namespace = s.intern(f.Resource), s.intern(f.APIVersion), s.intern(f.Kind), s.intern(f.Namespace)
	f.Format, f.Encryption = s.intern(f.Format), s.intern(f.Encryption)
	for i := range f.Reasons {
		f.Reasons[i] = shared(f.Reasons[i])
	}
	for i := range f.Evidence {
		e := &f.Evidence[i]
		e.Asked, e.Said = shared(e.Asked), shared(e.Said)
	}
	for i := range f.Absent {
		f.Absent[i] = shared(f.Absent[i])
	}
}
