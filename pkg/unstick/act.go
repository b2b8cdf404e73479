package unstick

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/repair"
)

// FinalizersRemoved is the outcome of a blocker whose finalizers were removed.
const FinalizersRemoved repair.Outcome = "finalizers-removed"

// ErrRefused is returned (wrapped) when unstick must not act.
var ErrRefused = errors.New("refused")

// Options configure Run.
type Options struct {
	// Client reads the keys to back up, and watches the deletion finish.
	Client *clientv3.Client
	// Dynamic patches through the API server.
	Dynamic    dynamic.Interface
	BackupRoot string
	// Wait bounds how long Run waits for the deletion to finish.
	Wait time.Duration
	Now  func() time.Time
}

// Result is what Run did.
type Result struct {
	Dir     string          `json:"dir"`
	Backup  string          `json:"backup"`
	Results []repair.Result `json:"results"`
	// Finished is set when the target's key is gone.
	Finished bool `json:"finished"`
	// Left counts the keys of it still in etcd afterwards.
	Left int `json:"left"`
}

// Run removes the blockers' finalizers through the API server: first a
// verified per-key backup of every key it touches (restore puts them back),
// then one patch per object preconditioned on the reviewed resourceVersion;
// then it waits for the deletion to finish and counts what is left in etcd.
func Run(ctx context.Context, a *Analysis, registry string, o Options) (*Result, error) {
	if a.Refusal != "" {
		return nil, fmt.Errorf("%w: %s; nothing was changed", ErrRefused, a.Refusal)
	}
	if len(a.Blockers) == 0 {
		return nil, fmt.Errorf("%w: no object holds %s with finalizers; nothing was changed", ErrRefused, a.Target)
	}
	if o.Dynamic == nil {
		return nil, fmt.Errorf("%w: unstick works through the API server, which cannot be reached; nothing was changed", ErrRefused)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dir, err := repair.NewBackupDir(o.BackupRoot, "unstick "+a.Target, o.Now())
	if err != nil {
		return nil, err
	}
	var entries []repair.Entry
	for _, b := range a.Blockers {
		resp, err := o.Client.Get(ctx, b.Key)
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("read %s: %w; nothing was changed", b.Key, err)
		}
		if len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != b.ModRevision {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("%w: %s changed since it was reviewed; run unstick again; nothing was changed", ErrRefused, b.Key)
		}
		kv := resp.Kvs[0]
		entries = append(entries, repair.Entry{Key: b.Key, Value: kv.Value, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision,
			Version: kv.Version, Lease: kv.Lease, Reason: "finalizers [" + strings.Join(b.Finalizers, ", ") + "] removed by regghost unstick " + a.Target})
	}
	res := &Result{Dir: dir}
	if res.Backup, _, err = repair.WriteBackup(dir, &repair.Backup{Created: o.Now().UTC(), Scope: "unstick " + a.Target, Prefix: registry, Entries: entries}); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("%w; nothing was changed", err)
	}
	for _, b := range a.Blockers {
		res.Results = append(res.Results, removeFinalizers(ctx, o.Dynamic, b))
	}
	if err := repair.AppendAudit(dir, "unstick", res.Results); err != nil {
		return res, err
	}
	res.Finished = waitGone(ctx, o.Client, a.Key, o.Wait)
	left, err := countLeft(ctx, o.Client, registry, a)
	if err != nil {
		return res, err
	}
	res.Left = left
	return res, nil
}

// removeFinalizers patches one object's finalizers away, preconditioned on
// the resourceVersion that was reviewed.
func removeFinalizers(ctx context.Context, dyn dynamic.Interface, b Blocker) repair.Result {
	gvr := schema.GroupVersionResource{Group: b.Resource.Group, Version: b.Resource.Version, Resource: b.Resource.Resource}
	patch := fmt.Sprintf(`{"metadata":{"finalizers":null,"resourceVersion":"%d"}}`, b.ModRevision)
	var err error
	if b.Namespace != "" {
		_, err = dyn.Resource(gvr).Namespace(b.Namespace).Patch(ctx, b.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	} else {
		_, err = dyn.Resource(gvr).Patch(ctx, b.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	}
	switch {
	case err == nil:
		return repair.Result{Key: b.Key, Outcome: FinalizersRemoved, Detail: fmt.Sprintf("[%s] removed through the API server (resourceVersion %d)", strings.Join(b.Finalizers, ", "), b.ModRevision)}
	case apierrors.IsConflict(err):
		return repair.Result{Key: b.Key, Outcome: repair.SkippedChanged, Detail: "changed since it was reviewed; left alone"}
	case apierrors.IsNotFound(err):
		return repair.Result{Key: b.Key, Outcome: repair.SkippedGone, Detail: "gone since it was reviewed"}
	}
	return repair.Result{Key: b.Key, Outcome: repair.NotAttempted, Detail: "the API server refused the patch: " + err.Error()}
}

// waitGone waits until key is gone from etcd, at most wait.
func waitGone(ctx context.Context, cli *clientv3.Client, key string, wait time.Duration) bool {
	deadline := time.Now().Add(wait)
	for {
		resp, err := cli.Get(ctx, key, clientv3.WithCountOnly())
		if err == nil && resp.Count == 0 {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// countLeft counts the keys of the target still in etcd.
func countLeft(ctx context.Context, cli *clientv3.Client, registry string, a *Analysis) (int, error) {
	store, err := etcdscan.NewEtcdStore(ctx, cli, etcdscan.DefaultPageSize)
	if err != nil {
		return 0, err
	}
	n := 0
	count := func(*mvccpb.KeyValue) error { n++; return nil }
	if name, ok := strings.CutPrefix(a.Target, "namespace "); ok {
		err = etcdscan.WalkNamespace(ctx, store, registry, name, true, count)
	} else {
		r, _ := catalog.CustomFromCRDName(strings.TrimPrefix(a.Target, "customresourcedefinition "))
		prefix := registry + r.Prefix() + "/"
		err = store.Range(ctx, prefix, etcdscan.PrefixEnd(prefix), true, count)
	}
	return n, err
}
