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

// visit classifies one key. Every ghost class it adds carries the evidence
// of its first witness; the second witness is asked after the walk.
func (s *scan) visit(ctx context.Context, kv *mvccpb.KeyValue) error {
	return s.visitDecoded(ctx, &decoded{kv: kv})
}

// visitDecoded is visit with the value decoded already (d.obj set) or not.
func (s *scan) visitDecoded(ctx context.Context, d *decoded) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	kv := d.kv
	reg := s.opts.Prefix
	key := string(kv.Key)
	s.rep.ScannedKeys++
	prefix, _ := prefixOf(reg, key)
	if catalog.IsInternal(prefix) {
		s.rep.InternalKeys++
		return nil
	}
	f := Finding{Key: key, Resource: prefix, CreateRevision: kv.CreateRevision, ModRevision: kv.ModRevision}
	atRev := s.atRev
	v := s.resolve(prefix)
	if v.state == typeForeign {
		s.foreignKeys[v.why]++
		return nil
	}
	k, err := ParseKey(reg, key)
	if err != nil {
		f.verdict(ClassUnservedType, WitnessEtcd, "key "+key, err.Error()+", so no API path can reach it")
		if s.opts.Served != nil {
			f.addEvidence(ClassUnservedType, WitnessAPIServer, "discovery of "+s.opts.API.Address(), Confirms,
				"every resource it serves is stored at <prefix>/<name> or <prefix>/<namespace>/<name>")
		}
		return s.record(f, nil)
	}
	f.Namespace, f.Name = k.Namespace, k.Name
	resources := v.resources
	switch v.state {
	case typeMissing:
		f.verdict(ClassUnservedType, WitnessEtcd, "CRD and APIService keys "+atRev+", and the release catalog", v.why)
		if v.crdName != "" {
			f.Absent = append(f.Absent, reg+"apiextensions.k8s.io/customresourcedefinitions/"+v.crdName)
		}
		if s.opts.Served != nil {
			if v.crdName == "" {
				a, said := Confirms, "serves nothing stored under "+reg+k.Prefix+"/"
				if rel := s.serverRelease(); rel != "" {
					a, said = NoEvidence, fmt.Sprintf("kube-apiserver %s is %s than the release catalog (%s): it may compile in a resource stored there and turned off", s.opts.ServerVersion, rel, catalog.ReleaseVersion())
				}
				f.addEvidence(ClassUnservedType, WitnessAPIServer, "discovery of "+s.opts.API.Address(), a, said)
			}
			// A dotted prefix's CRD is looked up through the API server after the walk.
		}
	case typeUnservedNow:
		f.add(ClassUnservedNow, v.why)
	}
	if len(resources) > 0 {
		r := resources[0]
		f.Resource = r.GroupResource()
		// Kind is empty for custom resources whose CRD did not decode.
		if r.Kind != "" && r.Namespaced != (k.Namespace != "") {
			f.verdict(ClassKeyMismatch, WitnessEtcd, "key "+key, scopeMismatch(r, k))
			if v.source == "discovery" {
				f.addEvidence(ClassKeyMismatch, WitnessAPIServer, "discovery of "+s.opts.API.Address(), Confirms, scopeOf(r))
			}
		}
	}
	if k.Namespace != "" {
		counts := s.perNS[k.Namespace]
		if counts == nil {
			counts = map[string]int{}
			s.perNS[k.Namespace] = counts
		}
		counts[f.Resource]++
		switch {
		case s.namespaces[k.Namespace]:
		case !s.holdsNamespaces:
			s.unjudgedNS++
		default:
			nsKey := reg + "namespaces/" + k.Namespace
			f.verdict(ClassOrphanedNamespace, WitnessEtcd, "key "+nsKey+" "+atRev,
				fmt.Sprintf("namespace %s does not exist (no %s key)", k.Namespace, nsKey))
			f.Absent = append(f.Absent, nsKey)
		}
	}

	obj, err := d.obj, d.err
	if obj == nil {
		obj, err = decode.Meta(kv.Value)
	}
	f.Format = string(obj.Format)
	var gr *schema.GroupResource
	if len(resources) > 0 {
		gr = &schema.GroupResource{Group: resources[0].Group, Resource: resources[0].Resource}
	}
	if obj != nil {
		s.tallyKey(f.Resource, gr, obj.Encryption, kv.Value)
	}
	ask := confirmation{key: key, ns: k.Namespace, name: k.Name}
	if len(resources) > 0 && v.state == typeServed {
		ask.res = &resources[0]
	}
	switch {
	case err != nil:
		f.verdict(ClassUndecodable, WitnessEtcd, "value of "+key+" "+atRev, fmt.Sprintf("%s value does not decode: %v", obj.Format, err))
		ask.classes = append(ask.classes, ClassUndecodable)
		s.tally(f.Resource, "undecodable")
	case obj.Encryption != nil:
		f.Encryption = obj.Encryption.String()
		if s.opts.Decrypter == nil || obj.Encryption.Provider == "kms" {
			s.tally(f.Resource, "encrypted "+obj.Encryption.Provider+"/"+obj.Encryption.KeyName)
		}
		ask.enc = obj.Encryption
		s.rep.Encrypted[obj.Encryption.Provider+"/"+obj.Encryption.KeyName]++
		if len(resources) == 0 {
			break
		}
		if s.opts.Decrypter == nil || obj.Encryption.Provider == "kms" {
			// No local witness: the API server is asked whether it can read it.
			ask.probe = true
			break
		}
		r := resources[0]
		plain, err := s.opts.Decrypter.Decrypt(ctx, key, schema.GroupResource{Group: r.Group, Resource: r.Resource}, kv.Value)
		if err != nil {
			s.tally(f.Resource, "encrypted "+obj.Encryption.Provider+"/"+obj.Encryption.KeyName)
			f.verdict(ClassEncryptedUnknown, WitnessEncryptionConfig, "--encryption-provider-config",
				fmt.Sprintf("encrypted with %s key %q and the local encryption config cannot decrypt it: %v", obj.Encryption.Provider, obj.Encryption.KeyName, err))
			ask.classes = append(ask.classes, ClassEncryptedUnknown)
			break
		}
		s.rep.Decrypted++
		inner, err := decode.Meta(plain)
		if err != nil {
			f.verdict(ClassUndecodable, WitnessEtcd, "decrypted value of "+key+" "+atRev, fmt.Sprintf("decrypted %s value does not decode: %v", inner.Format, err))
			ask.classes = append(ask.classes, ClassUndecodable)
			break
		}
		ask.classes = append(ask.classes, s.classifyObject(&f, k, resources, inner, kv)...)
	default:
		ask.classes = append(ask.classes, s.classifyObject(&f, k, resources, obj, kv)...)
	}
	if created := s.nsCreated[k.Namespace]; k.Namespace != "" && s.namespaces[k.Namespace] && kv.CreateRevision < created {
		if f.Created == nil && obj.Encryption != nil {
			// Encrypted and not decrypted here: its creation time is read
			// through the API server, or the verdict says it could not be.
			s.readCreated(ctx, &f, ask.res, k)
		}
		s.noteResurrected(ctx, &f, k.Namespace, kv.CreateRevision, created)
	}
	s.queueConfirmation(ask, &f)
	if len(f.Classes) > 0 {
		return s.record(f, nil)
	}
	return nil
}

// classifyObject runs the checks that need the decoded object and returns
// the classes the API server should be asked about by reading the object.
func (s *scan) classifyObject(f *Finding, k Key, resources []catalog.Resource, obj *decode.Object, kv *mvccpb.KeyValue) []Class {
	m := &obj.Meta
	s.tally(f.Resource, obj.APIVersion)
	if len(resources) > 0 {
		s.checkStoredVersion(f, k.Prefix, obj.APIVersion, obj.Kind)
	}
	f.APIVersion, f.Kind, f.UID = obj.APIVersion, obj.Kind, string(m.UID)
	if !m.CreationTimestamp.IsZero() {
		t := m.CreationTimestamp.Time
		f.Created = &t
	}
	var mismatch []string
	if m.Name != k.Name || m.Namespace != k.Namespace {
		mismatch = append(mismatch, fmt.Sprintf("key says %s but the object inside is %s", nsName(k.Namespace, k.Name), nsName(m.Namespace, m.Name)))
	}
	if kinds := kindsOf(resources); len(kinds) > 0 && !contains(kinds, obj.Kind) {
		mismatch = append(mismatch, fmt.Sprintf("stored under %s/ but the object is a %s, not a %s", k.Prefix, obj.Kind, strings.Join(kinds, " or ")))
	}
	var ask []Class
	if len(mismatch) > 0 && !f.Has(ClassKeyMismatch) {
		f.verdict(ClassKeyMismatch, WitnessEtcd, "value of "+f.Key+fmt.Sprintf(" at revision %d", s.rep.Revision), strings.Join(mismatch, "; "))
		ask = append(ask, ClassKeyMismatch)
	}
	s.uids.add(string(m.UID))
	if len(m.OwnerReferences) > 0 {
		s.noteOwners(f.Key, string(m.UID), m.OwnerReferences)
	}
	if m.DeletionTimestamp == nil {
		return ask
	}
	since := s.now.Sub(m.DeletionTimestamp.Time)
	if obj.Kind == "Namespace" && k.Prefix == "namespaces" {
		s.noteTerminatingNamespace(*f, kv.Value, since)
		return ask
	}
	if len(m.Finalizers) > 0 && since >= s.opts.TerminatingAfter {
		f.add(ClassStuckTerminating, fmt.Sprintf("deleted %s ago but finalizers [%s] remain; nothing has removed them", human(since), strings.Join(m.Finalizers, ", ")))
	}
	return ask
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
func (s *scan) finishNamespaces() error {
	for _, t := range s.terminatingNS {
		fins := append([]string{}, t.ns.Finalizers...)
		for _, sf := range t.ns.Spec.Finalizers {
			fins = append(fins, "spec:"+string(sf))
		}
		objects := 0
		for _, n := range s.perNS[t.ns.Name] {
			objects += n
		}
		s.rep.Terminating = append(s.rep.Terminating, TerminatingNamespace{Name: t.ns.Name, Since: t.since, Finalizers: fins, Objects: objects})
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
		reason := strings.Join(parts, "; ")
		if err := s.record(t.f, func(f *Finding) { f.add(ClassStuckTerminating, reason) }); err != nil {
			return err
		}
	}
	return nil
}

func scopeMismatch(r catalog.Resource, k Key) string {
	if r.Namespaced {
		return fmt.Sprintf("%s are namespaced but the key has no namespace", r.GroupResource())
	}
	return fmt.Sprintf("%s are cluster-scoped but the key has a namespace segment %q", r.GroupResource(), k.Namespace)
}

func scopeOf(r catalog.Resource) string {
	if r.Namespaced {
		return r.GroupResource() + " are namespaced"
	}
	return r.GroupResource() + " are cluster-scoped"
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
