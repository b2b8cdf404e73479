package repair

import (
	"context"
	"fmt"
	"slices"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/etcdwrite"
	"github.com/regghost/regghost/pkg/objread"
)

const (
	crdsPrefix        = "apiextensions.k8s.io/customresourcedefinitions/"
	apiServicesPrefix = "apiregistration.k8s.io/apiservices/"
	servicesPrefix    = "services/specs/"
)

// restoreChecks judge what a key's bytes need besides the keys it rests on
// (witnessGuard), where another command proved something gone that the
// bytes still name:
//
//   - a custom resource is written back only at a version its
//     CustomResourceDefinition's spec.versions still lists: migrate
//     (--prune-stored-versions) moves every object off a version before it
//     leaves the CRD, and an object written back at a version no longer
//     listed makes every list of the resource fail ("request to convert CR
//     from an invalid group/version"). A CRD that is gone now (the purge of
//     ghosts whose CRD was deleted) is judged as before, by the witnesses
//     alone: there is no spec.versions to judge against.
//   - an APIService is written back only while the Service it calls
//     (spec.service) exists, or comes back with it in this restore: an
//     APIService whose Service is gone is the dangling APIService unstick
//     deletes (discovery of its group fails, every namespace deletion in the
//     cluster hangs and the garbage collector stalls).
//
// A key that would break them is Refused in the plan with its way out; the
// keys written compare, in their transaction, what they were judged on: the
// CRD at the mod revision read, the Service present (on kine, read just
// before instead).
type restoreChecks struct {
	b      *backup.Backup
	prefix string
	reader ContentReader
	guard  *witnessGuard
	// todo are the keys this restore writes, by key, to their entry.
	todo map[string]int
	// crds are the CRDs read, by key (nil: gone and not brought back).
	crds map[string]*crdRead
	// pins are, per entry, what its transaction compares besides its
	// witnesses.
	pins map[int][]pin
	// tried are the keys whose transaction returned without writing them.
	tried map[string]bool
}

// crdRead is one CustomResourceDefinition as restore judged it.
type crdRead struct {
	name string
	crd  *apiextensionsv1.CustomResourceDefinition
	// modRev is its mod revision in etcd; 0 when it is judged from this
	// backup's bytes (this restore writes it back, first).
	modRev int64
	// why says why it could not be read ("" when it was).
	why string
	// live is the CRD etcd holds now when crd is judged from this backup's
	// bytes (nil: none, or not readable): the write of the CRD may fail
	// (changed since), so an object is written back only at a version both
	// list.
	live *apiextensionsv1.CustomResourceDefinition
}

// pin is a compare a write makes on a key it was judged on.
type pin struct {
	key  string
	what string
	// modRev, when set, is the mod revision key must still have (a CRD).
	// Otherwise key must exist (a Service): written by this restore, at
	// the revision it was written, else at any.
	modRev int64
	// ours says this restore creates key itself (absent when judged).
	ours bool
}

// newRestoreChecks judges the entries in todo, marks those refused in
// results (and notes the others' doubts in their Detail), and returns the
// checks and the entries left to write.
func newRestoreChecks(ctx context.Context, kv clientv3.KV, b *backup.Backup, o RestoreOptions, guard *witnessGuard, todo []int, results []etcdwrite.Result) (*restoreChecks, []int, error) {
	c := &restoreChecks{b: b, prefix: guard.prefix, reader: o.Reader, guard: guard, todo: map[string]int{},
		crds: map[string]*crdRead{}, pins: map[int][]pin{}, tried: map[string]bool{}}
	if c.prefix == "" {
		// Keys cannot be told apart without their registry prefix; the
		// witnesses are not worked out either.
		return c, todo, nil
	}
	for _, i := range todo {
		c.todo[b.Entries[i].Key] = i
	}
	var kept []int
	for _, i := range todo {
		refusal, note, err := c.version(ctx, kv, i)
		if err != nil {
			return nil, nil, err
		}
		if refusal != "" {
			results[i] = etcdwrite.Result{Key: b.Entries[i].Key, Outcome: etcdwrite.Refused, Detail: refusal}
			delete(c.todo, b.Entries[i].Key)
			delete(c.pins, i)
			continue
		}
		addNote(&results[i], note)
		kept = append(kept, i)
	}
	todo, kept = kept, nil
	for _, i := range todo {
		refusal, note, err := c.service(ctx, kv, i)
		if err != nil {
			return nil, nil, err
		}
		if refusal != "" {
			results[i] = etcdwrite.Result{Key: b.Entries[i].Key, Outcome: etcdwrite.Refused, Detail: refusal}
			delete(c.pins, i)
			continue
		}
		addNote(&results[i], note)
		kept = append(kept, i)
	}
	return c, kept, nil
}

// addNote appends s to r's detail.
func addNote(r *etcdwrite.Result, s string) {
	if s != "" {
		r.Detail = strings.TrimPrefix(r.Detail+"; ", "; ") + s
	}
}

// version judges entry i when it is a custom resource whose CRD exists (or
// comes back with it): refused when the version it is stored at is not in
// the CRD's spec.versions, or when the CRD cannot be read; noted when its
// stored version cannot be read, or when status.storedVersions no longer
// lists it.
func (c *restoreChecks) version(ctx context.Context, kv clientv3.KV, i int) (refusal, note string, err error) {
	e := c.b.Entries[i]
	k, perr := etcdscan.ParseKey(c.prefix, e.Key)
	if perr != nil {
		return "", "", nil
	}
	group, dotted := catalog.GroupOfPrefix(k.Prefix)
	if !dotted || catalog.IsBuiltinGroup(group) {
		return "", "", nil
	}
	resource := k.Prefix[len(group)+1:]
	crdKey := c.prefix + crdsPrefix + resource + "." + group
	cr, err := c.crd(ctx, kv, crdKey)
	if err != nil || cr == nil {
		return "", "", err
	}
	if cr.why != "" {
		return fmt.Sprintf("CustomResourceDefinition %s cannot be read here (%s): whether its spec.versions still lists the version this key is stored at is not known, and written back at a version it no longer lists, every list of %s fails; it stays in the backup: give %s (the EncryptionConfiguration that reads the CRD), then restore again",
			cr.name, cr.why, resource, "--encryption-provider-config"), "", nil
	}
	if cr.modRev != 0 {
		c.pins[i] = append(c.pins[i], pin{key: crdKey, what: "CustomResourceDefinition " + cr.name, modRev: cr.modRev})
	}
	listed := listedVersions(cr.crd)
	apiVersion, why := c.storedAs(ctx, e, schema.GroupResource{Group: group, Resource: resource})
	if why != "" {
		return "", fmt.Sprintf("its stored version cannot be read here (%s): if CustomResourceDefinition %s no longer lists it (it lists %s), every list of %s fails once it is written back; `kubectl get %s -A` right after the restore shows whether they still list",
			why, cr.name, strings.Join(listed, ", "), resource, resource), nil
	}
	gv, perr := schema.ParseGroupVersion(apiVersion)
	if perr != nil {
		return "", fmt.Sprintf("its apiVersion %q does not parse (%v): whether CustomResourceDefinition %s lists it is not known", apiVersion, perr, cr.name), nil
	}
	if cr.live != nil && !slices.Contains(listedVersions(cr.live), gv.Version) {
		return fmt.Sprintf("stored at %s, which CustomResourceDefinition %s as etcd holds it now does not list in spec.versions (it lists %s): this restore writes the CRD back from the backup first, but that write is refused if the CRD changed since, and the object would be stranded; it stays in the backup: list %s in the CRD again (served: false), restore again, then run `regghost migrate %s --confirm`",
			apiVersion, cr.name, strings.Join(listedVersions(cr.live), ", "), gv.Version, cr.name), "", nil
	}
	if !slices.Contains(listed, gv.Version) {
		return fmt.Sprintf("stored at %s, which CustomResourceDefinition %s no longer lists in spec.versions (it lists %s): written back, it makes every list of %s fail (request to convert CR from an invalid group/version); it stays in the backup: list %s in the CRD's spec.versions again (served: false), restore again, then run `regghost migrate %s --confirm` to move it to the storage version; or leave it",
			apiVersion, cr.name, strings.Join(listed, ", "), resource, gv.Version, cr.name), "", nil
	}
	if sv := cr.crd.Status.StoredVersions; len(sv) > 0 && !slices.Contains(sv, gv.Version) {
		return "", fmt.Sprintf("stored at %s, which status.storedVersions of CustomResourceDefinition %s no longer lists ([%s]: migrate proved nothing stored there): written back, %s holds it again unrecorded, and dropping %s from spec.versions would strand it; run `regghost migrate %s --confirm` after the restore",
			apiVersion, cr.name, strings.Join(sv, ", "), resource, gv.Version, cr.name), nil
	}
	return "", "", nil
}

// listedVersions are the versions a CRD's spec.versions lists.
func listedVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, v := range crd.Spec.Versions {
		out = append(out, v.Name)
	}
	return out
}

// crd reads the CustomResourceDefinition stored under key, once: from this
// backup when this restore writes it back, else from etcd. It is nil when
// it is gone and not brought back.
func (c *restoreChecks) crd(ctx context.Context, kv clientv3.KV, key string) (*crdRead, error) {
	if cr, ok := c.crds[key]; ok {
		return cr, nil
	}
	cr := &crdRead{name: strings.TrimPrefix(key, c.prefix+crdsPrefix)}
	var value []byte
	if j, ok := c.todo[key]; ok {
		value = c.b.Entries[j].Value
		resp, err := kv.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read CustomResourceDefinition %s: %w", cr.name, err)
		}
		if len(resp.Kvs) > 0 {
			cr.live, _ = c.readCRD(ctx, key, resp.Kvs[0].Value)
		}
	} else {
		resp, err := kv.Get(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("read CustomResourceDefinition %s: %w", cr.name, err)
		}
		if len(resp.Kvs) == 0 {
			c.crds[key] = nil
			return nil, nil
		}
		value, cr.modRev = resp.Kvs[0].Value, resp.Kvs[0].ModRevision
	}
	cr.crd, cr.why = c.readCRD(ctx, key, value)
	c.crds[key] = cr
	return cr, nil
}

// readCRD decodes a stored CRD, through the reader when it does not decode
// as stored (encrypted at rest); why says why it could not be read.
func (c *restoreChecks) readCRD(ctx context.Context, key string, value []byte) (*apiextensionsv1.CustomResourceDefinition, string) {
	crd, err := decode.CRD(value)
	if err == nil {
		return crd, ""
	}
	if c.reader == nil {
		return nil, firstLineOf(err)
	}
	obj, rerr := c.reader.Read(ctx, key, value)
	if rerr != nil {
		return nil, firstLineOf(rerr)
	}
	crd = &apiextensionsv1.CustomResourceDefinition{}
	if err := convertTo(obj, crd); err != nil {
		return nil, firstLineOf(err)
	}
	return crd, ""
}

// storedAs is the apiVersion entry e's value is stored at, decrypting it
// with the configuration the reader holds when it is encrypted at rest
// (the API server cannot say: it converts to the version asked, and the key
// is absent); why says why it could not be read.
func (c *restoreChecks) storedAs(ctx context.Context, e backup.Entry, gr schema.GroupResource) (apiVersion, why string) {
	meta, err := decode.Meta(e.Value)
	if err == nil && meta.Encryption == nil {
		return meta.APIVersion, ""
	}
	if err != nil {
		return "", firstLineOf(err)
	}
	r, ok := c.reader.(*objread.Reader)
	if !ok || r.Decrypter == nil {
		return "", "encrypted at rest (" + meta.Encryption.String() + ") and no --encryption-provider-config"
	}
	plain, err := r.Decrypter.Decrypt(ctx, e.Key, gr, e.Value)
	if err != nil {
		return "", firstLineOf(err)
	}
	if meta, err = decode.Meta(plain); err != nil {
		return "", "decrypted: " + firstLineOf(err)
	}
	return meta.APIVersion, ""
}

// service judges entry i when it is an APIService calling a Service:
// refused when that Service is neither in etcd nor brought back by this
// restore.
func (c *restoreChecks) service(ctx context.Context, kv clientv3.KV, i int) (refusal, note string, err error) {
	e := c.b.Entries[i]
	name, ok := strings.CutPrefix(e.Key, c.prefix+apiServicesPrefix)
	if !ok || strings.Contains(name, "/") {
		return "", "", nil
	}
	svc, why := c.readAPIService(ctx, e)
	if why != "" {
		return "", fmt.Sprintf("its spec.service cannot be read here (%s): whether the Service it calls exists is not known; without it, discovery of its group fails and every namespace deletion hangs", why), nil
	}
	if svc.Spec.Service == nil || svc.Spec.Service.Name == "" {
		return "", "", nil // served by kube-apiserver itself
	}
	ns, sname := svc.Spec.Service.Namespace, svc.Spec.Service.Name
	svcKey := c.prefix + servicesPrefix + ns + "/" + sname
	what := "service " + ns + "/" + sname
	resp, err := kv.Get(ctx, svcKey)
	if err != nil {
		return "", "", fmt.Errorf("read %s: %w", svcKey, err)
	}
	if len(resp.Kvs) > 0 {
		// There (this restore may put its backed-up bytes back over it).
		c.pins[i] = append(c.pins[i], pin{key: svcKey, what: what})
		ready, known, err := readyEndpoints(ctx, kv, c.prefix, ns, sname)
		if err != nil {
			return "", "", err
		}
		if known && !ready {
			gv := svc.Spec.Group + "/" + svc.Spec.Version
			return "", fmt.Sprintf("%s has no ready endpoint now: written back, the APIService is unavailable until its backend answers, and while it is, discovery of %s fails and every namespace deletion hangs again; bring its backend up first (kubectl get endpointslices -n %s -l kubernetes.io/service-name=%s)",
				what, gv, ns, sname), nil
		}
		return "", "", nil
	}
	if _, ours := c.todo[svcKey]; ours {
		c.pins[i] = append(c.pins[i], pin{key: svcKey, what: what, ours: true})
		return "", what + ", which it calls, comes back with it (written first)", nil
	}
	gv := svc.Spec.Group + "/" + svc.Spec.Version
	return fmt.Sprintf("APIService %s calls %s, which is gone (no %s) and not brought back by this backup: written back, it is unavailable, discovery of %s fails, every namespace deletion in the cluster hangs (NamespaceDeletionDiscoveryFailure) and the garbage collector stalls; it stays in the backup: bring %s back (the release that serves %s), then restore again",
		name, what, svcKey, gv, what, gv), "", nil
}

// readAPIService decodes entry e's APIService, through the reader when it
// does not decode as stored; why says why it could not be read.
func (c *restoreChecks) readAPIService(ctx context.Context, e backup.Entry) (*apiregistrationv1.APIService, string) {
	svc, err := decode.APIService(e.Value)
	if err == nil {
		return svc, ""
	}
	if c.reader == nil {
		return nil, firstLineOf(err)
	}
	obj, rerr := c.reader.Read(ctx, e.Key, e.Value)
	if rerr != nil {
		return nil, firstLineOf(rerr)
	}
	svc = &apiregistrationv1.APIService{}
	if err := convertTo(obj, svc); err != nil {
		return nil, firstLineOf(err)
	}
	return svc, ""
}

// convertTo fills out (a typed object) from obj, typed or unstructured.
func convertTo(obj runtime.Object, out runtime.Object) error {
	var content map[string]any
	if u, ok := obj.(runtime.Unstructured); ok {
		content = u.UnstructuredContent()
	} else {
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return fmt.Errorf("convert %T: %w", obj, err)
		}
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(content, out); err != nil {
		return fmt.Errorf("convert to %T: %w", out, err)
	}
	return nil
}

func firstLineOf(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	return s
}

// last orders todo so that APIServices come after every other key: the
// Service one calls is written before it.
func (c *restoreChecks) last(todo []int) []int {
	out := make([]int, 0, len(todo))
	for _, apiService := range []bool{false, true} {
		for _, i := range todo {
			if strings.HasPrefix(c.b.Entries[i].Key, c.prefix+apiServicesPrefix) == apiService {
				out = append(out, i)
			}
		}
	}
	return out
}

// cmps are entry i's compares besides its witnesses': its CRD at the mod
// revision it was judged at; the Service it calls at the revision this
// restore wrote it, still absent when this transaction writes it first,
// else present.
func (c *restoreChecks) cmps(i int) []clientv3.Cmp {
	var out []clientv3.Cmp
	for _, p := range c.pins[i] {
		switch rev, wrote := c.guard.wrote[p.key]; {
		case p.modRev != 0:
			out = append(out, clientv3.Compare(clientv3.ModRevision(p.key), "=", p.modRev))
		case p.ours && wrote:
			out = append(out, clientv3.Compare(clientv3.CreateRevision(p.key), "=", rev))
		case p.ours && !c.tried[p.key]:
			// Not written yet: it is in this transaction, before i.
			out = append(out, clientv3.Compare(clientv3.CreateRevision(p.key), "=", 0))
		default:
			out = append(out, clientv3.Compare(clientv3.CreateRevision(p.key), ">", 0))
		}
	}
	return out
}

// done records that entry i's transaction returned, written or not.
func (c *restoreChecks) done(i int, ok bool) {
	if !ok {
		c.tried[c.b.Entries[i].Key] = true
	}
}

// changed reads again what entry i was judged on and says what changed
// since, or "" when nothing did.
func (c *restoreChecks) changed(ctx context.Context, kv clientv3.KV, i int) (string, error) {
	for _, p := range c.pins[i] {
		resp, err := kv.Get(ctx, p.key)
		if err != nil {
			return "", fmt.Errorf("read %s: %w", p.key, err)
		}
		switch {
		case p.modRev != 0 && (len(resp.Kvs) == 0 || resp.Kvs[0].ModRevision != p.modRev):
			now := "was deleted during the restore"
			if len(resp.Kvs) > 0 {
				now = fmt.Sprintf("was changed during the restore (mod revision %d; %d when judged)", resp.Kvs[0].ModRevision, p.modRev)
			}
			return fmt.Sprintf("%s %s: whether it lists the version this key is stored at is judged anew; left alone: run restore again", p.what, now), nil
		case p.modRev == 0 && len(resp.Kvs) == 0:
			return fmt.Sprintf("%s, which this APIService calls, is absent at its write (deleted during the restore, or not written back): left alone: run restore again to judge it anew", p.what), nil
		}
	}
	return "", nil
}

// readyEndpoints reports whether an EndpointSlice of service ns/name that
// etcd holds lists a ready endpoint; known is false when none of them
// decodes (encrypted at rest) or none is there to say.
func readyEndpoints(ctx context.Context, kv clientv3.KV, prefix, ns, name string) (ready, known bool, err error) {
	key := prefix + "endpointslices/" + ns + "/"
	resp, err := kv.Get(ctx, key, clientv3.WithPrefix())
	if err != nil {
		return false, false, fmt.Errorf("read %s: %w", key, err)
	}
	for _, item := range resp.Kvs {
		obj, _, derr := decode.Typed(item.Value)
		slice, ok := obj.(*discoveryv1.EndpointSlice)
		if derr != nil || !ok || slice.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		known = true
		for _, e := range slice.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				return true, true, nil
			}
		}
	}
	return false, known, nil
}
