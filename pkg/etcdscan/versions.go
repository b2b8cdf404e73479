package etcdscan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decode"
)

// StoredVersions is the census of one resource: how many objects are stored
// at each apiVersion (or, for values nobody here decrypted, with each
// encryption provider and key), against what its CRD lists.
type StoredVersions struct {
	Resource string `json:"resource"`
	// Stored counts objects by stored apiVersion, or by "encrypted <provider>/<key>".
	Stored map[string]int `json:"stored"`
	// CRDVersions are the CRD's spec.versions ("v2 (served, storage)").
	CRDVersions []string `json:"crdVersions,omitempty"`
	// CRDStoredVersions is the CRD's status.storedVersions.
	CRDStoredVersions []string `json:"crdStoredVersions,omitempty"`
	// Keys counts objects by encryption provider and key ("aescbc/key1",
	// "identity" for plaintext), KMS v2 values by plugin and the key ID
	// their envelope names ("kms v2/<plugin> (key ID 7)").
	Keys map[string]int `json:"keys,omitempty"`
	// Writer is the provider and key that write the resource, as the
	// encryption configuration names them, when it was given ("" otherwise).
	Writer string `json:"writer,omitempty"`
	// WriterKeyID is the key ID the KMS v2 plugin that writes said it
	// writes with; WriterKeyIDUnknown says why it is not known (the plugin
	// was not asked, or did not answer).
	WriterKeyID        string `json:"writerKeyID,omitempty"`
	WriterKeyIDUnknown string `json:"writerKeyIDUnknown,omitempty"`
}

// Writes says whether key (a name of Keys) writes the resource now:
// "true", "false", or "unknown": without the encryption configuration, for
// an envelope whose key ID does not read, and for a key ID (or the key IDs
// counted together) of the KMS v2 plugin that writes when the plugin did
// not say its own.
func (v StoredVersions) Writes(key string) string {
	plugin, id := Plugin(key), KeyIDOf(key)
	if p, ok := strings.CutSuffix(key, otherKeyIDs); ok {
		// The key IDs counted together: never the one the plugin says.
		plugin, id = p, otherKeyIDs
	}
	switch {
	case v.Writer == "" || id == UnreadableKeyID:
		return "unknown"
	case id != "" && plugin == v.Writer:
		if v.WriterKeyID == "" {
			return "unknown"
		}
		return fmt.Sprint(id == v.WriterKeyID)
	}
	return fmt.Sprint(key == v.Writer)
}

// keyIDAsker is what a decrypter that can ask a KMS v2 plugin its current
// key ID says (*decrypt.Decrypter).
type keyIDAsker interface {
	CurrentKeyID(ctx context.Context, plugin string) (string, error)
}

// writerOf is what a decrypter that knows its configuration's write key
// says (*decrypt.Decrypter).
type writerOf interface {
	Writer(gr schema.GroupResource) string
}

// KeyName names how a stored value is encrypted, as the encryption
// configuration names its providers: "aescbc/key1", "kms v2/<plugin>", or
// "identity" for plaintext.
func KeyName(enc *decode.Encryption) string {
	switch {
	case enc == nil:
		return "identity"
	case enc.Provider == "kms":
		return "kms " + enc.Version + "/" + enc.KeyName
	}
	return enc.Provider + "/" + enc.KeyName
}

// tallyKey counts one stored value by its encryption provider and key,
// and notes which one writes its resource.
func (s *scan) tallyKey(resource string, gr *schema.GroupResource, enc *decode.Encryption, value []byte) {
	if s.keyCensus == nil {
		s.keyCensus, s.writers = map[string]map[string]int{}, map[string]string{}
	}
	m := s.keyCensus[resource]
	if m == nil {
		m = map[string]int{}
		s.keyCensus[resource] = m
		if w, ok := s.opts.Decrypter.(writerOf); ok && gr != nil {
			s.writers[resource] = w.Writer(*gr)
		}
	}
	m[KeyNameOf(enc, value)]++
}

// writerKeyIDs asks each KMS v2 plugin that writes a resource holding
// values of that plugin its key ID, once a scan, and names the writer
// with it; a plugin that does not answer leaves its key IDs unjudged,
// with why.
func (s *scan) writerKeyIDs(ctx context.Context, v *StoredVersions) {
	if v.Writer == "" || !strings.HasPrefix(v.Writer, "kms v2/") {
		return
	}
	held := false
	for k := range v.Keys {
		held = held || (Plugin(k) == v.Writer && KeyIDOf(k) != "")
	}
	if !held {
		return
	}
	asker, can := s.opts.Decrypter.(keyIDAsker)
	if !s.opts.KMSKeyIDs || !can {
		v.WriterKeyIDUnknown = "the KMS plugin was not asked (versions and serve ask it, on a live etcd)"
		return
	}
	if s.keyIDs == nil {
		s.keyIDs = map[string]keyIDAnswer{}
	}
	a, ok := s.keyIDs[v.Writer]
	if !ok {
		a.id, a.err = asker.CurrentKeyID(ctx, v.Writer)
		s.keyIDs[v.Writer] = a
	}
	if a.err != nil {
		v.WriterKeyIDUnknown = a.err.Error()
		return
	}
	v.WriterKeyID = a.id
}

// keyIDsCheck says whether every KMS v2 plugin asked its key ID answered
// (ok false when none was asked): a plugin that did not leaves its key
// IDs "unknown", and the old-key alert blind to a rotation inside it.
func (s *scan) keyIDsCheck() (Check, bool) {
	if len(s.keyIDs) == 0 {
		return Check{}, false
	}
	c := Check{Name: "kms key IDs", Done: true}
	var notes []string
	for _, plugin := range slices.Sorted(maps.Keys(s.keyIDs)) {
		if a := s.keyIDs[plugin]; a.err != nil {
			c.Done = false
			notes = append(notes, fmt.Sprintf("%s did not say its key ID (%v): which of its key IDs writes is not known", plugin, a.err))
		} else {
			notes = append(notes, fmt.Sprintf("%s writes with key ID %s", plugin, a.id))
		}
	}
	c.Note = strings.Join(notes, "; ")
	return c, true
}

// keyIDAnswer is what a KMS v2 plugin said its key ID is.
type keyIDAnswer struct {
	id  string
	err error
}

// tally counts one stored object for the census.
func (s *scan) tally(resource, at string) {
	if s.census == nil {
		s.census = map[string]map[string]int{}
	}
	m := s.census[resource]
	if m == nil {
		m = map[string]int{}
		s.census[resource] = m
	}
	m[at]++
}

// checkStoredVersion reports an object stored at a version that cannot be
// read (or will not be once the CRD drops it), with the fix.
func (s *scan) checkStoredVersion(f *Finding, prefix, apiVersion, kind string) {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return
	}
	if c, ok := s.types.CRDs[prefix]; ok {
		if c.Object != nil && c.Object.Spec.Group == gv.Group {
			if reason := crdVersionProblem(c.Object, gv.Version, f.Resource); reason != "" {
				f.add(ClassStoredVersion, reason)
			}
		}
		return
	}
	// Only kube-apiserver's own groups are judged by this release's scheme,
	// and not when the API server is another release than it, nor when it
	// serves the stored version (it reads it then).
	if !catalog.IsBuiltinGroup(gv.Group) || s.serverRelease() != "" || s.servesVersion(prefix, gv) {
		return
	}
	if !decode.Recognizes(apiVersion, kind) {
		who := "the API server cannot read it"
		if s.opts.Served == nil {
			who = "unsure: the API server was not asked; kube-apiserver " + catalog.ReleaseVersion() + " and newer cannot read it, an older release that still has it can"
		}
		f.add(ClassStoredVersion, fmt.Sprintf("stored as %s %s, a version kube-apiserver %s cannot decode: %s. Fix: with a kube-apiserver release that still decodes %s, `regghost migrate %s --confirm` writes it back at that release's storage version (`--target-release` says beforehand whether the release after it reads that), or take it from an older backup",
			apiVersion, kind, catalog.ReleaseVersion(), who, apiVersion, f.Resource))
	}
}

// crdVersionProblem says what is wrong with storing at version v of crd.
func crdVersionProblem(crd *apiextensionsv1.CustomResourceDefinition, v, resource string) string {
	storage := ""
	var listed *apiextensionsv1.CustomResourceDefinitionVersion
	for i, x := range crd.Spec.Versions {
		if x.Storage {
			storage = x.Name
		}
		if x.Name == v {
			listed = &crd.Spec.Versions[i]
		}
	}
	migrate := fmt.Sprintf("migrate every object to %s (`regghost migrate %s --confirm` rewrites them through the API server and counts again from etcd)", storage, resource)
	stored := false
	for _, x := range crd.Status.StoredVersions {
		stored = stored || x == v
	}
	switch {
	case listed == nil:
		return fmt.Sprintf("stored at %s/%s, a version CustomResourceDefinition %s no longer lists (spec.versions: %s; status.storedVersions: [%s]): the API server cannot read it and every list of %s fails. Fix: `regghost migrate %s --confirm` lists %s again (served: false, storage: false) for the run, rewrites every object to %s through the API server, and removes %s again",
			crd.Spec.Group, v, crd.Name, strings.Join(crdVersions(crd), ", "), strings.Join(crd.Status.StoredVersions, ", "), resource, resource, v, storageOf(crd), v)
	case !listed.Served:
		return fmt.Sprintf("stored at %s/%s, which CustomResourceDefinition %s lists but no longer serves: it is still read, but before %s is removed, %s",
			crd.Spec.Group, v, crd.Name, v, migrate)
	case !stored:
		return fmt.Sprintf("stored at %s/%s, which is missing from CustomResourceDefinition %s's status.storedVersions [%s]: removing %s from spec.versions would make it unreadable. Fix: %s, or put %s back into status.storedVersions",
			crd.Spec.Group, v, crd.Name, strings.Join(crd.Status.StoredVersions, ", "), v, migrate, v)
	}
	return ""
}

// storageOf is crd's storage version.
func storageOf(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, x := range crd.Spec.Versions {
		if x.Storage {
			return x.Name
		}
	}
	return ""
}

func crdVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	var out []string
	for _, x := range crd.Spec.Versions {
		var flags []string
		if x.Served {
			flags = append(flags, "served")
		}
		if x.Storage {
			flags = append(flags, "storage")
		}
		out = append(out, fmt.Sprintf("%s (%s)", x.Name, strings.Join(flags, ", ")))
	}
	return out
}

// finishVersions turns the tally into the report's census.
func (s *scan) finishVersions(ctx context.Context) {
	resources := map[string]bool{}
	for r := range s.census {
		resources[r] = true
	}
	for r := range s.keyCensus {
		resources[r] = true
	}
	for resource := range resources {
		stored := s.census[resource]
		if stored == nil {
			stored = map[string]int{}
		}
		v := StoredVersions{Resource: resource, Stored: stored, Keys: s.keyCensus[resource], Writer: s.writers[resource]}
		s.writerKeyIDs(ctx, &v)
		for _, c := range s.types.CRDs {
			if c.Object != nil && c.Resource().GroupResource() == resource {
				v.CRDVersions = crdVersions(c.Object)
				v.CRDStoredVersions = c.Object.Status.StoredVersions
			}
		}
		s.rep.Versions = append(s.rep.Versions, v)
	}
	sort.Slice(s.rep.Versions, func(i, j int) bool { return s.rep.Versions[i].Resource < s.rep.Versions[j].Resource })
}
