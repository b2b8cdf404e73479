package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/internal/table"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/recovery"
)

type recoverOptions struct {
	writeFlags
	snapshot      string
	rev           int64
	keys          []string
	namespace     string
	resource      string
	name          string
	selector      string
	withNamespace bool
	intoRecreated bool
	withStatus    bool
	withLive      bool
	other         otherClusterFlags
	sourceEncCfg  string
	acceptImpacts []string
	servedWait    time.Duration
	print         *printFlags
	// Completed:
	sel    recovery.Selection
	accept map[recovery.ImpactKind]bool
}

func newRecoverCmd(g *globalOptions) *cobra.Command {
	o := &recoverOptions{print: newPrintFlags(false, "table", "wide")}
	c := &cobra.Command{
		Use:   "recover (--snapshot FILE | --rev N) [KEY|PREFIX/ ...]",
		Short: "Bring single objects back from a snapshot file or an older revision (dry run without --confirm)",
		Long: `recover brings chosen objects back into the live cluster from an etcd snapshot
file (etcdctl, etcdutl or k3s etcd-snapshot; zipped or not) or from an older
revision of the live etcd (--rev, until etcd compacts it): one Secret, one
namespace's ConfigMaps, a CRD with its custom resources. Nothing else of the
cluster moves back.

Objects are chosen by KEY or PREFIX/ arguments and narrowed by --namespace,
--resource (a resource or a kind), --name and --selector. A CRD brings its
custom resources; --with-namespace brings the namespace object too.

Each object is judged first, and only these are written:
  - absent live: nothing is ever overwritten (an object changed since the
    source keeps its new state); the write compares the key's absence;
  - its namespace and CRD exist live (or are recovered first): an object
    in a missing namespace would be a ghost;
  - its UID is not held by a live object under another key;
  - its value is readable by kube-apiserver with the cluster's encryption
    config (--encryption-provider-config): written as stored, encrypted;
  - what writing it sets off is accepted: containers started again, a token
    valid again, a workload creating pods, a PersistentVolume whose storage
    its controller would delete, an APIService or webhook pointing at a gone
    Service, an object the garbage collector would delete again at once.

With --confirm it takes the etcd lock, writes a verified backup of what it is
about to write (restore deletes those keys again, only while unchanged),
writes namespaces, then CRDs (waiting until the API server serves them),
then the rest, reads every key back and appends to the audit log.

-o yaml or -o json prints the chosen objects as manifests for kubectl apply
instead (server-set fields removed, status only with --with-status),
decrypted with the encryption configs given; nothing is written.`,
		Example: `  regghost recover --snapshot /var/backups/etcd-20261202.db -n shop --resource secrets --name db-password
  regghost recover --snapshot snap.db /registry/secrets/shop/db-password --confirm
  regghost recover --snapshot snap.db --resource crd --name widgets.example.com --confirm
  regghost recover --rev 81234 -n shop -l app=web --with-namespace
  regghost recover --snapshot snap.db -n shop -o yaml | kubectl apply --dry-run=server -f -`,
		RunE: func(c *cobra.Command, args []string) error {
			o.keys = args
			if err := o.complete(g); err != nil {
				return err
			}
			if err := o.validate(g); err != nil {
				return err
			}
			return o.run(c.Context(), g, c.InOrStdin(), c.OutOrStdout())
		},
	}
	f := c.Flags()
	f.StringVar(&o.snapshot, "snapshot", "", "recover from this snapshot file (etcdctl/etcdutl, k3s zipped or not, or regghost's logical snapshot of kine)")
	f.Int64Var(&o.rev, "rev", 0, "recover from this older revision of the live etcd")
	f.StringVarP(&o.namespace, "namespace", "n", "", "only objects of this namespace")
	f.StringVar(&o.resource, "resource", "", "only this resource or kind (secrets, Secret, widgets.example.com, crd)")
	f.StringVar(&o.name, "name", "", "only objects of this name")
	f.StringVarP(&o.selector, "selector", "l", "", "only objects whose labels match (key=value,...)")
	f.BoolVar(&o.withNamespace, "with-namespace", false, "also recover the namespace object of the chosen objects from the source")
	f.BoolVar(&o.intoRecreated, strings.TrimPrefix(flagnames.IntoRecreated, "--"), false, "also write objects into a namespace or CRD deleted and created again since the source (refused without it: they would join one they never belonged to)")
	f.BoolVar(&o.withStatus, "with-status", false, "keep status in -o yaml|json manifests")
	f.BoolVar(&o.withLive, "with-live", false, "with -o yaml|json, also print an object asked for by key or --name that exists live, at the live resourceVersion (kubectl apply then fails on a conflict instead of overwriting)")
	o.other.add(c, "snapshot or revision")
	f.StringVar(&o.sourceEncCfg, "source-encryption-provider-config", "", "an older encryption config that decrypts the source's values (the cluster's is --encryption-provider-config)")
	o.writeFlags.add(c, "really write (without it recover is a dry run)", "where the recovery's backup goes")
	f.StringArrayVar(&o.acceptImpacts, "accept-impact", nil, "go ahead although writing the object sets this off: "+recoveryKinds())
	f.DurationVar(&o.servedWait, "wait-served", time.Minute, "how long to wait for a recovered CRD to be served before its custom resources")
	o.print.addFlags(c)
	return c
}

func recoveryKinds() string {
	names := make([]string, len(recovery.Acceptable))
	for i, k := range recovery.Acceptable {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// manifests says whether -o asks for manifests instead of a recovery.
func (o *recoverOptions) manifests() bool { return o.print.structured() }

func (o *recoverOptions) complete(g *globalOptions) error {
	o.sel = recovery.Selection{Registry: g.Prefix, Keys: o.keys, Namespace: o.namespace, Resource: o.resource, Name: o.name, WithNamespace: o.withNamespace}
	switch strings.ToLower(o.resource) {
	case "crd", "crds":
		o.sel.Resource = "customresourcedefinitions"
	}
	if o.selector != "" {
		s, err := labels.Parse(o.selector)
		if err != nil {
			return usageError("--selector %q: %v", o.selector, err)
		}
		o.sel.Selector = s
	}
	o.accept = map[recovery.ImpactKind]bool{}
	for _, a := range o.acceptImpacts {
		k, err := recovery.ParseImpact(a)
		if err != nil {
			return usageError("--accept-impact: %v", err)
		}
		o.accept[k] = true
	}
	return nil
}

func (o *recoverOptions) validate(g *globalOptions) error {
	if err := o.print.validate(); err != nil {
		return err
	}
	if (o.snapshot == "") == (o.rev == 0) {
		return usageError("give exactly one source: --snapshot FILE or --rev N")
	}
	if o.servedWait <= 0 {
		return usageError("--wait-served must be positive, got %s", o.servedWait)
	}
	if o.rev < 0 {
		return usageError("--rev must be positive, got %d", o.rev)
	}
	if err := validateNamespace(o.namespace); err != nil {
		return err
	}
	for _, k := range o.keys {
		if !strings.HasPrefix(k, g.Prefix) {
			return usageError("%s is not under the registry prefix %s", k, g.Prefix)
		}
	}
	if o.manifests() && o.confirm {
		return usageError("-o %s prints manifests and writes nothing; drop --confirm (or -o)", o.print.output)
	}
	// Even manifests are judged against the live cluster.
	if err := refuseDB(g, "recover"); err != nil {
		return err
	}
	return nil
}

func (o *recoverOptions) run(ctx context.Context, g *globalOptions, in io.Reader, out io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, g.Etcd.CommandTimeout)
	defer cancel()
	rec, err := recovery.Prepare(ctx, &g.Settings, recovery.Request{Snapshot: o.snapshot, Rev: o.rev, SourceEncryptionConfig: o.sourceEncCfg,
		Selection: o.sel, Accept: o.accept, IntoRecreated: o.intoRecreated, OtherCluster: o.other.cluster, OtherClusterGrants: o.other.grants,
		BackupRoot: o.backupDir, Notices: g.errOut})
	if err != nil {
		return err
	}
	defer rec.Close()
	objs := rec.Objects
	if o.manifests() {
		return o.printManifests(out, g.errOut, objs)
	}
	todo, _ := render.RecoveryCounts(objs)
	if !o.confirm || todo == 0 {
		if err := o.print.print(out, render.RecoveryPlan(rec.From, objs, !o.confirm)); err != nil {
			return err
		}
		return failed(render.RecoveryRefusedError(objs))
	}
	render.WriteRecoveryPlan(table.NewSafeWriter(out), rec.From, objs)
	if err := o.ask(in, g.errOut, fmt.Sprintf("Write %d objects into etcd?", todo)); err != nil {
		return err
	}
	stop, doneWriting := etcdwrite.StopOnSignal(g.errOut)
	defer doneWriting()
	res, werr := rec.Write(ctx, etcdwrite.Pacing{Stop: stop}, o.servedWait)
	if res == nil {
		return werr
	}
	render.WriteRecoveryResult(out, res, todo)
	if werr != nil {
		return werr
	}
	return failed(render.ConflictError(res.Results))
}

// printManifests writes, as one List for kubectl apply, only what recover
// would write (recovery.Manifests carries the verdicts), and says on
// errOut what it left out and why; nothing when one cannot be read.
func (o *recoverOptions) printManifests(out, errOut io.Writer, objs []*recovery.Object) error {
	mo := recovery.ManifestOptions{WithStatus: o.withStatus}
	if o.withLive {
		mo.ByName = recovery.NamedKeys(objs)
	}
	list, left, err := recovery.Manifests(objs, mo)
	if err != nil {
		return fmt.Errorf("%w; give the --source-encryption-provider-config that decrypts it (nothing was printed)", err)
	}
	render.ManifestsLeftOut(errOut, left, o.withLive)
	return o.print.print(out, render.Output{Doc: list})
}
