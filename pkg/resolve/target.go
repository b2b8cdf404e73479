package resolve

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/names"
)

// shortNames are the short names kube-apiserver's discovery serves for its
// own resources (kubectl get po, svc, cm, ...), by "<group>/<resource>".
var shortNames = map[string][]string{
	"/pods": {"po"}, "/services": {"svc"}, "/configmaps": {"cm"}, "/namespaces": {"ns"}, "/nodes": {"no"},
	"/persistentvolumes": {"pv"}, "/persistentvolumeclaims": {"pvc"}, "/serviceaccounts": {"sa"},
	"/endpoints": {"ep"}, "/events": {"ev"}, "/replicationcontrollers": {"rc"}, "/limitranges": {"limits"},
	"/resourcequotas": {"quota"}, "apps/deployments": {"deploy"}, "apps/daemonsets": {"ds"},
	"apps/replicasets": {"rs"}, "apps/statefulsets": {"sts"}, "autoscaling/horizontalpodautoscalers": {"hpa"},
	"batch/cronjobs": {"cj"}, "certificates.k8s.io/certificatesigningrequests": {"csr"},
	"networking.k8s.io/ingresses": {"ing"}, "networking.k8s.io/networkpolicies": {"netpol"},
	"policy/poddisruptionbudgets": {"pdb"}, "scheduling.k8s.io/priorityclasses": {"pc"},
	"storage.k8s.io/storageclasses": {"sc"}, "apiextensions.k8s.io/customresourcedefinitions": {"crd", "crds"},
	"events.k8s.io/events": {"ev"},
}

// typeEntry is one resource with every name a person may call it by.
type typeEntry struct {
	res        catalog.Resource
	namespaced bool
	names      []string
}

// entries are the built-in resources of the release catalog and the custom
// resources whose CRD etcd holds, each with its names: plural, singular
// (the kind in lower case), short names, and each of them with ".<group>".
func entries(ctx context.Context, store Ranger, registry string) ([]typeEntry, error) {
	var out []typeEntry
	add := func(res catalog.Resource, namespaced bool, singular string, short []string) {
		base := append([]string{res.Resource, singular}, short...)
		var all []string
		for _, n := range base {
			if n == "" {
				continue
			}
			all = append(all, n)
			if res.Group != "" {
				all = append(all, n+"."+res.Group)
			}
		}
		out = append(out, typeEntry{res: res, namespaced: namespaced, names: all})
	}
	for _, r := range catalog.Release().Resources() {
		add(r, r.Namespaced, strings.ToLower(r.Kind), shortNames[r.Group+"/"+r.Resource])
	}
	start := registry + CRDPrefix
	err := store.Range(ctx, start, prefixEnd(start), false, func(kv *mvccpb.KeyValue) error {
		crd, _ := readCRD(ctx, nil, string(kv.Key), kv.Value)
		if crd == nil {
			// Encrypted or damaged: known by its name, "<plural>.<group>".
			if res, ok := catalog.CustomFromCRDName(string(kv.Key[len(start):])); ok {
				add(res, true, "", nil)
			}
			return nil
		}
		n := crd.Spec.Names
		res := catalog.Resource{Group: crd.Spec.Group, Resource: n.Plural, Kind: n.Kind, Custom: true}
		singular := n.Singular
		if singular == "" {
			singular = strings.ToLower(n.Kind)
		}
		add(res, crd.Spec.Scope == apiextensionsv1.NamespaceScoped, singular, n.ShortNames)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read CustomResourceDefinitions: %w", err)
	}
	return out, nil
}

// ObjectKey turns an object named as kubectl names one, TYPE and NAME
// (TYPE a resource's plural, singular, kind or short name, optionally with
// its group), into its etcd key. A namespaced object is in namespace, or
// "default" when none is given (kubectl's rule); a cluster-scoped one given
// a namespace is an error, as is a type that names no resource or several.
func ObjectKey(ctx context.Context, store Ranger, registry, typ, name, namespace string) (string, error) {
	all, err := entries(ctx, store, registry)
	if err != nil {
		return "", err
	}
	typ = strings.ToLower(typ)
	var found []typeEntry
	prefixes := map[string]bool{}
	var known []string
	for _, e := range all {
		known = append(known, e.names...)
		if slices.Contains(e.names, typ) && !prefixes[e.res.Prefix()] {
			prefixes[e.res.Prefix()] = true
			found = append(found, e)
		}
	}
	switch len(found) {
	case 0:
		near := ""
		if c := names.Closest(known, typ, 3); len(c) > 0 {
			near = "; did you mean " + strings.Join(c, ", ") + "?"
		}
		return "", mistake("%s names no resource kube-apiserver %s serves nor any CustomResourceDefinition etcd holds%s", typ, catalog.ReleaseVersion(), near)
	case 1:
	default:
		var which []string
		for _, e := range found {
			which = append(which, e.res.Resource+"."+e.res.Group)
		}
		return "", mistake("%s names %s: give its group (%s)", typ, strings.Join(which, " and "), strings.Join(which, ", "))
	}
	e := found[0]
	if name == "" || strings.Contains(name, "/") {
		return "", mistake("%s/%s: a name is one path segment", typ, name)
	}
	if !e.namespaced {
		if namespace != "" {
			return "", mistake("%s is cluster-scoped: drop -n %s", e.res.Resource, namespace)
		}
		return registry + e.res.Prefix() + "/" + name, nil
	}
	if namespace == "" {
		namespace = "default"
	}
	return registry + e.res.Prefix() + "/" + namespace + "/" + name, nil
}

// ErrTarget marks (wraps) an error in what the person typed, as opposed
// to one reading etcd.
var ErrTarget = errors.New("give an etcd key (/registry/...), TYPE/NAME or TYPE NAME")

// targetError is a mistake in what was typed: msg, marked ErrTarget.
type targetError struct{ msg string }

func (e *targetError) Error() string        { return e.msg }
func (e *targetError) Is(target error) bool { return target == ErrTarget }

// Usage marks it as the person's mistake (usage.Marked): exit 2.
func (e *targetError) Usage() {}

func mistake(format string, args ...any) error {
	return &targetError{msg: fmt.Sprintf(format, args...)}
}

// Target is the etcd key of what args name: a key as it is (it starts with
// "/"), else kubectl's TYPE/NAME or TYPE NAME, with namespace (-n) for a
// namespaced type.
func Target(ctx context.Context, store Ranger, registry string, args []string, namespace string) (string, error) {
	switch {
	case len(args) == 1 && strings.HasPrefix(args[0], "/"):
		if namespace != "" {
			return "", mistake("-n %s does not apply to a key (%s): the key names its namespace", namespace, args[0])
		}
		return args[0], nil
	case len(args) == 1 && strings.Count(args[0], "/") == 1:
		typ, name, _ := strings.Cut(args[0], "/")
		return ObjectKey(ctx, store, registry, typ, name, namespace)
	case len(args) == 2 && !strings.Contains(args[0], "/"):
		return ObjectKey(ctx, store, registry, args[0], args[1], namespace)
	}
	return "", mistake("%s: %v", strings.Join(args, " "), ErrTarget)
}
