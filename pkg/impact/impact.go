// Package impact works out what deleting a key from etcd sets in motion
// outside etcd. Every deletion is a DELETE watch event: the PersistentVolume
// controller, the garbage collector, the kubelet, the cloud controllers and
// operators react to it, and no etcd snapshot or per-key backup undoes what
// they do. purge shows these effects and refuses the ones a restore cannot
// undo; restore asks the same questions about what it puts back.
package impact

import (
	"fmt"
	"sort"
	"strings"

	"github.com/regghost/regghost/pkg/usage"
)

// Kind names an effect.
type Kind string

// The effects of deleting a key (README, "What a deletion sets in motion").
const (
	// StorageDestroyed: a PVC bound to a PV whose reclaim policy is Delete or
	// Recycle; the PV controller deletes or scrubs the storage.
	StorageDestroyed Kind = "storage-destroyed"
	// VolumeReleased: a PVC bound to a PV kept by Retain; the PV goes
	// Released and a restored claim (same UID) binds to it again.
	VolumeReleased Kind = "volume-released"
	// ContainersStopped: a Pod bound to a node; its kubelet stops it.
	ContainersStopped Kind = "containers-stopped"
	// LoadBalancerDeleted: a Service of type LoadBalancer; the service
	// controller (cloud-controller-manager) deletes the cloud load balancer.
	LoadBalancerDeleted Kind = "load-balancer-deleted"
	// FinalizersSkipped: the object has finalizers whose cleanup never runs.
	FinalizersSkipped Kind = "finalizers-skipped"
	// DependentsDeleted: the garbage collector deletes the object's
	// dependents that this purge does not take itself.
	DependentsDeleted Kind = "dependents-deleted"
	// DependentsPurged: the object's dependents are in the same purge.
	DependentsPurged Kind = "dependents-purged"
	// PodsOnNodeDeleted: a Node; the pod garbage collector force-deletes the
	// pods bound to it.
	PodsOnNodeDeleted Kind = "pods-on-node-deleted"
	// ControllerActs: another built-in controller reacts (listed in the README).
	ControllerActs Kind = "controller-acts"
	// OperatorMayAct: a custom resource; its operator may act on the DELETE.
	OperatorMayAct Kind = "operator-may-act"
	// Unknown: the value could not be read, so its effects are unknown.
	Unknown Kind = "unknown"
)

// RetainVolumesFlag is the purge option that sets bound volumes to Retain
// before their claims are deleted.
const RetainVolumesFlag = "--retain-volumes"

// AcceptImpactFlag is the purge option that accepts an irreversible effect
// by its kind.
const AcceptImpactFlag = "--accept-impact"

// Acceptable lists the kinds --accept-impact takes. Destroyed storage is not
// among them: its way out is --retain-volumes, which loses nothing.
var Acceptable = []Kind{LoadBalancerDeleted, LoadBalancerLeaked, DependentsDeleted, PodsOnNodeDeleted, SnapshotDestroyed, SnapshotLeaked,
	VolumeLeaked, VolumeLeftAttached, DeviceAllocationLost, InstanceTerminated, CloudResourceLeaked, CallersFail, Unknown}

// Effect is one thing deleting a key sets in motion.
type Effect struct {
	Kind Kind `json:"kind"`
	// Summary says what happens, in one line.
	Summary string `json:"summary"`
	// Irreversible is set when a regghost restore cannot undo it.
	Irreversible bool `json:"irreversible"`
	// WayOut is the option under which purge goes ahead anyway.
	WayOut string `json:"wayOut,omitempty"`
	// Objects are the other objects involved (a PV, the dependents).
	Objects []string `json:"objects,omitempty"`
	// Volume is the bound PersistentVolume of a claim.
	Volume *Volume `json:"volume,omitempty"`
}

// Volume is a PersistentVolume a claim is bound to.
type Volume struct {
	Name string `json:"name"`
	Key  string `json:"key"`
	// ModRevision is the PV key's mod revision at the scan; a Retain patch is
	// preconditioned on it (its resourceVersion).
	ModRevision   int64  `json:"modRevision"`
	ReclaimPolicy string `json:"reclaimPolicy"`
	// HostPath is the volume's directory for hostPath volumes, for reports.
	HostPath string `json:"hostPath,omitempty"`
}

// Report holds the effects of deleting each key of a plan.
type Report struct {
	// Effects maps each key to what deleting it sets in motion.
	Effects map[string][]Effect `json:"effects"`
}

// Options say which irreversible effects a purge may go ahead with.
type Options struct {
	// RetainVolumes sets each bound PV to Retain before its claim goes.
	RetainVolumes bool
	// Accept lists effect kinds the user accepted with --accept-impact.
	Accept []Kind
}

func (o Options) accepts(e Effect) bool {
	if e.Kind == StorageDestroyed {
		return o.RetainVolumes
	}
	for _, k := range o.Accept {
		if k == e.Kind {
			return true
		}
	}
	return false
}

// Refused returns the irreversible effects o does not cover, by key.
func (r *Report) Refused(o Options) map[string][]Effect {
	out := map[string][]Effect{}
	for key, effects := range r.Effects {
		for _, e := range effects {
			if e.Irreversible && !o.accepts(e) {
				out[key] = append(out[key], e)
			}
		}
	}
	return out
}

// DestroysVolume says whether e is a bound PersistentVolume's storage
// destroyed: what --retain-volumes sets to Retain first.
func (e Effect) DestroysVolume() bool {
	return e.Kind == StorageDestroyed && e.Volume != nil
}

// VolumesToRetain lists the PVs to set to Retain before their claims go.
func (r *Report) VolumesToRetain() []Volume {
	seen := map[string]bool{}
	var out []Volume
	for _, effects := range r.Effects {
		for _, e := range effects {
			if e.DestroysVolume() && !seen[e.Volume.Key] {
				seen[e.Volume.Key] = true
				out = append(out, *e.Volume)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// Short renders a key's effects for a table cell, saying which irreversible
// ones the options o cover.
func Short(effects []Effect, o Options) string {
	if len(effects) == 0 {
		return "-"
	}
	parts := make([]string, len(effects))
	for i, e := range effects {
		switch {
		case e.Irreversible && o.accepts(e) && e.Kind == StorageDestroyed && e.Volume != nil:
			parts[i] = fmt.Sprintf("PV %s is set to Retain first (%s): the volume and its data stay", e.Volume.Name, RetainVolumesFlag)
		case e.Irreversible && o.accepts(e):
			parts[i] = "ACCEPTED, IRREVERSIBLE: " + e.Summary
		case e.Irreversible:
			parts[i] = "IRREVERSIBLE: " + e.Summary
		default:
			parts[i] = e.Summary
		}
	}
	return strings.Join(parts, "; ")
}

// ParseKind checks a kind given to --accept-impact.
func ParseKind(s string) (Kind, error) {
	return parseOf(s, Acceptable, "deleting")
}

// ParseKinds reads --accept-impact's words of purge; a word that names
// no kind is a usage error.
func ParseKinds(words []string) ([]Kind, error) { return parseAll(words, ParseKind) }

// ParseStripKinds reads --accept-impact's words of unstick, as ParseKinds.
func ParseStripKinds(words []string) ([]Kind, error) { return parseAll(words, ParseStripKind) }

func parseAll(words []string, parse func(string) (Kind, error)) ([]Kind, error) {
	var out []Kind
	for _, w := range words {
		k, err := parse(w)
		if err != nil {
			return nil, usage.Errorf("%s: %w", AcceptImpactFlag, err)
		}
		out = append(out, k)
	}
	return out, nil
}

// StripAcceptable lists the kinds unstick's --accept-impact takes: what
// removing a finalizer without its controller is known to leave behind
// (StripEffect's kinds), in the order of the rules.
func StripAcceptable() []Kind {
	var out []Kind
	seen := map[Kind]bool{}
	for _, x := range externals {
		if x.onStrip != "" && !seen[x.stripKind] {
			seen[x.stripKind] = true
			out = append(out, x.stripKind)
		}
	}
	return out
}

// ParseStripKind reads one --accept-impact word of unstick.
func ParseStripKind(s string) (Kind, error) {
	return parseOf(s, StripAcceptable(), "removing a finalizer")
}

// Names joins kinds for a help text or a refusal.
func Names(kinds []Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

func parseOf(s string, acceptable []Kind, what string) (Kind, error) {
	for _, k := range acceptable {
		if string(k) == s {
			return k, nil
		}
	}
	if s == string(StorageDestroyed) && what == "deleting" {
		return "", fmt.Errorf("%s cannot be accepted: use %s, which keeps the volume and its data", s, RetainVolumesFlag)
	}
	return "", fmt.Errorf("%q is not an effect of %s that %s takes (one of %s)", s, what, AcceptImpactFlag, Names(acceptable))
}
