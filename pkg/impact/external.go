package impact

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// The effects of controllers outside kube-controller-manager (README, "Controllers
// outside kube-controller-manager"). Each is irreversible: a restore puts the
// object back, not what the controller did or failed to do outside etcd.
const (
	// LoadBalancerLeaked: a load-balancer finalizer removed without its
	// controller; the cloud load balancer stays, billed and untracked.
	LoadBalancerLeaked Kind = "load-balancer-leaked"
	// SnapshotDestroyed: the storage snapshot behind a VolumeSnapshot whose
	// content has deletionPolicy Delete is deleted.
	SnapshotDestroyed Kind = "snapshot-destroyed"
	// SnapshotLeaked: a snapshot finalizer removed without the CSI
	// snapshotter; the storage snapshot stays, untracked.
	SnapshotLeaked Kind = "snapshot-leaked"
	// VolumeLeaked: the external-provisioner never deletes the disk of a
	// PersistentVolume with reclaim policy Delete.
	VolumeLeaked Kind = "volume-leaked"
	// VolumeLeftAttached: the external-attacher never detaches the volume.
	VolumeLeftAttached Kind = "volume-left-attached"
	// DeviceAllocationLost: a ResourceClaim's device allocation is dropped
	// while the device may still be prepared for a pod.
	DeviceAllocationLost Kind = "device-allocation-lost"
	// InstanceTerminated: a cloud instance is terminated without draining
	// its node (Karpenter, Cluster API).
	InstanceTerminated Kind = "instance-terminated"
	// CloudResourceLeaked: a cloud resource managed through the object is
	// left behind, untracked (Crossplane).
	CloudResourceLeaked Kind = "cloud-resource-leaked"
)

// external is what a controller outside kube-controller-manager does about a
// finalizer: when the object is deleted from etcd (onDelete) and when the
// finalizer is removed without it (onStrip). An empty sentence means
// nothing irreversible.
type external struct {
	// finalizer matches exactly, or as a prefix when it ends in "/".
	finalizer string
	// deleteKind and stripKind are the effects' kinds.
	deleteKind, stripKind Kind
	onDelete, onStrip     string
	// source is where the controller defines it, for the README.
	source string
}

// externals are the finalizers of controllers outside kube-controller-manager
// whose work is irreversible, from their sources.
var externals = []external{
	{finalizer: "service.kubernetes.io/load-balancer-cleanup", deleteKind: LoadBalancerDeleted, stripKind: LoadBalancerLeaked,
		onDelete: "the service controller (cloud-controller-manager) deletes its cloud load balancer; a restore gets a new one, with a new address",
		onStrip:  "the service controller (cloud-controller-manager) never deletes its cloud load balancer: it leaks, with its address",
		source:   "kubernetes/cloud-provider service/helpers/helper.go"},
	{finalizer: "service.k8s.aws/resources", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "the AWS Load Balancer Controller ignores a Service it cannot find: its NLB, target groups and security groups leak",
		onStrip:  "the AWS Load Balancer Controller never deletes its NLB, target groups and security groups: they leak",
		source:   "kubernetes-sigs/aws-load-balancer-controller pkg/shared_constants/finalizers.go"},
	{finalizer: "ingress.k8s.aws/resources", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "the AWS Load Balancer Controller ignores the delete event: its ALB, listeners and target groups leak (or its rules stay in a shared ALB)",
		onStrip:  "the AWS Load Balancer Controller never deletes its ALB, listeners and target groups: they leak",
		source:   "kubernetes-sigs/aws-load-balancer-controller pkg/ingress/finalizer.go"},
	{finalizer: "group.ingress.k8s.aws/", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "the AWS Load Balancer Controller ignores the delete event: its rules stay in the group's ALB, or the ALB leaks",
		onStrip:  "the AWS Load Balancer Controller never removes it from the group's ALB: its rules or the ALB leak",
		source:   "kubernetes-sigs/aws-load-balancer-controller pkg/ingress/finalizer.go"},
	{finalizer: "networking.gke.io/ingress-finalizer-V2", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "ingress-gce cleans up an Ingress it cannot find with its V1 naming: the V2-named forwarding rule, proxy and URL map leak",
		onStrip:  "ingress-gce never deletes its forwarding rule, target proxy, URL map and backends: they leak",
		source:   "kubernetes/ingress-gce pkg/utils/common/finalizer.go"},
	{finalizer: "networking.gke.io/ingress-finalizer", deleteKind: LoadBalancerDeleted, stripKind: LoadBalancerLeaked,
		onDelete: "ingress-gce garbage-collects the load balancer of an Ingress it cannot find: it is deleted; a restore gets a new one, with a new address",
		onStrip:  "ingress-gce never deletes its forwarding rule, target proxy, URL map and backends: they leak",
		source:   "kubernetes/ingress-gce pkg/utils/common/finalizer.go"},
	{finalizer: "gke.networking.io/", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "GKE's L4 load-balancer controller never cleans up after a Service it cannot find: the load balancer leaks",
		onStrip:  "GKE's L4 load-balancer controller never deletes the load balancer: it leaks",
		source:   "kubernetes/ingress-gce pkg/utils/common/finalizer.go"},
	{finalizer: "networking.gke.io/neg-finalizer", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "the NEG controller never deletes the network endpoint groups: they leak",
		onStrip:  "the NEG controller never deletes the network endpoint groups: they leak",
		source:   "kubernetes/ingress-gce pkg/utils/common/finalizer.go"},
	{finalizer: "gateway.k8s.aws/", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "the AWS Load Balancer Controller's gateway controller never deletes the Gateway's load balancer: it leaks",
		onStrip:  "the AWS Load Balancer Controller's gateway controller never deletes the Gateway's load balancer: it leaks",
		source:   "kubernetes-sigs/aws-load-balancer-controller pkg/shared_constants/finalizers.go"},
	{finalizer: "gateway.finalizer.networking.gke.io", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "GKE's Gateway controller never deletes the Gateway's load balancer: it leaks",
		onStrip:  "GKE's Gateway controller never deletes the Gateway's load balancer: it leaks",
		source:   "GKE Gateway controller (seen on live objects; its source is not public)"},
	{finalizer: "elbv2.k8s.aws/resources", deleteKind: LoadBalancerLeaked, stripKind: LoadBalancerLeaked,
		onDelete: "the AWS Load Balancer Controller never deregisters the targets or removes the security group rules",
		onStrip:  "the AWS Load Balancer Controller never deregisters the targets or removes the security group rules",
		source:   "kubernetes-sigs/aws-load-balancer-controller controllers/elbv2/targetgroupbinding_controller.go"},
	{finalizer: "snapshot.storage.kubernetes.io/volumesnapshotcontent-bound-protection", stripKind: SnapshotLeaked,
		onStrip: "the CSI snapshotter never deletes the storage snapshot (deletionPolicy Delete): it leaks, untracked",
		source:  "kubernetes-csi/external-snapshotter pkg/utils/util.go"},
	{finalizer: "snapshot.storage.kubernetes.io/volumesnapshot-bound-protection", stripKind: SnapshotLeaked,
		onStrip: "the snapshot controller never deletes its VolumeSnapshotContent: the content and the storage snapshot stay, untracked",
		source:  "kubernetes-csi/external-snapshotter pkg/utils/util.go"},
	{finalizer: "external-provisioner.volume.kubernetes.io/finalizer", deleteKind: VolumeLeaked, stripKind: VolumeLeaked,
		onDelete: "the external-provisioner never deletes the disk behind it (reclaim policy Delete): it leaks, untracked",
		onStrip:  "the external-provisioner never deletes the disk behind it (reclaim policy Delete): it leaks, untracked",
		source:   "sigs.k8s.io/sig-storage-lib-external-provisioner controller/controller.go"},
	{finalizer: "external-attacher/", deleteKind: VolumeLeftAttached, stripKind: VolumeLeftAttached,
		onDelete: "the external-attacher never detaches the volume: it stays attached to the node, and a ReadWriteOnce volume cannot attach elsewhere",
		onStrip:  "the external-attacher never detaches the volume: it stays attached to the node, and a ReadWriteOnce volume cannot attach elsewhere",
		source:   "kubernetes-csi/external-attacher pkg/controller/util.go"},
	{finalizer: "resource.kubernetes.io/delete-protection", deleteKind: DeviceAllocationLost, stripKind: DeviceAllocationLost,
		onDelete: "its device allocation is dropped while a pod may still hold the prepared device: the device can be allocated twice",
		onStrip:  "its device allocation is dropped before the resourceclaim controller deallocates it: the device can be allocated twice",
		source:   "k8s.io/api resource/v1 types.go (added by kube-scheduler, removed by the resourceclaim controller)"},
	{finalizer: "karpenter.sh/termination", deleteKind: InstanceTerminated, stripKind: InstanceTerminated,
		onDelete: "Karpenter's garbage collector terminates the cloud instance of a NodeClaim it cannot find, without draining the node",
		onStrip:  "Karpenter never drains the node; its instance is terminated without a drain, or leaks",
		source:   "kubernetes-sigs/karpenter pkg/apis/v1/labels.go"},
	{finalizer: "machine.cluster.x-k8s.io", deleteKind: InstanceTerminated, stripKind: InstanceTerminated,
		onDelete: "the garbage collector deletes its infrastructure machine and the provider deletes the VM, without draining the node",
		onStrip:  "the node is never drained: the garbage collector deletes its infrastructure machine and the provider deletes the VM",
		source:   "kubernetes-sigs/cluster-api api/core/v1beta2/machine_types.go"},
	{finalizer: "finalizer.managedresource.crossplane.io", deleteKind: CloudResourceLeaked, stripKind: CloudResourceLeaked,
		onDelete: "Crossplane never deletes the external cloud resource it manages: it leaks, untracked",
		onStrip:  "Crossplane never deletes the external cloud resource it manages: it leaks, untracked",
		source:   "crossplane/crossplane-runtime pkg/reconciler/managed"},
}

func (x external) matches(finalizer string) bool {
	if strings.HasSuffix(x.finalizer, "/") {
		return strings.HasPrefix(finalizer, x.finalizer)
	}
	return finalizer == x.finalizer
}

// externalFor finds the rule of a finalizer.
func externalFor(finalizer string) (external, bool) {
	for _, x := range externals {
		if x.matches(finalizer) {
			return x, true
		}
	}
	return external{}, false
}

// StripEffect is what removing finalizer without its controller leaves
// behind outside etcd, when a controller outside kube-controller-manager is
// known to do something irreversible for it.
func StripEffect(finalizer string) (Effect, bool) {
	x, ok := externalFor(finalizer)
	if !ok || x.onStrip == "" {
		return Effect{}, false
	}
	return Effect{Kind: x.stripKind, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(x.stripKind), Objects: []string{finalizer},
		Summary: "removing " + finalizer + ": " + x.onStrip}, true
}

// deleteEffects are the irreversible effects of deleting, from etcd, an
// object that carries these finalizers.
func deleteEffects(finalizers []string) []Effect {
	var out []Effect
	for _, f := range finalizers {
		x, ok := externalFor(f)
		if !ok || x.onDelete == "" {
			continue
		}
		out = append(out, Effect{Kind: x.deleteKind, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(x.deleteKind), Objects: []string{f},
			Summary: "finalizer " + f + ": " + x.onDelete})
	}
	return out
}

// objectEffects are the irreversible effects of deleting, from etcd, objects
// that controllers outside kube-controller-manager act on by their kind
// rather than by a finalizer: Ingresses and Gateways of cloud load-balancer
// controllers, VolumeSnapshots bound to a content with deletionPolicy
// Delete (bound from either side, see snapshotEffects), Karpenter NodeClaims
// and Cluster API Machines. An error is the keyspace's, not the object's.
func (a *analysis) objectEffects(key, prefix string, obj map[string]any, has func(Kind) bool) error {
	str := func(path ...string) string {
		v, _, _ := unstructuredString(obj, path...)
		return v
	}
	switch prefix {
	case "ingress":
		if has(LoadBalancerDeleted) || has(LoadBalancerLeaked) {
			return nil
		}
		class := str("metadata", "annotations", "kubernetes.io/ingress.class")
		controller := ""
		if name := str("spec", "ingressClassName"); class == "" && name != "" {
			controller = a.fieldOf(a.registry+"ingressclasses/"+name, "spec", "controller")
			class = "class " + name + " (" + controller + ")"
		}
		switch {
		case controller == "ingress.k8s.aws/alb" || class == "alb":
			a.add(key, Effect{Kind: LoadBalancerLeaked, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(LoadBalancerLeaked),
				Summary: "the AWS Load Balancer Controller acts on this Ingress (" + class + ") and ignores its delete event: its ALB, listeners and target groups leak"})
		case class == "gce" || class == "gce-internal" || class == "gce-regional-external":
			a.add(key, Effect{Kind: LoadBalancerDeleted, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(LoadBalancerDeleted),
				Summary: "ingress-gce acts on this Ingress (" + class + "): its Google Cloud load balancer is deleted or leaks; a restore gets a new one, with a new address"})
		}
	case "gateway.networking.k8s.io/gateways":
		if has(LoadBalancerDeleted) || has(LoadBalancerLeaked) {
			return nil
		}
		name := str("spec", "gatewayClassName")
		controller := a.fieldOf(a.registry+"gateway.networking.k8s.io/gatewayclasses/"+name, "spec", "controllerName")
		a.add(key, Effect{Kind: LoadBalancerDeleted, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(LoadBalancerDeleted),
			Summary: "the Gateway controller of class " + name + " (" + orDefault(controller, "controller unknown") + ") provisions its load balancer: deleting the Gateway deletes it or leaks it; a restore gets a new one, with a new address"})
	case "snapshot.storage.k8s.io/volumesnapshots":
		return a.snapshotEffects(key, obj)
	case "karpenter.sh/nodeclaims":
		if !has(InstanceTerminated) {
			a.add(key, Effect{Kind: InstanceTerminated, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(InstanceTerminated),
				Summary: "Karpenter's garbage collector terminates the cloud instance of a NodeClaim it cannot find, without draining the node"})
		}
	case "cluster.x-k8s.io/machines":
		if !has(InstanceTerminated) {
			a.add(key, Effect{Kind: InstanceTerminated, Irreversible: true, WayOut: AcceptImpactFlag + " " + string(InstanceTerminated),
				Summary: "the garbage collector deletes its infrastructure machine and the provider deletes the VM, without draining the node"})
		}
	}
	return nil
}

// fieldOf reads a string field of the object stored under key, "" when it
// is missing or cannot be read.
func (a *analysis) fieldOf(key string, path ...string) string {
	v, _ := a.fieldRead(key, path...)
	return v
}

// fieldRead reads a string field of the object stored under key through
// the content reader; an error says the object is missing or unreadable.
func (a *analysis) fieldRead(key string, path ...string) (string, error) {
	kv, err := a.store.Get(a.ctx, key)
	if err != nil {
		return "", err
	}
	if kv == nil {
		return "", fmt.Errorf("%s does not exist", key)
	}
	obj, err := a.reader.Read(a.ctx, key, kv.Value)
	if err != nil {
		return "", err
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", key, err)
	}
	v, _, _ := unstructuredString(u, path...)
	return v, nil
}

func unstructuredString(obj map[string]any, path ...string) (string, bool, error) {
	return unstructured.NestedString(obj, path...)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
