package render

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/regghost/regghost/pkg/catalog"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/migrate"
	"github.com/regghost/regghost/pkg/plural"
	"github.com/regghost/regghost/pkg/table"
)

// listedObjects is how many objects a human form names before it says how
// many more there are (-o json names them all).
const listedObjects = 20

// MigratePlan is migrate's plan (without --confirm) in every form -o can ask
// for; its rows are the objects the rewrite moves.
func MigratePlan(plan *migrate.Census, keys []migrate.KeyVerdict, held migrate.Backups, prune bool, perSecond int) Output {
	doc := map[string]any{"plan": plan, "listAgain": migrate.Stranded(plan), "keys": NonNil(keys), "backups": NonNil(held.Held), "unreadableBackups": NonNil(held.Unreadable)}
	return Output{Doc: doc, Rows: RowsOf(plan.Rewrite, func(o *migrate.Object) string { return o.Key }), Human: func(w io.Writer, _, _ bool) error {
		if err := MigrateSteps(w, plan, prune, perSecond); err != nil {
			return err
		}
		if err := writeKeyVerdicts(w, plan, keys); err != nil {
			return err
		}
		writeHeld(w, plan, held)
		if len(plan.Rewrite) > 0 {
			fmt.Fprintln(w, "\nDry run: nothing was changed. Re-run with --confirm to take these steps.")
		} else if ch, err := migrate.StoredVersionsProven(plan); err == nil && ch.Needed() && prune {
			fmt.Fprintln(w, "\nDry run: nothing was changed.")
		}
		return nil
	}}
}

// MigrateSteps writes the census and the steps a confirmed run takes: the
// plan a confirmed run shows before its question.
func MigrateSteps(w io.Writer, plan *migrate.Census, prune bool, perSecond int) error {
	if err := writeCensus(w, plan); err != nil {
		return err
	}
	writeMigrateSteps(w, plan, prune, perSecond)
	return nil
}

// MigrateResult is a confirmed migration: what each step did and the proof.
func MigrateResult(plan *migrate.Census, res *migrate.Result) Output {
	var rows []Row
	if res.Proof != nil {
		rows = RowsOf(res.Proof.Rewrite, func(o *migrate.Object) string { return o.Key })
	}
	return Output{Doc: map[string]any{"plan": plan, "result": res}, Rows: rows, Human: func(w io.Writer, _, _ bool) error {
		fmt.Fprintln(w)
		if res.Dir != "" {
			what, how := "CustomResourceDefinition "+plan.Target.CRD.Name, "puts it back as it was before this run, while nobody changed it since."
			if n := len(migrate.Converted(plan)); n > 0 {
				what = fmt.Sprintf("%s and the %s a conversion rewrites, as etcd held them,", what, plural.Of(n, "object"))
				how = "puts the CRD back as it was before this run, and each object the API server rewrote from the value backed up, while nobody changed it since and its CRD lists the version it was stored at"
				if s := migrate.Stranded(plan); len(s) > 0 {
					how += fmt.Sprintf(" (the CRD as it was does not list %s: list it again first, and restore refuses those objects until then)", strings.Join(s, ", "))
				}
				how += "."
			}
			table.Para(w, "", "  ", fmt.Sprintf("Backed up %s in %s: `regghost restore %s` %s", what, res.Dir, res.Dir, how))
		}
		if len(res.ListedAgain) > 0 {
			table.Para(w, "", "  ", fmt.Sprintf("Listed %s again in CustomResourceDefinition %s (served: false, storage: false).", strings.Join(res.ListedAgain, ", "), plan.Target.CRD.Name))
			if len(res.Unlisted) == 0 {
				defer table.Para(w, "", "  ", fmt.Sprintf("%s stays listed in CustomResourceDefinition %s (served: false, storage: false): a run again rewrites what is left, but does not remove it; once nothing is stored at it, remove it from spec.versions (kubectl edit crd %s).",
					strings.Join(res.ListedAgain, ", "), plan.Target.CRD.Name, plan.Target.CRD.Name))
			}
		}
		if r := res.Rewrite; r != nil && (r.Planned > 0 || r.Stopped != "") {
			table.Para(w, "", "  ", fmt.Sprintf("Rewrote %d of %s through the API server (%d deleted since, %d created again since, %d failed; %s with other writers, read again).",
				r.Counts[migrate.Rewritten], plural.Of(r.Planned, "object"), r.Counts[migrate.Gone], r.Counts[migrate.CreatedAgain], r.Counts[migrate.Failed], plural.Of(r.Conflicts, "conflict")))
			for i, f := range r.Failures {
				if i == listedObjects {
					fmt.Fprintf(w, "  … and %d more (-o json names them all)\n", len(r.Failures)-i)
					break
				}
				table.Para(w, "  ", "    ", f.Key+": "+f.Error)
			}
			if r.Stopped != "" {
				table.Para(w, "", "  ", fmt.Sprintf("Stopped before the end: %s. Run the same command again: it reads what is left from etcd and goes on.", r.Stopped))
				return nil
			}
		}
		if res.Proof == nil {
			return nil
		}
		writeProof(w, plan, res.Proof)
		if sv := res.StoredVersions; sv != nil {
			switch {
			case res.Pruned:
				table.Para(w, "", "  ", fmt.Sprintf("Narrowed status.storedVersions of CustomResourceDefinition %s from [%s] to [%s].", sv.CRD, strings.Join(sv.From, ", "), strings.Join(sv.To, ", ")))
			case sv.Needed() && res.Proof.Left() == 0:
				table.Para(w, "", "  ", fmt.Sprintf("status.storedVersions of CustomResourceDefinition %s may now be [%s] (it is [%s]): re-run with --prune-stored-versions --confirm.", sv.CRD, strings.Join(sv.To, ", "), strings.Join(sv.From, ", ")))
			}
		}
		if len(res.Unlisted) > 0 {
			fmt.Fprintf(w, "Removed %s again from CustomResourceDefinition %s.\n", strings.Join(res.Unlisted, ", "), plan.Target.CRD.Name)
		}
		if err := writeKeyVerdicts(w, res.Proof, res.Keys); err != nil {
			return err
		}
		writeHeld(w, res.Proof, res.Backups)
		if res.BackupsUnread != "" {
			table.Para(w, "", "  ", "regghost's backups were not read: "+res.BackupsUnread+".")
		}
		return nil
	}}
}

// writeHeld names regghost's backups that need a key that no longer writes.
func writeHeld(w io.Writer, c *migrate.Census, held migrate.Backups) {
	var keys, versions []migrate.Held
	for _, h := range held.Held {
		if len(h.ByKey) > 0 || h.SnapshotRevision > 0 {
			keys = append(keys, h)
		}
		if len(h.ByVersion) > 0 || h.VersionUnread > 0 {
			versions = append(versions, h)
		}
	}
	if len(keys) > 0 {
		fmt.Fprintln(w)
		table.Para(w, "", "", fmt.Sprintf("regghost's backups on this node that need a key that no longer writes %s (keep the old configuration with them):", c.Resource))
		for _, h := range keys {
			var what []string
			for _, k := range sortedKeys(h.ByKey) {
				what = append(what, fmt.Sprintf("%s under %s", plural.Of(h.ByKey[k], "value"), k))
			}
			if h.SnapshotRevision > 0 {
				what = append(what, fmt.Sprintf("its snapshot, taken at revision %d, holds %s as it was then", h.SnapshotRevision, c.Resource))
			}
			table.Para(w, "  ", "    ", h.Path+": "+strings.Join(what, "; "))
		}
	}
	if len(versions) > 0 {
		fmt.Fprintln(w)
		table.Para(w, "", "", fmt.Sprintf("regghost's backups on this node that hold %s at a version other than %s (restored, each is stored there again; `regghost restore` refuses those at a version the CRD no longer lists):", c.Resource, c.Target.Version))
		for _, h := range versions {
			var what []string
			for _, v := range sortedKeys(h.ByVersion) {
				s := fmt.Sprintf("%s at %s", plural.Of(h.ByVersion[v], "object"), v)
				if h.Unlisted[v] > 0 {
					s += " (no longer listed: refused by restore)"
				}
				what = append(what, s)
			}
			if h.VersionUnread > 0 {
				what = append(what, fmt.Sprintf("%s whose version is not read here", plural.Of(h.VersionUnread, "object")))
			}
			table.Para(w, "  ", "    ", h.Path+": "+strings.Join(what, "; "))
		}
	}
	if len(held.Unreadable) > 0 {
		fmt.Fprintln(w)
		table.Para(w, "", "", "regghost's backups on this node that could not be read: what they hold is not known, and nothing above speaks for them:")
		for _, u := range held.Unreadable {
			table.Para(w, "  ", "    ", u.Path+": "+u.Error)
		}
	}
}

// writeCensus writes the counts per stored version and per provider and key.
func writeCensus(w io.Writer, c *migrate.Census) error {
	fmt.Fprintf(w, "%s at etcd revision %d: %s\n", c.Resource, c.Revision, plural.Of(c.Objects, "object"))
	if crd := c.Target.CRD; crd != nil {
		var vs []string
		for _, v := range crd.Spec.Versions {
			vs = append(vs, versionFlags(v.Name, v.Served, v.Storage))
		}
		table.Para(w, "", "  ", fmt.Sprintf("CustomResourceDefinition %s lists %s; status.storedVersions [%s].", crd.Name, strings.Join(vs, ", "), strings.Join(crd.Status.StoredVersions, ", ")))
	}
	if c.Target.CRD == nil {
		writeBuiltin(w, c)
	}
	writeServers(w, c.Target.Servers)
	if c.Writer != "" {
		table.Para(w, "", "", fmt.Sprintf("The EncryptionConfiguration writes %s with %s.", c.Resource, writerPhrase(c)))
	}
	if c.NotChecked > 0 {
		what := "judged by provider alone; their stored version and KMS v2 key ID are not read here."
		switch {
		case c.WriterKeyID != "":
			what = fmt.Sprintf("judged by provider and, under the plugin that writes, by key ID against the key ID %s the plugin says it writes with; their stored version is not read here.", c.WriterKeyID)
		case c.KeyIDUnread != "":
			what = "judged by provider alone; their stored version is not read here, and their KMS v2 key ID is not judged: " + c.KeyIDUnread + "."
		}
		table.Para(w, "", "", fmt.Sprintf("%s under a KMS provider: %s", plural.Verb(c.NotChecked, "object", "is", "are"), what))
	}
	fmt.Fprintln(w)
	t := table.New(w, "STORED AS", "OBJECTS")
	for _, k := range sortedKeys(c.ByVersion) {
		if err := t.Append([]string{k, fmt.Sprint(c.ByVersion[k])}); err != nil {
			return err
		}
	}
	for _, k := range sortedKeys(c.ByKey) {
		label := "encrypted with " + k
		if k == decrypt.Identity {
			label = "not encrypted (identity)"
		}
		if err := t.Append([]string{label, fmt.Sprint(c.ByKey[k])}); err != nil {
			return err
		}
	}
	return t.Render()
}

func versionFlags(name string, served, storage bool) string {
	var f []string
	if served {
		f = append(f, "served")
	}
	if storage {
		f = append(f, "storage")
	}
	if len(f) == 0 {
		return name + " (not served)"
	}
	return name + " (" + strings.Join(f, ", ") + ")"
}

// writeMigrateSteps writes what a confirmed run would do, in order.
func writeMigrateSteps(w io.Writer, c *migrate.Census, prune bool, perSecond int) {
	fmt.Fprintln(w)
	if c.Left() == 0 {
		table.Para(w, "", "  ", fmt.Sprintf("Nothing to move: every object of %s is stored%s.", c.Resource, atWhat(c)))
		if ch, err := migrate.StoredVersionsProven(c); err == nil && ch.Needed() {
			table.Para(w, "", "", fmt.Sprintf("status.storedVersions of CustomResourceDefinition %s may be narrowed from [%s] to [%s]: %s.",
				ch.CRD, strings.Join(ch.From, ", "), strings.Join(ch.To, ", "), pruneHow(prune)))
		}
		return
	}
	writeObjects(w, plural.Of(len(c.Rewrite), "object")+" to rewrite:", c.Rewrite)
	writeObjects(w, plural.Of(len(c.Unreadable), "object")+" nobody here can read (not rewritten):", c.Unreadable)
	writeObjects(w, plural.Of(len(c.Stuck), "object")+" the release to upgrade to cannot read, which no rewrite here moves:", c.Stuck)
	if len(c.Rewrite) == 0 {
		return
	}
	fmt.Fprintln(w, "\nSteps, each through the API server:")
	n := 1
	step := func(s string) {
		table.Para(w, fmt.Sprintf("  %d. ", n), "     ", s)
		n++
	}
	stranded := migrate.Stranded(c)
	if c.Target.CRD != nil {
		converted := ""
		if n := len(migrate.Converted(c)); n > 0 {
			converted = fmt.Sprintf(" and the %s a conversion rewrites, as etcd holds them", plural.Of(n, "object"))
		}
		them := "it"
		if converted != "" {
			them = "them"
		}
		step(fmt.Sprintf("take regghost's writers' lock and back up CustomResourceDefinition %s as read%s (restore puts %s back)", c.Target.CRD.Name, converted, them))
	}
	if len(stranded) > 0 {
		note := ""
		if conv := c.Target.CRD.Spec.Conversion; conv != nil && conv.Strategy == "Webhook" {
			note = fmt.Sprintf("; its conversion webhook must still convert from %s, or those objects fail and are named", strings.Join(stranded, ", "))
		}
		step(fmt.Sprintf("list %s again in CustomResourceDefinition %s (served: false, storage: false, a schema that keeps every field, so the conversion to %s sees each one), so the API server can read the objects stored at it%s",
			strings.Join(stranded, ", "), c.Target.CRD.Name, c.Target.Version, note))
	}
	took := time.Duration(len(c.Rewrite)/max(perSecond, 1)) * time.Second
	step(fmt.Sprintf("write %s back unchanged, with the resourceVersion it was read at as precondition (a conflict is read again, never overwritten); at %d a second (--max-objects-per-second) about %s, a run stopped by --command-timeout is run again",
		eachOf(len(c.Rewrite), "object"), perSecond, max(took, time.Second)))
	step("count again from etcd, and name every object left")
	if c.Target.CRD != nil {
		if ch, err := migrate.StoredVersionsProven(c.IfMoved()); err == nil && ch.Needed() && migrate.Narrows(c, prune) {
			step(fmt.Sprintf("if nothing is left: narrow status.storedVersions from [%s] to [%s] through /status", strings.Join(ch.From, ", "), strings.Join(ch.To, ", ")))
		}
	}
	if len(stranded) > 0 {
		step(fmt.Sprintf("if nothing is left at %s: remove it again from CustomResourceDefinition %s", strings.Join(stranded, ", "), c.Target.CRD.Name))
	}
}

func pruneHow(asked bool) string {
	if asked {
		return "--confirm does it, through /status, with the CRD's resourceVersion as precondition"
	}
	return "add --prune-stored-versions --confirm"
}

// storageOf is the group/version the resource is stored at now ("" when
// not known: a built-in resource whose API server was not asked).
func storageOf(c *migrate.Census) string {
	if v := c.Target.StorageVersion(); v != "" {
		return c.Target.Resource.WithVersion(v).GroupVersion().String()
	}
	if b := c.Target.Builtin; b != nil {
		if b.Stored.Storage == "" && b.Stored.Hash != "" {
			return "the API server's storage version"
		}
		return b.Stored.Storage
	}
	return ""
}

// writeServers names the kube-apiservers that could not be asked, and what
// that leaves unproven; nothing when every one was.
func writeServers(w io.Writer, s *migrate.Servers) {
	if u := s.Unasked(); u != "" {
		table.Para(w, "", "", "Not every kube-apiserver could be asked: "+u+". A rewrite is still proven from etcd, but status.storedVersions is not narrowed until each one answers.")
	}
	if s != nil {
		for _, a := range s.Asked {
			if a.Through {
				table.Para(w, "", "", fmt.Sprintf("Asked through %s, the address the kubeconfig names: which kube-apiserver behind it answered is not known.", a.Address))
			}
		}
	}
}

// writeBuiltin says what a built-in resource's objects are judged against.
func writeBuiltin(w io.Writer, c *migrate.Census) {
	b := c.Target.Builtin
	server := "The API server"
	if b != nil && catalog.Minor(b.Server) != "" {
		server += " (" + b.Server + ")"
	}
	switch {
	case b == nil || !b.Asked:
		why := ""
		if b != nil && b.NotAsked != "" {
			why = " (" + b.NotAsked + ")"
		}
		table.Para(w, "", "", fmt.Sprintf("%s is built in: the API server was not asked where it stores it%s, so no object is rewritten for its version.", c.Resource, why))
	case !b.Served:
		table.Para(w, "", "", fmt.Sprintf("%s does not serve %s (its API is turned off): its objects are counted, not rewritten.", server, c.Resource))
	case b.Stored.Storage != "":
		table.Para(w, "", "", fmt.Sprintf("%s stores %s at %s (its discovery's storageVersionHash).", server, c.Resource, b.Stored.Storage))
	case b.Stored.Hash != "":
		table.Para(w, "", "", fmt.Sprintf("%s stores %s at the version its discovery's storageVersionHash %s names (regghost has no table of its release to name it).", server, c.Resource, b.Stored.Hash))
	default:
		table.Para(w, "", "", fmt.Sprintf("%s does not say where it stores %s (no storageVersionHash): no object is rewritten for its version.", server, c.Resource))
	}
	if b != nil && b.Target != nil {
		table.Para(w, "", "", fmt.Sprintf("Judged against what Kubernetes %s decodes (regghost's table of %s).", catalog.Minor(b.Target.Release), b.Target.Release))
		if len(b.Skipped) > 0 {
			table.Para(w, "", "", fmt.Sprintf("An upgrade goes one minor release at a time: %s, between, are not judged here; judge each with --target-release in turn.", strings.Join(b.Skipped, ", ")))
		}
	}
}

func atWhat(c *migrate.Census) string {
	var at []string
	if v := storageOf(c); v != "" && c.NotChecked == 0 {
		at = append(at, "at "+v)
	} else if v != "" {
		at = append(at, fmt.Sprintf("at %s, but for %d under KMS whose version is not read here", v, c.NotChecked))
	}
	if b := c.Target.Builtin; b != nil && b.Target != nil {
		at = append(at, "where Kubernetes "+catalog.Minor(b.Target.Release)+" reads it")
	}
	if c.Writer != "" {
		at = append(at, "under "+c.Writer)
	}
	if len(at) == 0 {
		return " (nothing judged: give --encryption-provider-config to judge encryption)"
	}
	return " " + strings.Join(at, " and ")
}

// writeObjects names objects with why, up to listedObjects.
func writeObjects(w io.Writer, title string, objs []migrate.Object) {
	if len(objs) == 0 {
		return
	}
	fmt.Fprintln(w, title)
	whys := map[string]int{}
	for i, o := range objs {
		whys[o.Why]++
		if i < listedObjects {
			table.Para(w, "  ", "    ", o.Key+": "+o.Why)
		}
	}
	if len(objs) > listedObjects {
		fmt.Fprintf(w, "  … and %d more (-o json or -o name lists them all):\n", len(objs)-listedObjects)
		for _, why := range sortedKeys(whys) {
			table.Para(w, "    ", "      ", fmt.Sprintf("%d %s", whys[why], why))
		}
	}
}

// writeProof writes the count again: for every old version and key the
// plan found, how many objects are left at it.
func writeProof(w io.Writer, plan, proof *migrate.Census) {
	var left []string
	for _, at := range sortedKeys(plan.ByVersion) {
		if sv := storageOf(plan); sv != "" && at != sv {
			left = append(left, fmt.Sprintf("  %s of %s stored at %s", plural.Of(proof.ByVersion[at], "object"), plan.Resource, at))
		}
	}
	for _, k := range sortedKeys(plan.ByKey) {
		if proof.Writer != "" && k != proof.Writer {
			left = append(left, fmt.Sprintf("  %s of %s under %s", plural.Of(proof.ByKey[k], "object"), plan.Resource, k))
		}
	}
	if len(left) == 0 {
		fmt.Fprintf(w, "Counted again from etcd at revision %d.\n", proof.Revision)
	} else {
		fmt.Fprintf(w, "Counted again from etcd at revision %d:\n%s\n", proof.Revision, strings.Join(left, "\n"))
	}
	if proof.Left() == 0 {
		table.Para(w, "", "  ", fmt.Sprintf("Every object of %s is stored%s.", plan.Resource, atWhat(proof)))
		return
	}
	writeObjects(w, plural.Of(len(proof.Rewrite), "object")+" left:", proof.Rewrite)
	if len(proof.Rewrite) > 0 {
		table.Para(w, "", "  ", "An object the API server took back and that is still not where this run expects was written by an API server with another EncryptionConfiguration or CRD than the one read here: compare each control-plane node's configuration, then run again.")
		if proof.WriterKeyID != "" {
			table.Para(w, "", "  ", fmt.Sprintf("Under a KMS v2 plugin: an API server that does not write with key ID %s yet takes the object back unchanged. kube-apiserver asks its plugin at most once a minute (its /healthz/kms-providers asks at once): run again in a minute.", proof.WriterKeyID))
		}
	}
	writeObjects(w, plural.Of(len(proof.Unreadable), "object")+" nobody here can read:", proof.Unreadable)
	writeObjects(w, plural.Of(len(proof.Stuck), "object")+" the release to upgrade to cannot read, which no rewrite here moves:", proof.Stuck)
}

// writeKeyVerdicts says, for every provider and key that no longer writes,
// whether it may leave the EncryptionConfiguration.
func writeKeyVerdicts(w io.Writer, c *migrate.Census, keys []migrate.KeyVerdict) error {
	if len(keys) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	table.Para(w, "", "", fmt.Sprintf("Keys that no longer write %s (the configuration writes with %s):", c.Resource, writerPhrase(c)))
	t := table.New(w, "KEY", "OBJECTS", "OLD REVISIONS", "VERDICT")
	for _, k := range keys {
		old := fmt.Sprint(k.Old)
		verdict := "may go"
		switch {
		case k.HistoryUnread != "":
			old, verdict = "not read", "keep it: old revisions not read (below)"
		case k.Live > 0:
			verdict = "keep it: objects are still under it"
		case k.Old > 0:
			verdict = fmt.Sprintf("keep it until etcd is compacted at revision %d or later", k.CompactAt)
		}
		if k.MayGo && len(k.AlsoReads) > 0 {
			verdict = "may go for " + c.Resource + "; it also reads " + strings.Join(k.AlsoReads, ", ")
		}
		if err := t.Append([]string{k.Key, fmt.Sprint(k.Live), old, verdict}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	unread := false
	for _, k := range keys {
		if k.HistoryUnread != "" && !unread {
			unread = true
			table.Para(w, "", "  ", "Old revisions were not read: "+k.HistoryUnread+".")
		}
		if k.MayGo && k.OtherKeyIDs {
			also := ""
			if len(k.AlsoReads) > 0 {
				also = fmt.Sprintf(" Its plugin (or another at its endpoint) also encrypts %s here: keep every key ID until `regghost migrate RESOURCE` says the same of each.", strings.Join(k.AlsoReads, ", "))
			}
			table.Para(w, "", "", fmt.Sprintf("%s in etcd no longer need any key ID of the KMS but %s: no object and no old revision holds another.%s A key of the KMS may serve other clusters too, and backups and snapshots taken before revision %d may still need an older one. Disable one only after every API server writes with key ID %s (run this again on each control-plane node) and nothing else uses it.",
				upperFirst(c.Resource), c.WriterKeyID, also, c.Revision, c.WriterKeyID))
		} else if k.MayGo && k.KeyID != "" {
			also := ""
			if len(k.AlsoReads) > 0 {
				also = fmt.Sprintf(" Its plugin (or another at its endpoint) also encrypts %s here: keep the key ID until `regghost migrate RESOURCE` says the same of each.", strings.Join(k.AlsoReads, ", "))
			}
			table.Para(w, "", "", fmt.Sprintf("%s in etcd no longer need key ID %s of the KMS: no object and no old revision holds it.%s A key of the KMS may serve other clusters too, and backups and snapshots taken before revision %d still need it. Disable it only after every API server writes with key ID %s (run this again on each control-plane node) and nothing else uses it.",
				upperFirst(c.Resource), k.KeyID, also, c.Revision, c.WriterKeyID))
		} else if k.MayGo {
			also := ""
			if len(k.AlsoReads) > 0 {
				also = fmt.Sprintf(" The configuration also reads %s with it: keep it until `regghost migrate RESOURCE` says the same of every resource those entries cover.", strings.Join(k.AlsoReads, ", "))
			}
			table.Para(w, "", "", fmt.Sprintf("%s may leave the EncryptionConfiguration's entry for %s once every API server writes with %s: no object and no old revision in etcd holds it.%s Backups and snapshots taken before revision %d still need it: keep the old configuration next to them.",
				k.Key, c.Resource, c.Writer, also, c.Revision))
			if k.PlaintextOnDisk {
				table.Para(w, "", "", "The plaintext is still on each member's disk: in the db file's free pages until that member is defragmented (`regghost space reclaim`, one member at a time), and in its WAL files until etcd purges them (it keeps the last --max-wals, 5 by default, once a snapshot every --snapshot-count writes has passed them), and in every backup and snapshot taken before.")
			}
		} else if k.Old > 0 && k.Live == 0 {
			table.Para(w, "", "", fmt.Sprintf("Old revisions go when etcd is compacted: kube-apiserver compacts every 5 minutes (--etcd-compaction-interval); run this again afterwards for the verdict."))
		}
	}
	return nil
}

// writerPhrase names what writes c's resource: the provider and key, or
// the KMS v2 plugin and the key ID it says it writes with.
func writerPhrase(c *migrate.Census) string {
	if c.WriterKeyID != "" {
		return fmt.Sprintf("%s, which says it writes with key ID %s", etcdscan.Plugin(c.Writer), c.WriterKeyID)
	}
	return c.Writer
}

// upperFirst capitalises the first letter of s.
func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// eachOf is "the 1 object" or "each of the 3 objects".
func eachOf(n int, noun string) string {
	if n == 1 {
		return "the 1 " + noun
	}
	return "each of the " + plural.Of(n, noun)
}
