package migrate

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/regghost/regghost/pkg/plural"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// StoredVersionsChange is a narrowing of a CRD's status.storedVersions.
type StoredVersionsChange struct {
	CRD  string   `json:"crd"`
	From []string `json:"from"`
	To   []string `json:"to"`
	// Revision is the census that proves it.
	Revision int64 `json:"revision"`
}

// Needed reports whether the change narrows anything.
func (s StoredVersionsChange) Needed() bool { return !slices.Equal(s.From, s.To) }

// StoredVersionsProven is the status.storedVersions census c proves: the
// versions still holding objects, and the storage version, in the order the
// CRD lists them. It refuses while an object cannot be read (its version is
// unknown).
func StoredVersionsProven(c *Census) (StoredVersionsChange, error) {
	t := c.Target
	if t.CRD == nil {
		return StoredVersionsChange{}, fmt.Errorf("%s is a built-in resource: it has no status.storedVersions", c.Resource)
	}
	ch := StoredVersionsChange{CRD: t.CRD.Name, From: t.CRD.Status.StoredVersions, To: []string{}, Revision: c.Revision}
	if len(c.Unreadable) > 0 {
		return ch, fmt.Errorf("%s of %s cannot be read, so the versions %s stored at are not known", plural.Of(len(c.Unreadable), "object"), c.Resource, plural.They(len(c.Unreadable))+" "+plural.Be(len(c.Unreadable)))
	}
	if c.NotChecked > 0 {
		return ch, fmt.Errorf("%d objects of %s are under a KMS provider, so the versions they are stored at cannot be read offline", c.NotChecked, c.Resource)
	}
	for _, v := range t.CRD.Status.StoredVersions {
		if v == t.Version || c.AtVersion(v) > 0 {
			ch.To = append(ch.To, v)
		}
	}
	if !slices.Contains(ch.To, t.Version) {
		ch.To = append(ch.To, t.Version)
	}
	return ch, nil
}

// PruneStoredVersions writes ch through the CRD's /status, with the
// resourceVersion of the CRD the census read as precondition: a CRD changed
// since (its storage version moved, or it was deleted and created again) is
// refused, never overwritten.
func PruneStoredVersions(ctx context.Context, dyn dynamic.Interface, c *Census, ch StoredVersionsChange) (int64, error) {
	t := c.Target
	crds := dyn.Resource(crdGVR)
	cur, err := crds.Get(ctx, t.CRD.Name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("read CustomResourceDefinition %s through the API server: %w", t.CRD.Name, err)
	}
	if err := sameCRD(cur, c); err != nil {
		return 0, err
	}
	to := make([]any, len(ch.To))
	for i, v := range ch.To {
		to[i] = v
	}
	if err := unstructured.SetNestedSlice(cur.Object, to, "status", "storedVersions"); err != nil {
		return 0, fmt.Errorf("set status.storedVersions: %w", err)
	}
	after, err := crds.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) {
			return 0, fmt.Errorf("CustomResourceDefinition %s changed while its status was written; nothing was changed: run again", t.CRD.Name)
		}
		return 0, fmt.Errorf("write status.storedVersions of CustomResourceDefinition %s: %w", t.CRD.Name, err)
	}
	return revisionOf(after), nil
}

// sameCRD refuses a CRD that is not the one the census read: another UID
// (deleted and created again) or another resourceVersion (changed since).
func sameCRD(cur *unstructured.Unstructured, c *Census) error {
	t := c.Target
	if cur.GetUID() != t.CRD.UID {
		return fmt.Errorf("refused: CustomResourceDefinition %s was deleted and created again since etcd was read (uid %s, was %s); nothing was changed: run again", t.CRD.Name, cur.GetUID(), t.CRD.UID)
	}
	if cur.GetResourceVersion() != strconv.FormatInt(t.CRDRevision, 10) {
		return fmt.Errorf("refused: CustomResourceDefinition %s changed since etcd was read at revision %d (resourceVersion %s, was %d); nothing was changed: run again", t.CRD.Name, c.Revision, cur.GetResourceVersion(), t.CRDRevision)
	}
	return nil
}
