package migrate

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/time/rate"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/regghost/regghost/pkg/notice"
)

// Outcomes of one object's rewrite.
const (
	// Rewritten: the API server took the no-op update.
	Rewritten = "rewritten"
	// Gone: the object was deleted after the census.
	Gone = "gone"
	// CreatedAgain: an object of that name was deleted and created again
	// after the census (another UID): the API server wrote it as it writes
	// now, and it is not the object the plan named.
	CreatedAgain = "created again"
	// Failed: the API server refused or could not read it.
	Failed = "failed"
	// NotDone: the command's time ran out while it was in flight.
	NotDone = "not done"
)

// DefaultPerSecond paces a rewrite unless told otherwise.
const DefaultPerSecond = 100

// maxConflicts bounds the re-reads of one object whose every update lost to
// another writer.
const maxConflicts = 5

// RewriteOptions say how to rewrite.
type RewriteOptions struct {
	Dynamic dynamic.Interface
	// PerSecond paces the updates (0: DefaultPerSecond).
	PerSecond int
	// Workers are concurrent updates (0: 4).
	Workers int
	// Progress, when set, is called after each object.
	Progress notice.Progress
	// Stop, when closed, ends the rewrite after the updates in flight
	// (an interrupt): a run again goes on.
	Stop <-chan struct{}
	// Rewrote, when set, is told of each object the API server took: its
	// outcome holds the revision it was read at and the one the update
	// left it at; calls do not overlap.
	Rewrote func(out Outcome)
}

// Outcome is what became of one object.
type Outcome struct {
	Object
	Outcome string `json:"outcome"`
	// Conflicts are updates another writer won, each followed by a read.
	Conflicts int    `json:"conflicts,omitempty"`
	Error     string `json:"error,omitempty"`
	// Revision is the resourceVersion the API server answered the update
	// with, and Read the one the object was read at before it (0 unless
	// Rewritten).
	Revision int64 `json:"-"`
	Read     int64 `json:"-"`
}

// Rewritten is what a rewrite did.
type RewriteResult struct {
	Planned   int            `json:"planned"`
	Counts    map[string]int `json:"counts"`
	Conflicts int            `json:"conflicts"`
	// Failures are the objects the API server did not rewrite.
	Failures []Outcome `json:"failures"`
	// Stopped says why the rewrite stopped before the end ("" when it ran
	// through): a run again reads the plan from etcd again and goes on.
	Stopped string `json:"stopped,omitempty"`
}

// Rewrite writes every object c.Rewrite names back through the API server,
// unchanged, with the resourceVersion it was read at as precondition: the
// API server encodes it at the storage version and encrypts it with the key
// that writes. A conflict (another writer won) is read again and written
// again; an object deleted, or created again under its name, after the
// census is left alone. It never overwrites: what it writes is what it read.
func Rewrite(ctx context.Context, c *Census, o RewriteOptions) *RewriteResult {
	per := o.PerSecond
	if per <= 0 {
		per = DefaultPerSecond
	}
	workers := o.Workers
	if workers <= 0 {
		workers = 4
	}
	limit := rate.NewLimiter(rate.Limit(per), 1)
	res := &RewriteResult{Planned: len(c.Rewrite), Counts: map[string]int{}, Failures: []Outcome{}}
	if len(c.Rewrite) == 0 {
		return res
	}
	ri := o.Dynamic.Resource(c.Target.GVR())
	work := make(chan Object)
	var mu sync.Mutex
	var wg sync.WaitGroup
	done := 0
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for obj := range work {
				out := rewriteOne(ctx, ri, c.Target.Namespaced, obj)
				if out.Outcome == Failed && ctx.Err() != nil {
					out.Outcome = NotDone
				}
				mu.Lock()
				res.Counts[out.Outcome]++
				res.Conflicts += out.Conflicts
				if out.Outcome == Failed {
					res.Failures = append(res.Failures, out)
				}
				if out.Outcome == Rewritten && o.Rewrote != nil {
					o.Rewrote(out)
				}
				done++
				if o.Progress != nil {
					o.Progress(done, res.Planned)
				}
				mu.Unlock()
			}
		}()
	}
	for _, obj := range c.Rewrite {
		if err := limit.Wait(ctx); err != nil {
			res.Stopped = stopped(ctx, err)
			break
		}
		if interrupted(o.Stop) {
			res.Stopped = "interrupted"
			break
		}
		work <- obj
	}
	close(work)
	wg.Wait()
	if res.Stopped == "" && ctx.Err() != nil {
		res.Stopped = stopped(ctx, ctx.Err())
	}
	return res
}

func stopped(ctx context.Context, err error) string {
	if errors.Is(context.Cause(ctx), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded) {
		return "the command's time ran out"
	}
	return "stopped: " + err.Error()
}

// rewriteOne reads one object through the API server and writes it back
// with the resourceVersion it read.
func rewriteOne(ctx context.Context, ri dynamic.NamespaceableResourceInterface, namespaced bool, obj Object) Outcome {
	var r dynamic.ResourceInterface = ri
	if namespaced {
		r = ri.Namespace(obj.Namespace)
	}
	out := Outcome{Object: obj}
	for {
		cur, err := r.Get(ctx, obj.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			out.Outcome = Gone
			return out
		case err != nil:
			out.Outcome, out.Error = Failed, fmt.Sprintf("read through the API server: %v", err)
			return out
		case obj.UID != "" && cur.GetUID() != obj.UID:
			out.Outcome = CreatedAgain
			return out
		}
		after, err := r.Update(ctx, cur, metav1.UpdateOptions{})
		switch {
		case err == nil:
			out.Outcome, out.Revision, out.Read = Rewritten, revisionOf(after), revisionOf(cur)
			return out
		case apierrors.IsConflict(err) && out.Conflicts < maxConflicts:
			out.Conflicts++
			continue
		case apierrors.IsNotFound(err):
			out.Outcome = Gone
			return out
		default:
			out.Outcome, out.Error = Failed, fmt.Sprintf("write through the API server at resourceVersion %s: %v", cur.GetResourceVersion(), err)
			return out
		}
	}
}
