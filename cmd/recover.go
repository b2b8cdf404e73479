package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/regghost/regghost/internal/cli"
	"github.com/regghost/regghost/internal/render"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/flagnames"
	"github.com/regghost/regghost/pkg/recovery"
	"github.com/regghost/regghost/pkg/table"
)

type recoverOptions struct {
	cli.WriteFlags
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
	other         cli.OtherClusterFlags
	sourceEncCfg  string
	acceptImpacts []string
	servedWait    time.Duration
	*render.PrintFlags
	// Completed:
	sel    recovery.Selection
	accept map[recovery.ImpactKind]bool
}

func newRecoverCmd(g *globalOptions) *cobra.Command {
	o := &recoverOptions{PrintFlags: render.NewPrintFlags(false, "table", "wide")}
	c := &cobra.Command{
		Use:   "recover (--snapshot FILE | --rev N) [KEY|PREFIX/ ...]",
		Short: "Bring objects back from a snapshot or an older revision (dry run without --confirm)",
		RunE:  runE(g, o),
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
	o.other.Add(c, "snapshot or revision")
	f.StringVar(&o.sourceEncCfg, "source-encryption-provider-config", "", "an older encryption config that decrypts the source's values (the cluster's is --encryption-provider-config)")
	o.WriteFlags.Add(c, "really write (without it recover is a dry run)", "where the recovery's backup goes")
	f.StringArrayVar(&o.acceptImpacts, "accept-impact", nil, "go ahead although writing the object sets this off: "+recovery.AcceptableNames())
	f.DurationVar(&o.servedWait, "wait", time.Minute, "how long to wait for a recovered CRD to be served before its custom resources")
	o.AddFlags(c)
	return c
}

// manifests says whether -o asks for manifests instead of a recovery.
func (o *recoverOptions) manifests() bool { return o.Structured() }

func (o *recoverOptions) complete(g *globalOptions, _ *cobra.Command, args []string) error {
	o.keys = args
	o.sel = recovery.Selection{Registry: g.Prefix, Keys: o.keys, Namespace: o.namespace, Resource: o.resource, Name: o.name, WithNamespace: o.withNamespace}
	if err := o.sel.Complete(o.selector); err != nil {
		return cli.Usage("%v", err)
	}
	accept, err := recovery.ParseAccepted(o.acceptImpacts)
	if err != nil {
		return cli.Usage("--accept-impact: %v", err)
	}
	o.accept = accept
	return nil
}

func (o *recoverOptions) validate(g *globalOptions) error {
	if g.DB != "" && o.snapshot == "" && o.rev == 0 {
		return cli.Usage("recover takes its source as --snapshot FILE (or --rev N); --db is for the read-only commands: regghost recover --snapshot %s", g.DB)
	}
	if (o.snapshot == "") == (o.rev == 0) {
		return cli.Usage("give exactly one source: --snapshot FILE or --rev N")
	}
	if backup.SourceOf(o.snapshot) == backup.SourceBackup {
		return cli.Usage("%s is a regghost backup directory, not a snapshot: `regghost restore %s` puts back what it holds", o.snapshot, o.snapshot)
	}
	if o.rev < 0 {
		return cli.Usage("--rev must be positive, got %d", o.rev)
	}
	if err := cli.CheckNamespace(o.namespace); err != nil {
		return err
	}
	for _, k := range o.keys {
		if !strings.HasPrefix(k, g.Prefix) {
			return cli.Usage("%s is not under the registry prefix %s", k, g.Prefix)
		}
	}
	if o.manifests() && o.Confirm {
		return cli.Usage("-o %s prints manifests and writes nothing; drop --confirm (or -o)", o.Output())
	}
	// Even manifests are judged against the live cluster.
	if err := refuseDB(g, "recover"); err != nil {
		return err
	}
	return nil
}

func (o *recoverOptions) run(ctx context.Context, g *globalOptions, s genericiooptions.IOStreams) error {
	rec, err := recovery.Prepare(ctx, &g.Settings, recovery.Request{Snapshot: o.snapshot, Rev: o.rev, SourceEncryptionConfig: o.sourceEncCfg,
		Selection: o.sel, Accept: o.accept, IntoRecreated: o.intoRecreated, OtherCluster: o.other.Cluster, OtherClusterGrants: o.other.Grants,
		BackupRoot: o.BackupDir, Notices: g.Notices})
	if err != nil {
		return err
	}
	defer rec.Close()
	objs := rec.Objects
	if o.manifests() {
		return o.printManifests(s.Out, s.ErrOut, objs)
	}
	todo, _ := render.RecoveryCounts(objs)
	if !o.Confirm || todo == 0 {
		if err := o.Print(s.Out, render.RecoveryPlan(rec.From, objs, !o.Confirm)); err != nil {
			return err
		}
		return cli.Failed(render.RecoveryRefusedError(objs))
	}
	render.WriteRecoveryPlan(table.NewSafeWriter(s.Out), rec.From, objs)
	if err := o.Ask(s.In, s.ErrOut, fmt.Sprintf("Write %s into etcd?", render.Plural(todo, "object"))); err != nil {
		return err
	}
	stop, doneWriting := etcdwrite.StopOnSignal(g.Notices)
	defer doneWriting()
	res, werr := rec.Write(ctx, etcdwrite.Pacing{Stop: stop, MaxRequestBytes: g.Etcd.MaxRequestBytes}, o.servedWait)
	if res == nil {
		return werr
	}
	render.WriteRecoveryResult(s.Out, res, todo)
	if werr != nil {
		return werr
	}
	if err := render.ConflictError(res.Results); err != nil {
		return cli.Failed(err)
	}
	// What the plan refused is left out of the run: part of what was
	// selected is not back, and the exit code says so, as the dry run's.
	return cli.Failed(render.RecoveryRefusedError(objs))
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
	if err := o.Print(out, render.Output{Doc: list}); err != nil {
		return err
	}
	// Part of what was selected cannot come back: the exit code says so,
	// as the write's does.
	return cli.Failed(render.ManifestsRefusedError(left))
}
