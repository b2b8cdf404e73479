package etcdscan

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
)

// visit classifies one key.
func (s *scan) visit(ctx context.Context, kv *mvccpb.KeyValue) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	reg := s.opts.Prefix
	key := string(kv.Key)
	s.rep.ScannedKeys++
	prefix, _ := prefixOf(reg, key)
	if catalog.IsInternal(prefix) {
		s.rep.InternalKeys++
		return nil
	}
	f := Finding{Key: key, Resource: prefix, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
	k, err := ParseKey(reg, key)
	if err != nil {
		f.add(ClassUnservedType, err.Error()+", so no API resource can reach it")
		s.record(f)
		return nil
	}
	f.Namespace, f.Name = k.Namespace, k.Name
	resources, served := s.opts.Catalog.Lookup(k.Prefix)
	if served {
		f.Resource = resources[0].GroupResource()
		// Kind is empty for custom resources known only by their CRD's name,
		// whose scope is unknown.
		if r := resources[0]; r.Kind != "" && r.Namespaced != (k.Namespace != "") {
			f.add(ClassKeyMismatch, scopeMismatch(resources[0], k))
		}
	} else if s.opts.Catalog.Decided(k.Prefix) {
		f.add(ClassUnservedType, unservedReason(reg, k.Prefix))
	}
	if k.Namespace != "" {
		counts := s.perNS[k.Namespace]
		if counts == nil {
			counts = map[string]int{}
			s.perNS[k.Namespace] = counts
		}
		counts[f.Resource]++
		if !s.namespaces[k.Namespace] {
			f.add(ClassOrphanedNamespace, fmt.Sprintf("namespace %s does not exist (no %snamespaces/%s key)", k.Namespace, reg, k.Namespace))
		}
	}

	obj, err := decode.Meta(kv.Value)
	f.Format = string(obj.Format)
	switch {
	case err != nil:
		fi := s.record(f)
		fi.add(ClassUndecodable, fmt.Sprintf("%s value does not decode: %v", obj.Format, err))
		if served {
			s.confirm = append(s.confirm, confirmation{key: key, res: resources[0], ns: k.Namespace, name: k.Name, class: ClassUndecodable})
		}
		return nil
	case obj.Encryption != nil:
		f.Encryption = obj.Encryption.String()
		s.rep.Encrypted[obj.Encryption.Provider+"/"+obj.Encryption.KeyName]++
		if !served {
			break
		}
		if s.opts.Decrypter != nil && obj.Encryption.Provider != "kms" {
			gr := schema.GroupResource{Group: resources[0].Group, Resource: resources[0].Resource}
			plain, err := s.opts.Decrypter.Decrypt(ctx, key, gr, kv.Value)
			if err != nil {
				f.add(ClassEncryptedUnknown, fmt.Sprintf("encrypted with %s key %q and cannot be decrypted: %v", obj.Encryption.Provider, obj.Encryption.KeyName, err))
				break
			}
			s.rep.Decrypted++
			inner, err := decode.Meta(plain)
			if err != nil {
				f.add(ClassUndecodable, fmt.Sprintf("decrypted %s value does not decode: %v", inner.Format, err))
				break
			}
			s.classifyObject(&f, k, resources, inner, kv)
			break
		}
		s.confirm = append(s.confirm, confirmation{key: key, res: resources[0], ns: k.Namespace, name: k.Name, class: ClassEncryptedUnknown, enc: *obj.Encryption, f: f})
	default:
		s.classifyObject(&f, k, resources, obj, kv)
	}
	if len(f.Classes) > 0 {
		s.record(f)
	}
	return nil
}

// classifyObject runs the checks that need the decoded object.
func (s *scan) classifyObject(f *Finding, k Key, resources []catalog.Resource, obj *decode.Object, kv *mvccpb.KeyValue) {
	m := &obj.Meta
	f.APIVersion, f.Kind = obj.APIVersion, obj.Kind
	if !m.CreationTimestamp.IsZero() {
		t := m.CreationTimestamp.Time
		f.Created = &t
	}
	if m.Name != k.Name || m.Namespace != k.Namespace {
		f.add(ClassKeyMismatch, fmt.Sprintf("key says %s but the object inside is %s", nsName(k.Namespace, k.Name), nsName(m.Namespace, m.Name)))
	}
	if kinds := kindsOf(resources); len(kinds) > 0 && !contains(kinds, obj.Kind) {
		f.add(ClassKeyMismatch, fmt.Sprintf("stored under %s/ but the object is a %s, not a %s", k.Prefix, obj.Kind, strings.Join(kinds, " or ")))
	}
	s.uids.add(string(m.UID))
	if len(m.OwnerReferences) > 0 {
		s.noteOwners(f.Key, m.OwnerReferences)
	}
	if m.DeletionTimestamp == nil {
		return
	}
	since := s.now.Sub(m.DeletionTimestamp.Time)
	if obj.Kind == "Namespace" && k.Prefix == "namespaces" {
		s.noteTerminatingNamespace(*f, kv.Value, since)
		return
	}
	if len(m.Finalizers) > 0 && since >= s.opts.TerminatingAfter {
		f.add(ClassStuckTerminating, fmt.Sprintf("deleted %s ago but finalizers [%s] remain; nothing has removed them", human(since), strings.Join(m.Finalizers, ", ")))
	}
}

type terminatingNamespace struct {
	f     Finding
	ns    *corev1.Namespace
	since time.Duration
}

func (s *scan) noteTerminatingNamespace(f Finding, value []byte, since time.Duration) {
	o, _, err := decode.Typed(value)
	ns, ok := o.(*corev1.Namespace)
	if err != nil || !ok {
		return
	}
	s.terminatingNS = append(s.terminatingNS, terminatingNamespace{f: f, ns: ns, since: since})
}

// finishNamespaces reports namespaces stuck in Terminating with what blocks them.
func (s *scan) finishNamespaces() {
	for _, t := range s.terminatingNS {
		fins := append([]string{}, t.ns.Finalizers...)
		for _, sf := range t.ns.Spec.Finalizers {
			fins = append(fins, "spec:"+string(sf))
		}
		if len(fins) == 0 || t.since < s.opts.TerminatingAfter {
			continue
		}
		parts := []string{fmt.Sprintf("Terminating for %s; finalizers [%s]", human(t.since), strings.Join(fins, ", "))}
		if counts := s.perNS[t.ns.Name]; len(counts) > 0 {
			parts = append(parts, "objects left in etcd: "+countList(counts))
		}
		for _, c := range t.ns.Status.Conditions {
			if c.Status == corev1.ConditionTrue && c.Message != "" {
				parts = append(parts, string(c.Type)+": "+c.Message)
			}
		}
		f := t.f
		f.add(ClassStuckTerminating, strings.Join(parts, "; "))
		s.record(f).add(ClassStuckTerminating, f.Reasons[len(f.Reasons)-1])
	}
}

func scopeMismatch(r catalog.Resource, k Key) string {
	if r.Namespaced {
		return fmt.Sprintf("%s are namespaced but the key has no namespace", r.GroupResource())
	}
	return fmt.Sprintf("%s are cluster-scoped but the key has a namespace segment %q", r.GroupResource(), k.Namespace)
}

func unservedReason(reg, prefix string) string {
	if group, plural, ok := strings.Cut(prefix, "/"); ok && strings.Contains(group, ".") {
		return fmt.Sprintf("no served resource stores under %s%s/: the CustomResourceDefinition %s.%s is gone", reg, prefix, plural, group)
	}
	return fmt.Sprintf("no served resource stores under %s%s/ (removed API or unknown type)", reg, prefix)
}

func kindsOf(rs []catalog.Resource) []string {
	var out []string
	for _, r := range rs {
		if r.Kind != "" && !contains(out, r.Kind) {
			out = append(out, r.Kind)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func nsName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func human(d time.Duration) string { return duration.HumanDuration(d) }
