package unstick

import (
	"context"
	"fmt"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/dangling"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/impact"
	"github.com/regghost/regghost/pkg/session"
)

// Target is what unstick works on: a namespace or a CRD.
type Target struct {
	// CRD says Name is a CustomResourceDefinition's, else a namespace's.
	CRD  bool
	Name string
}

// ParseArgs reads a target as kubectl names it: TYPE NAME ("namespace
// shop") or TYPE/NAME ("ns/shop", "crd/widgets.example.com").
func ParseArgs(args []string) (Target, error) {
	switch {
	case len(args) == 2:
		return ParseTarget(args[0], args[1])
	case len(args) == 1 && strings.Contains(args[0], "/"):
		kind, name, _ := strings.Cut(args[0], "/")
		return ParseTarget(kind, name)
	case len(args) == 1:
		return Target{}, fmt.Errorf("give what %q is: namespace %s (or ns/%s), or crd %s", args[0], args[0], args[0], args[0])
	}
	return Target{}, fmt.Errorf("unstick takes namespace NAME or crd NAME (or ns/NAME, crd/NAME), not %d arguments", len(args))
}

// ParseTarget reads "namespace NAME" or "crd NAME" and checks the name.
func ParseTarget(kind, name string) (Target, error) {
	switch strings.ToLower(kind) {
	case "namespace", "namespaces", "ns":
		if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
			return Target{}, fmt.Errorf("%q is not a namespace name: %s", name, errs[0])
		}
		return Target{Name: name}, nil
	case "crd", "crds", "customresourcedefinition", "customresourcedefinitions",
		"customresourcedefinition.apiextensions.k8s.io", "customresourcedefinitions.apiextensions.k8s.io":
		if _, ok := catalog.CustomFromCRDName(name); !ok {
			return Target{}, fmt.Errorf("%q is not a CustomResourceDefinition name (<plural>.<group>)", name)
		}
		return Target{CRD: true, Name: name}, nil
	}
	return Target{}, fmt.Errorf("unstick takes namespace NAME or crd NAME, not %q", kind)
}

// Analyzer analyses a target over a read session, first for the plan and
// again under the lock (Again).
type Analyzer struct {
	Read   *session.Read
	Target Target
	// Accept are the impacts --accept-impact lets through.
	Accept []impact.Kind
	// DeleteUnavailable are the down APIServices, by name, the operator
	// chose to delete (--delete-unavailable-apiservice).
	DeleteUnavailable []string
	Now               func() time.Time
}

// Analyze reads the target and what holds it, and follows the chain of an
// unavailable APIService to the Service it points at.
func (z *Analyzer) Analyze(ctx context.Context) (*Analysis, error) {
	r := z.Read
	in, err := z.readers(ctx)
	if err != nil {
		return nil, err
	}
	a, err := z.analyse(ctx, r.Store, in)
	if err != nil {
		return nil, err
	}
	if len(a.UnavailableNames) > 0 {
		// Follow the chain: is the APIService that holds discovery
		// dangling (its Service gone) or down?
		found, err := dangling.Find(ctx, r.Store, dangling.Options{Registry: r.Registry(), Reader: r.Reader(), API: r.Getter()})
		if err != nil {
			return nil, err
		}
		a.Follow(found.Refs)
	}
	a.refuseUnknownUnavailable()
	if r.API == nil && (a.Exists || a.Remaining > 0) {
		a.NoAPI = r.Why
		if a.Refusal == "" {
			a.Refusal = "unstick works through the API server, which was not reached (" + r.Why + ")"
			a.Next = "let the API server answer (check --kubeconfig and --context), then run this again"
		}
	}
	if !a.Exists && a.Remaining == 0 {
		a.Nowhere = true
		a.Closest, err = z.closest(ctx, r.Store)
		if err != nil {
			return nil, err
		}
	}
	return a, nil
}

// NowhereError is the error for a target of which nothing is in etcd: it
// names what was looked for and the names nearest to it that exist.
func (a *Analysis) NowhereError() error {
	near := ""
	if len(a.Closest) > 0 {
		near = "; did you mean " + strings.Join(a.Closest, ", ") + "?"
	}
	return fmt.Errorf("%s: nothing of that name is in etcd, nor so in the API server (a deletion that finished leaves nothing either)%s", a.Target, near)
}

// closest are the names of the target's kind in store nearest to its name.
func (z *Analyzer) closest(ctx context.Context, store etcdscan.Store) ([]string, error) {
	prefix := z.Read.Registry() + "namespaces/"
	if z.Target.CRD {
		prefix = z.Read.Registry() + "apiextensions.k8s.io/customresourcedefinitions/"
	}
	return session.ClosestUnder(ctx, store, prefix, z.Target.Name)
}

// Again is the analysis under the lock: a fresh read of the live etcd, and
// discovery asked again (an APIService deleted since the first analysis no
// longer fails its group).
func (z *Analyzer) Again(cli *clientv3.Client) func(ctx context.Context) (*Analysis, error) {
	return func(ctx context.Context) (*Analysis, error) {
		live, err := etcdscan.NewEtcdStore(ctx, cli, etcdscan.DefaultPageSize)
		if err != nil {
			return nil, err
		}
		in, err := z.readers(ctx)
		if err != nil {
			return nil, err
		}
		return z.analyse(ctx, live, in)
	}
}

func (z *Analyzer) readers(ctx context.Context) (Readers, error) {
	r := z.Read
	var in Readers
	if r.API != nil {
		served, err := r.API.Catalog(ctx)
		if err != nil {
			return in, err
		}
		in.Served, in.API = served, r.API
	}
	if r.Decrypter != nil {
		in.Decrypter = r.Decrypter
	}
	return in, nil
}

func (z *Analyzer) analyse(ctx context.Context, store etcdscan.Store, in Readers) (*Analysis, error) {
	analyse := Namespace
	if z.Target.CRD {
		analyse = CRD
	}
	a, err := analyse(ctx, store, z.Read.Registry(), z.Target.Name, in, z.Now())
	if err == nil {
		a.DeleteUnavailable = z.DeleteUnavailable
	}
	if err == nil && len(z.Accept) > 0 {
		a.Accept(z.Accept)
	}
	return a, err
}

// Finish carries out what z analyzed (a) as ro says, over a connection
// to etcd s opens, bounded by --command-timeout: the writes' client, the
// analysis made again before them, the notices and the backups'
// decryption (z.Read's) are filled in here.
func (z *Analyzer) Finish(ctx context.Context, s *session.Settings, a *Analysis, ro ResolveOptions) (*Result, error) {
	ctx, etcd, done, err := s.Bounded(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	ro.Options.Client, ro.Options.Notices, ro.Options.Decrypt, ro.Options.Analyze = etcd, s.Notices, decrypt.Namespaces(z.Read.Decrypter), z.Again(etcd)
	return Resolve(ctx, a, s.Prefix, ro)
}
