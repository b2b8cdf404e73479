package migrate

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Stranded are the versions objects are stored at that the CRD no longer
// lists in spec.versions: the API server cannot read those objects, every
// list of the resource fails, and putting the old CRD back is refused.
func Stranded(c *Census) []string {
	t := c.Target
	if t.CRD == nil {
		return nil
	}
	var out []string
	for at := range c.ByVersion {
		gv, err := schema.ParseGroupVersion(at)
		if err != nil || gv.Group != t.Resource.Group {
			continue
		}
		listed := false
		for _, v := range t.CRD.Spec.Versions {
			listed = listed || v.Name == gv.Version
		}
		if !listed {
			out = append(out, gv.Version)
		}
	}
	sort.Strings(out)
	return out
}

// ListAgain puts versions back into the CRD's spec.versions, not served and
// not the storage version, with a schema that keeps every field
// (x-kubernetes-preserve-unknown-fields at its root): kube-apiserver prunes
// a stored object with the schema of its own version before it converts it
// (through a conversion webhook, or by its apiVersion alone), so the
// storage version's schema there would drop every field only the old
// version has before the webhook could map it. The CRD the census read is
// the precondition.
func ListAgain(ctx context.Context, dyn dynamic.Interface, c *Census, versions []string) (int64, error) {
	return editVersions(ctx, dyn, c, func(vs []any) ([]any, error) {
		var storage map[string]any
		for _, v := range vs {
			if m, ok := v.(map[string]any); ok && m["storage"] == true {
				storage = m
			}
		}
		if storage == nil {
			return nil, fmt.Errorf("CustomResourceDefinition %s has no storage version", c.Target.CRD.Name)
		}
		for _, name := range versions {
			vs = append(vs, listedAgain(name, storage))
		}
		return vs, nil
	})
}

// listedAgain is version name as ListAgain lists it: not served, not
// stored, every field kept, the storage version's subresources (the API
// server requires the same status subresource to read it).
func listedAgain(name string, storage map[string]any) map[string]any {
	again := map[string]any{"name": name, "served": false, "storage": false,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
	if x, ok := storage["subresources"]; ok {
		again["subresources"] = runtimeDeepCopy(x)
	}
	return again
}

// Unlist removes versions ListAgain put back, once nothing is stored at
// them and status.storedVersions no longer holds them. It refuses a
// version that is served or the storage version (someone else changed it).
func Unlist(ctx context.Context, dyn dynamic.Interface, c *Census, versions []string) (int64, error) {
	return editVersions(ctx, dyn, c, func(vs []any) ([]any, error) {
		var out []any
		for _, v := range vs {
			m, _ := v.(map[string]any)
			if m == nil || !slices.Contains(versions, fmt.Sprint(m["name"])) {
				out = append(out, v)
				continue
			}
			if m["served"] == true || m["storage"] == true {
				return nil, fmt.Errorf("refused: version %s of CustomResourceDefinition %s is served or stored again; nothing was changed", m["name"], c.Target.CRD.Name)
			}
		}
		return out, nil
	})
}

// editVersions rewrites the CRD's spec.versions with the resourceVersion of
// the CRD the census read as precondition, and returns the revision it
// left the CRD at.
func editVersions(ctx context.Context, dyn dynamic.Interface, c *Census, edit func([]any) ([]any, error)) (int64, error) {
	name := c.Target.CRD.Name
	crds := dyn.Resource(crdGVR)
	cur, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return 0, fmt.Errorf("read CustomResourceDefinition %s through the API server: %w", name, err)
	}
	if err := sameCRD(cur, c); err != nil {
		return 0, err
	}
	vs, _, err := unstructured.NestedSlice(cur.Object, "spec", "versions")
	if err != nil {
		return 0, fmt.Errorf("read spec.versions of CustomResourceDefinition %s: %w", name, err)
	}
	if vs, err = edit(vs); err != nil {
		return 0, err
	}
	if err := unstructured.SetNestedSlice(cur.Object, vs, "spec", "versions"); err != nil {
		return 0, fmt.Errorf("set spec.versions: %w", err)
	}
	after, err := crds.Update(ctx, cur, metav1.UpdateOptions{})
	if err != nil {
		if apierrors.IsConflict(err) {
			return 0, fmt.Errorf("CustomResourceDefinition %s changed while it was written; nothing was changed: run again", name)
		}
		return 0, fmt.Errorf("write spec.versions of CustomResourceDefinition %s: %w", name, err)
	}
	return revisionOf(after), nil
}

// revisionOf is the etcd revision an object the API server returned was
// written at (its resourceVersion).
func revisionOf(u *unstructured.Unstructured) int64 {
	rev, _ := strconv.ParseInt(u.GetResourceVersion(), 10, 64)
	return rev
}

func runtimeDeepCopy(x any) any {
	return runtime.DeepCopyJSONValue(x)
}

// WaitReadable waits until the API server reads obj through the target's
// version (a CRD change takes a moment to reach its handlers).
func WaitReadable(ctx context.Context, dyn dynamic.Interface, c *Census, obj Object, wait time.Duration) error {
	ri := dyn.Resource(c.Target.GVR())
	var r dynamic.ResourceInterface = ri
	if c.Target.Namespaced {
		r = ri.Namespace(obj.Namespace)
	}
	deadline := time.Now().Add(wait)
	for {
		_, err := r.Get(ctx, obj.Name, metav1.GetOptions{})
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the API server still cannot read %s after %s: %w", obj.Key, wait, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
