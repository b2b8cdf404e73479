package migrate

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/plural"
)

// Options say how Run goes.
type Options struct {
	Dynamic dynamic.Interface
	// Again takes the census again at etcd's current revision (resolving
	// the resource again: its CRD may have changed).
	Again func(ctx context.Context) (*Census, error)
	// History reads the old revisions for the key verdicts (nil: not read).
	History func(ctx context.Context, c *Census) (*History, error)
	// PruneStoredVersions narrows status.storedVersions once the proof
	// allows it.
	PruneStoredVersions bool
	Rewrite             RewriteOptions
	// ReadableWait bounds the wait for the API server to read a version put
	// back into its CRD.
	ReadableWait time.Duration
	// Readers reach every kube-apiserver of the cluster: a version put back
	// into the CRD is waited for on each, since any of them may take a
	// rewrite (nil: Dynamic alone).
	Readers []Reader
	// BackupRoot is where regghost's backups are, read for values under
	// keys that no longer write ("": not read).
	BackupRoot string
	// Protect runs a custom resource's migration as the protected write
	// (nil: unprotected, for tests of the steps alone).
	Protect *Protection
	// AskServers lists and asks every kube-apiserver again, right before
	// status.storedVersions is narrowed (nil: the plan's Target.Servers).
	AskServers func(ctx context.Context) *Servers
}

// Reader is one kube-apiserver, by its address.
type Reader struct {
	Address string
	Dynamic dynamic.Interface
}

// Result is what Run did, step by step, and the proof.
type Result struct {
	// ListedAgain are stranded versions put back into the CRD for the run.
	ListedAgain []string `json:"listedAgain,omitempty"`
	// Rewrite is the rewrite through the API server.
	Rewrite *RewriteResult `json:"rewrite"`
	// Proof is the census taken again after the rewrite.
	Proof *Census `json:"proof,omitempty"`
	// StoredVersions is the narrowing the proof allows (nil for built-ins);
	// Pruned says it was written.
	StoredVersions *StoredVersionsChange `json:"storedVersions,omitempty"`
	Pruned         bool                  `json:"pruned"`
	// Unlisted are the stranded versions removed again.
	Unlisted []string `json:"unlisted,omitempty"`
	// Keys are the verdicts on the providers and keys no longer writing.
	Keys []KeyVerdict `json:"keys,omitempty"`
	// Backups are regghost's backups on this node that still need a key
	// that no longer writes, or hold the resource at a version other than
	// the storage version, and those that could not be read;
	// BackupsUnread says why none was read.
	Backups       Backups `json:"backups"`
	BackupsUnread string  `json:"backupsUnread,omitempty"`
	// Dir and Backup are the backup of the CustomResourceDefinition taken
	// before the run, with the audit log of its edits.
	Dir    string `json:"dir,omitempty"`
	Backup string `json:"backup,omitempty"`
	// edited records an edit of the CRD (the revision it left it at);
	// moved records that someone else changed it since (restore then
	// leaves it alone). crdRev is the revision regghost last left it at.
	edited func(rev int64, what string)
	moved  func(detail string)
	crdRev int64
}

// unmoved refuses an edit of the CRD when someone else changed it since
// regghost last left it (the plan's revision, or regghost's own last
// edit): each edit is preconditioned on the CRD as regghost left it, so a
// restore of the backup never puts back a CRD over another writer's change.
func (res *Result) unmoved(c *Census, step string) error {
	if res.crdRev == 0 || c.Target.CRDRevision == res.crdRev {
		return nil
	}
	detail := fmt.Sprintf("changed by someone else at revision %d, after regghost left it at revision %d", c.Target.CRDRevision, res.crdRev)
	if res.moved != nil {
		res.moved(detail)
	}
	return fmt.Errorf("refused to %s: CustomResourceDefinition %s was %s; it is not edited further, and its backup is not restored over that change", step, c.Target.CRD.Name, detail)
}

// interrupted reports whether stop was closed.
func interrupted(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// Rotated reports whether a key other than the one that writes holds
// values of the resource, live (in c) or in old revisions (h).
func Rotated(c *Census, h *History) bool {
	for k, n := range c.ByKey {
		if k != c.Writer && n > 0 {
			return true
		}
	}
	return h != nil && len(h.ByKey) > 0
}

// Run moves what plan names: stranded versions are listed again in the CRD
// first, the objects are rewritten, the census is taken again (the proof);
// only when the proof shows nothing left at an old version are
// status.storedVersions narrowed (when asked) and the versions listed again
// removed. It stops at the first step that fails and says which.
func Run(ctx context.Context, plan *Census, o Options) (*Result, error) {
	if err := Servable(plan); err != nil {
		return &Result{}, err
	}
	if o.Protect != nil && plan.Target.CRD != nil {
		return o.Protect.run(ctx, plan, o)
	}
	return run(ctx, plan, o, &Result{edited: func(int64, string) {}})
}

// backupOf names the run's backup for a way out ("BACKUP" when unknown).
func backupOf(res *Result) string {
	if res.Dir != "" {
		return res.Dir
	}
	return "BACKUP"
}

// Servable refuses a plan with objects to rewrite whose CRD serves no
// version: every read through the API server would answer 404 and each
// object would look deleted since the count.
func Servable(plan *Census) error {
	if t := plan.Target; t.NotServed && len(plan.Rewrite) > 0 {
		return fmt.Errorf("refused: CustomResourceDefinition %s serves no version (its storage version %s is served: false), so the API server can neither read nor write its objects; serve a version, then run again; nothing was changed", t.CRD.Name, t.Version)
	}
	return nil
}

// run is Run's steps; res.edited is told of each edit of the CRD.
func run(ctx context.Context, plan *Census, o Options, res *Result) (*Result, error) {
	if interrupted(o.Rewrite.Stop) {
		return res, fmt.Errorf("interrupted before the first step; nothing was changed")
	}
	if o.Rewrite.Dynamic == nil {
		o.Rewrite.Dynamic = o.Dynamic
	}
	cur := plan
	if stranded := Stranded(plan); len(stranded) > 0 {
		rev, err := ListAgain(ctx, o.Dynamic, plan, stranded)
		if err != nil {
			return res, fmt.Errorf("put %v back into CustomResourceDefinition %s: %w", stranded, plan.Target.CRD.Name, err)
		}
		res.edited(rev, "listed "+strings.Join(stranded, ", ")+" again in spec.versions")
		res.crdRev = rev
		res.ListedAgain = stranded
		again, err := o.Again(ctx)
		if err != nil {
			return res, err
		}
		for _, obj := range again.Rewrite {
			if gv, err := schema.ParseGroupVersion(obj.StoredAs); err != nil || !slices.Contains(stranded, gv.Version) {
				continue
			}
			readers := o.Readers
			if len(readers) == 0 {
				readers = []Reader{{Dynamic: o.Dynamic}}
			}
			for _, r := range readers {
				if err := WaitReadable(ctx, r.Dynamic, again, obj, o.ReadableWait); err != nil {
					if r.Address != "" {
						err = fmt.Errorf("kube-apiserver %s: %w", r.Address, err)
					}
					return res, fmt.Errorf("%w; %s stays listed in CustomResourceDefinition %s (served: false) and no object was rewritten: once every kube-apiserver reads it, `regghost migrate %s --confirm --prune-stored-versions` rewrites the objects and narrows status.storedVersions, after which %s may leave spec.versions (kubectl edit crd %s); or `regghost restore %s` puts the CRD back as it was",
						err, strings.Join(stranded, ", "), plan.Target.CRD.Name, plan.Resource, strings.Join(stranded, ", "), plan.Target.CRD.Name, backupOf(res))
				}
			}
			break
		}
		cur = onlyPlanned(again, plan)
	}
	res.Rewrite = Rewrite(ctx, cur, o.Rewrite)
	if res.Rewrite.Stopped != "" {
		return res, nil
	}
	proof, err := o.Again(ctx)
	if err != nil {
		return res, fmt.Errorf("count again from etcd: %w", err)
	}
	res.Proof = proof
	if plan.WriterKeyID != "" && proof.WriterKeyID == "" {
		// Counted by plugin alone, every value would look in place.
		return res, fmt.Errorf("the KMS plugin did not say its key ID when counted again (%s): the key IDs are not proven; run again once it answers", proof.KeyIDUnread)
	}
	if err := res.finish(ctx, plan, o); err != nil {
		return res, err
	}
	return res, nil
}

// finish narrows status.storedVersions and unlists the stranded versions
// when the proof allows, and judges the old keys.
func (res *Result) finish(ctx context.Context, plan *Census, o Options) error {
	if err := res.narrow(ctx, plan, o); err != nil {
		return err
	}
	proof := res.Proof
	var h *History
	if o.History != nil && proof.Writer != "" {
		var herr error
		h, herr = o.History(ctx, proof)
		res.Keys = Verdicts(plan, proof, h, herr)
	}
	// Backups are judged against the CRD as the run left it: without the
	// versions it listed again and removed.
	judged := *proof
	if len(res.Unlisted) > 0 {
		judged.Target.CRD = plan.Target.CRD
	}
	var err error
	if res.Backups, err = ReadBackups(ctx, o.BackupRoot, &judged, Rotated(plan, h), nil); err != nil {
		res.BackupsUnread = err.Error()
	}
	return nil
}

// narrow narrows status.storedVersions and unlists the stranded versions,
// when the proof allows and the run was not interrupted.
func (res *Result) narrow(ctx context.Context, plan *Census, o Options) error {
	proof := res.Proof
	if proof.Target.CRD == nil {
		return nil
	}
	ch, err := StoredVersionsProven(proof)
	if err != nil {
		if o.PruneStoredVersions && proof.Left() == 0 {
			return fmt.Errorf("status.storedVersions of CustomResourceDefinition %s was not narrowed: %w", proof.Target.CRD.Name, err)
		}
		return nil // the proof names what is left; nothing is narrowed
	}
	res.StoredVersions = &ch
	if proof.Left() > 0 {
		return nil
	}
	if proof.Target.CRD.UID != plan.Target.CRD.UID {
		return fmt.Errorf("refused: CustomResourceDefinition %s was deleted and created again since the plan was shown (uid %s, was %s); its status.storedVersions and spec.versions were not changed: run again",
			plan.Target.CRD.Name, proof.Target.CRD.UID, plan.Target.CRD.UID)
	}
	if shown, err := StoredVersionsProven(plan.IfMoved()); Narrows(plan, o.PruneStoredVersions) && ch.Needed() &&
		(err != nil || !slices.Equal(shown.From, ch.From) || !slices.Equal(shown.To, ch.To)) {
		return fmt.Errorf("refused: status.storedVersions of CustomResourceDefinition %s would go from [%s] to [%s], not as the plan showed ([%s] to [%s]); nothing was narrowed: run again",
			ch.CRD, strings.Join(ch.From, ", "), strings.Join(ch.To, ", "), strings.Join(shown.From, ", "), strings.Join(shown.To, ", "))
	}
	if Narrows(plan, o.PruneStoredVersions) && ch.Needed() {
		if interrupted(o.Rewrite.Stop) {
			return fmt.Errorf("interrupted: status.storedVersions was not narrowed")
		}
		if err := res.unmoved(proof, "narrow status.storedVersions"); err != nil {
			return err
		}
		// Every kube-apiserver must store at the storage version now: one
		// whose CRD cache still has the old one writes it after the count.
		// They are listed again (one may have joined during the run) and
		// asked, then etcd is counted once more: a write of an old version
		// between the count and their answers shows there.
		servers := plan.Target.Servers
		if o.AskServers != nil {
			servers = o.AskServers(ctx)
		}
		if err := servers.StoreAt(ctx, plan.Target.Resource, plan.Target.Version, plan.Target.CRD.Spec.Names.Kind); err != nil {
			return fmt.Errorf("status.storedVersions of CustomResourceDefinition %s was not narrowed: %w; run again once every kube-apiserver answers", plan.Target.CRD.Name, err)
		}
		last, err := o.Again(ctx)
		if err != nil {
			return fmt.Errorf("count again from etcd before narrowing: %w", err)
		}
		if last.Left() > 0 {
			return fmt.Errorf("status.storedVersions of CustomResourceDefinition %s was not narrowed: %s stored at an old version again since the count (a kube-apiserver wrote it meanwhile): run again", plan.Target.CRD.Name, plural.Verb(last.Left(), "object", "is", "are"))
		}
		rev, err := PruneStoredVersions(ctx, o.Dynamic, last, ch)
		if err != nil {
			return err
		}
		res.crdRev = rev
		res.edited(rev, fmt.Sprintf("status.storedVersions narrowed from [%s] to [%s]", strings.Join(ch.From, ", "), strings.Join(ch.To, ", ")))
		res.Pruned = true
	}
	if len(res.ListedAgain) > 0 {
		after, err := o.Again(ctx)
		if err != nil {
			return err
		}
		for _, v := range res.ListedAgain {
			if n := after.AtVersion(v); n > 0 {
				return fmt.Errorf("refused to remove %s again from CustomResourceDefinition %s: %d objects are stored at it again", v, after.Target.CRD.Name, n)
			}
		}
		if interrupted(o.Rewrite.Stop) {
			return fmt.Errorf("interrupted: %s stays listed in CustomResourceDefinition %s", strings.Join(res.ListedAgain, ", "), after.Target.CRD.Name)
		}
		if err := res.unmoved(after, "remove "+strings.Join(res.ListedAgain, ", ")+" again"); err != nil {
			return err
		}
		rev, err := Unlist(ctx, o.Dynamic, after, res.ListedAgain)
		if err != nil {
			return err
		}
		res.crdRev = rev
		res.edited(rev, "removed "+strings.Join(res.ListedAgain, ", ")+" again from spec.versions")
		res.Unlisted = res.ListedAgain
	}
	return nil
}

// Narrows says whether a run of plan narrows status.storedVersions once
// nothing is left: when asked, or when a stranded version listed again for
// the run is in status.storedVersions (it leaves spec.versions only once
// status.storedVersions no longer holds it).
func Narrows(plan *Census, asked bool) bool {
	if plan.Target.CRD == nil {
		return false
	}
	for _, v := range Stranded(plan) {
		asked = asked || slices.Contains(plan.Target.CRD.Status.StoredVersions, v)
	}
	return asked
}

// onlyPlanned keeps, of the census taken after the stranded versions were
// listed again, only the objects the confirmed plan named (by key and UID).
func onlyPlanned(again, plan *Census) *Census {
	named := map[string]bool{}
	for _, o := range plan.Rewrite {
		named[o.Key+"\x00"+string(o.UID)] = true
	}
	out := *again
	out.Rewrite = nil
	for _, o := range again.Rewrite {
		if named[o.Key+"\x00"+string(o.UID)] {
			out.Rewrite = append(out.Rewrite, o)
		}
	}
	return &out
}

// KeyVerdict says whether a provider and key that no longer writes may
// leave the EncryptionConfiguration for the resource.
type KeyVerdict struct {
	Key string `json:"key"`
	// Live are objects still under it; Old are old revisions holding it.
	Live int `json:"live"`
	Old  int `json:"old"`
	// CompactAt removes the old revisions when etcd is compacted at it.
	CompactAt int64 `json:"compactAt,omitempty"`
	MayGo     bool  `json:"mayGo"`
	// KeyID is set when Key is a key ID of the KMS v2 plugin that writes:
	// the verdict is about the key in the KMS, not about the configuration.
	KeyID string `json:"keyID,omitempty"`
	// OtherKeyIDs: the verdict is about every key ID of the KMS v2 plugin
	// that writes but the one it writes with, none of which etcd holds.
	OtherKeyIDs bool `json:"otherKeyIDs,omitempty"`
	// HistoryUnread says why old revisions were not counted.
	HistoryUnread string `json:"historyUnread,omitempty"`
	// AlsoReads are the other resources the configuration reads with it
	// (as it lists them): MayGo speaks for this resource alone.
	AlsoReads []string `json:"alsoReads,omitempty"`
	// PlaintextOnDisk says plaintext (identity) may go from the
	// configuration but is still on every member's disk: in the bbolt
	// file's free pages until that member is defragmented, and in its WAL
	// files until etcd purges them.
	PlaintextOnDisk bool `json:"plaintextOnDisk,omitempty"`
}

// Verdicts judges every provider and key the configuration reads with, or
// the plan, the proof or the history found, but the one that writes: it
// may go only when no live object and no old revision holds it.
func Verdicts(plan, proof *Census, h *History, herr error) []KeyVerdict {
	keys := map[string]bool{}
	for _, k := range proof.Readers {
		keys[k] = true
	}
	for _, c := range []*Census{plan, proof} {
		for k := range c.ByKey {
			keys[k] = true
		}
	}
	if h != nil {
		for k := range h.ByKey {
			keys[k] = true
		}
	}
	delete(keys, proof.Writer)
	// The plugin that writes is judged by its key IDs, once it said which
	// one it writes with.
	delete(keys, etcdscan.Plugin(proof.Writer))
	var out []KeyVerdict
	// A KMS v2 envelope whose key ID does not read holds a key ID nobody
	// knows: the other key IDs' verdict keeps them all.
	torn := 0
	if proof.WriterKeyID != "" {
		tornName := etcdscan.WithKeyID(etcdscan.Plugin(proof.Writer), etcdscan.UnreadableKeyID)
		torn = proof.ByKey[tornName]
		if h != nil {
			torn += h.ByKey[tornName]
		}
		delete(keys, tornName)
	}
	for k := range keys {
		v := KeyVerdict{Key: k, Live: proof.ByKey[k], KeyID: etcdscan.KeyIDOf(k), AlsoReads: alsoReads(proof, k)}
		if herr != nil {
			v.HistoryUnread = herr.Error()
		} else if h != nil {
			v.Old = h.ByKey[k]
			if v.Old > 0 {
				v.CompactAt = h.Newest
			}
		}
		v.MayGo = v.Live == 0 && v.Old == 0 && herr == nil && h != nil
		v.PlaintextOnDisk = v.MayGo && k == "identity"
		if v.KeyID != "" && proof.WriterKeyID == "" {
			// Counted by plugin alone: no key ID is judged.
			v.MayGo = false
		}
		out = append(out, v)
	}
	if proof.WriterKeyID != "" && !slices.ContainsFunc(out, func(v KeyVerdict) bool { return v.KeyID != "" }) {
		// No older key ID is seen anywhere etcd holds (once compacted,
		// etcd keeps no trace of one): every other key ID is judged at once.
		plugin := etcdscan.Plugin(proof.Writer)
		v := KeyVerdict{Key: etcdscan.OtherKeyIDs(plugin), OtherKeyIDs: true, AlsoReads: alsoReads(proof, plugin), Live: torn}
		if herr != nil {
			v.HistoryUnread = herr.Error()
		}
		v.MayGo = herr == nil && h != nil && torn == 0
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// alsoReads are the resources other than proof's that the configuration
// reads with the provider and key k.
func alsoReads(proof *Census, k string) []string {
	var out []string
	for _, r := range proof.ReadBy[etcdscan.Plugin(k)] {
		if schema.ParseGroupResource(r) != proof.Target.Resource && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}
