package recovery

import (
	"encoding/json"
	"fmt"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/regghost/regghost/pkg/catalog"
)

// serverSetMetadata are the metadata fields the API server sets; a
// manifest for `kubectl apply` leaves them out.
var serverSetMetadata = []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"}

// Manifest turns a selected object into a manifest ready for `kubectl
// apply`: apiVersion and kind set, the fields the API server sets removed
// (metadata, a Service's allocated cluster IPs), and status removed unless
// withStatus.
func Manifest(o *Object, withStatus bool) (*unstructured.Unstructured, error) {
	if o.Obj == nil {
		return nil, fmt.Errorf("%s cannot be read here: %s", o.Key, o.Unreadable)
	}
	var content map[string]any
	if u, ok := o.Obj.(runtime.Unstructured); ok {
		content = runtime.DeepCopyJSON(u.UnstructuredContent())
	} else {
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(o.Obj); err != nil {
			return nil, fmt.Errorf("convert %s: %w", o.Key, err)
		}
	}
	u := &unstructured.Unstructured{Object: content}
	if o.Meta != nil && o.Meta.APIVersion != "" {
		u.SetAPIVersion(o.Meta.APIVersion)
		u.SetKind(o.Meta.Kind)
	}
	if u.GetKind() == "" {
		return nil, fmt.Errorf("%s: the stored object names no kind", o.Key)
	}
	for _, f := range serverSetMetadata {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if !withStatus {
		delete(u.Object, "status")
	}
	switch {
	case u.GetKind() == "PersistentVolume" && u.GetAPIVersion() == "v1":
		// The claim it names was another object: its UID and version
		// would keep the volume Released (and, with Delete, deleted).
		unstructured.RemoveNestedField(u.Object, "spec", "claimRef", "uid")
		unstructured.RemoveNestedField(u.Object, "spec", "claimRef", "resourceVersion")
	case u.GetKind() == "Job" && u.GetAPIVersion() == "batch/v1":
		// The selector and labels the API server generated from the old UID.
		if manual, _, _ := unstructured.NestedBool(u.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(u.Object, "spec", "selector")
			for _, l := range []string{"controller-uid", "batch.kubernetes.io/controller-uid"} {
				unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "labels", l)
				unstructured.RemoveNestedField(u.Object, "metadata", "labels", l)
			}
		}
	}
	if u.GetKind() == "Service" && u.GetAPIVersion() == "v1" {
		if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
	}
	return u, nil
}

// ManifestOptions say which judged objects Manifests prints, and how.
type ManifestOptions struct {
	// WithStatus keeps each object's status.
	WithStatus bool
	// ByName are the keys of the objects the user asked for by name, and
	// asked to print even when they exist live (NamedKeys gives those of a
	// selection). An object that exists live (AlreadyPresent, Exists) is
	// printed only when its key is here, and then carries the live
	// resourceVersion (Verdict.LiveRevision), so that `kubectl apply` fails
	// on a conflict once the live object changed after it was judged
	// instead of overwriting that change. Empty: no object that exists
	// live is printed.
	ByName []string
}

// Left is a judged object that Manifests did not print, and why.
type Left struct {
	Key    string `json:"key"`
	Action Action `json:"action"`
	// Reason is the verdict's Detail.
	Reason string `json:"reason"`
}

// Manifests turns judged objects (Judge ran on them) into one List for
// `kubectl apply` that carries the verdicts: it holds what recover would
// write (Recover), each refusal that holds only for recover's own write of
// the stored bytes (Verdict.ThroughAPI: the manifest is its way out), and,
// with ByName, the objects named there that exist live, with the live
// resourceVersion. Every other object is left out, and listed in left in
// the order of objs with its verdict's reason, for the caller to say. The
// items follow objs (namespaces, then CRDs, then the rest). An error means
// an object to print cannot be read or objs were not judged; nothing is to
// be printed then.
func Manifests(objs []*Object, o ManifestOptions) (*unstructured.UnstructuredList, []Left, error) {
	byName := map[string]bool{}
	for _, k := range o.ByName {
		byName[k] = true
	}
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	var left []Left
	// printed names the objects in the list by their UID: an owner applied
	// by kubectl gets a new UID, so a dependent printed with it would point
	// at one that no longer exists, and the garbage collector deletes it.
	printed := map[string]*Object{}
	for _, obj := range objs {
		if uid := objectUID(obj); uid != "" && (obj.Action == Recover || obj.Action == Refused && obj.ThroughAPI) {
			printed[uid] = obj
		}
	}
	for _, obj := range objs {
		var rv int64
		switch obj.Action {
		case Recover:
		case Refused:
			if !obj.ThroughAPI {
				left = append(left, Left{Key: obj.Key, Action: obj.Action, Reason: obj.Detail})
				continue
			}
		case AlreadyPresent, Exists:
			if !byName[obj.Key] || obj.LiveRevision == 0 {
				left = append(left, Left{Key: obj.Key, Action: obj.Action, Reason: obj.Detail})
				continue
			}
			rv = obj.LiveRevision
		default:
			return nil, nil, fmt.Errorf("%s was not judged (action %q): its manifest would carry no verdict", obj.Key, obj.Action)
		}
		u, err := Manifest(obj, o.WithStatus)
		if err != nil {
			return nil, nil, fmt.Errorf("manifests: %w", err)
		}
		if owner := printedOwner(obj, printed); owner != nil && rv == 0 {
			left = append(left, Left{Key: obj.Key, Action: obj.Action, Reason: fmt.Sprintf("its owner %s is in these manifests and gets a new UID when applied, while this object's ownerReference names the old one: the garbage collector would delete it; the owner's controller makes it anew, or apply it by hand without that ownerReference", owner.Key)})
			continue
		}
		if rv != 0 {
			u.SetResourceVersion(strconv.FormatInt(rv, 10))
		}
		list.Items = append(list.Items, *u)
	}
	return list, left, nil
}

// NamedKeys are the keys of the objects Select chose by name: by their
// exact key, or by Selection.Name (Object.Named); not the namespaces and
// custom resources that came with them.
func NamedKeys(objs []*Object) []string {
	var keys []string
	for _, o := range objs {
		if o.Named {
			keys = append(keys, o.Key)
		}
	}
	return keys
}

// CRDResource is the resource a recovered CustomResourceDefinition
// defines, at its storage version.
func CRDResource(o *Object) (catalog.Resource, error) {
	crd, err := crdOf(o)
	if err != nil {
		return catalog.Resource{}, err
	}
	r := catalog.Resource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural, Kind: crd.Spec.Names.Kind, Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, Custom: true}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			r.Version = v.Name
		}
	}
	if r.Version == "" && len(crd.Spec.Versions) > 0 {
		r.Version = crd.Spec.Versions[0].Name
	}
	return r, nil
}

// crdOf reads a selected CustomResourceDefinition, whatever type decoding
// gave it.
func crdOf(o *Object) (*apiextensionsv1.CustomResourceDefinition, error) {
	var crd apiextensionsv1.CustomResourceDefinition
	raw, err := json.Marshal(o.Obj)
	if err == nil {
		err = json.Unmarshal(raw, &crd)
	}
	if err != nil || crd.Spec.Group == "" || crd.Spec.Names.Plural == "" {
		return nil, fmt.Errorf("%s is not a readable CustomResourceDefinition (%v)", o.Key, err)
	}
	return &crd, nil
}

// objectUID is the UID an object was stored with.
func objectUID(obj *Object) string {
	if m, ok := obj.Obj.(metav1.Object); ok && m != nil {
		return string(m.GetUID())
	}
	return ""
}

// printedOwner is an owner of obj, by ownerReference UID, that is among
// the objects printed.
func printedOwner(obj *Object, printed map[string]*Object) *Object {
	m, ok := obj.Obj.(metav1.Object)
	if !ok || m == nil {
		return nil
	}
	for _, ref := range m.GetOwnerReferences() {
		if owner := printed[string(ref.UID)]; owner != nil {
			return owner
		}
	}
	return nil
}
