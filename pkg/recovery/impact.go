package recovery

import (
	"context"
	"fmt"
	"strings"

	"go.etcd.io/etcd/api/v3/mvccpb"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// ImpactKind names something that writing an object back sets off.
type ImpactKind string

// The impacts of a recovery. Each is refused unless accepted: containers
// that ran cannot be un-run, a credential that was used cannot be
// un-used, storage deleted does not come back.
const (
	// ContainersStarted: a Pod that had not finished is started again by
	// its kubelet (or placed by the scheduler first).
	ContainersStarted ImpactKind = "containers-started"
	// CredentialRevived: a token Secret (ServiceAccount or bootstrap)
	// authenticates again.
	CredentialRevived ImpactKind = "credential-revived"
	// PodsCreated: a workload's controller creates pods (a Job runs again)
	// and adopts orphans its selector matches.
	PodsCreated ImpactKind = "pods-created"
	// StorageDeleted: a PersistentVolume with the Delete policy whose
	// claim is gone is released, and its storage deleted.
	StorageDeleted ImpactKind = "storage-destroyed"
	// DanglingReference: an APIService or webhook whose Service is gone
	// breaks discovery or admission for the whole cluster.
	DanglingReference ImpactKind = "dangling-reference"
	// DeletedAgain: every owner of the object is gone, so the garbage
	// collector deletes it again at once.
	DeletedAgain ImpactKind = "deleted-again"
)

// Acceptable lists the impacts --accept-impact takes on recover. A name
// says the same effect as purge's and unstick's (storage-destroyed).
var Acceptable = []ImpactKind{ContainersStarted, CredentialRevived, PodsCreated, StorageDeleted, DanglingReference, DeletedAgain}

// Impact is one thing writing an object sets off.
type Impact struct {
	Kind     ImpactKind `json:"kind"`
	Detail   string     `json:"detail"`
	Accepted bool       `json:"accepted,omitempty"`
}

// impacts says what writing o sets off, and notes what it does not stop;
// what its owners make of it is judged by owners.
func (j *judge) impacts(ctx context.Context, o *Object) ([]Impact, []string, error) {
	var out []Impact
	var notes []string
	add := func(k ImpactKind, format string, args ...any) {
		out = append(out, Impact{Kind: k, Detail: fmt.Sprintf(format, args...)})
	}
	switch t := o.Obj.(type) {
	case *corev1.Pod:
		if t.Status.Phase != corev1.PodSucceeded && t.Status.Phase != corev1.PodFailed {
			if t.Spec.NodeName != "" {
				add(ContainersStarted, "the kubelet on node %s starts its containers again", t.Spec.NodeName)
			} else {
				add(ContainersStarted, "the scheduler places it and its containers start")
			}
		}
	case *corev1.Secret:
		switch t.Type {
		case corev1.SecretTypeServiceAccountToken:
			add(CredentialRevived, "the token of ServiceAccount %s authenticates again", t.Annotations[corev1.ServiceAccountNameKey])
		case corev1.SecretTypeBootstrapToken:
			add(CredentialRevived, "the bootstrap token authenticates again (it joins nodes)")
		}
	case *corev1.ServiceAccount:
		add(CredentialRevived, "tokens issued to it before it was deleted authenticate again until they expire (they carry its UID)")
	case *appsv1.Deployment, *appsv1.ReplicaSet, *appsv1.StatefulSet, *appsv1.DaemonSet, *corev1.ReplicationController:
		add(PodsCreated, "its controller creates its pods and adopts orphans its selector matches")
	case *batchv1.Job:
		if !jobFinished(t) {
			add(PodsCreated, "the job controller runs it again")
		}
	case *batchv1.CronJob:
		if t.Spec.Suspend == nil || !*t.Spec.Suspend {
			add(PodsCreated, "the cronjob controller schedules its jobs again")
		}
	case *corev1.PersistentVolume:
		if c := t.Spec.ClaimRef; c != nil && t.Spec.PersistentVolumeReclaimPolicy == corev1.PersistentVolumeReclaimDelete {
			key := etcdscan.ObjectKey(j.Registry, "persistentvolumeclaims", c.Namespace, c.Name)
			alive, err := j.alive(ctx, key, string(c.UID))
			if err != nil {
				return nil, nil, err
			}
			if !alive {
				add(StorageDeleted, "its claim %s/%s (UID %s) is gone, or cannot be read here, and its policy is Delete: the PV controller deletes the storage", c.Namespace, c.Name, c.UID)
			}
		}
	case *corev1.PersistentVolumeClaim:
		if v := t.Spec.VolumeName; v != "" {
			alive, err := j.alive(ctx, etcdscan.ObjectKey(j.Registry, "persistentvolumes", "", v), "")
			if err != nil {
				return nil, nil, err
			}
			if !alive {
				notes = append(notes, fmt.Sprintf("its PersistentVolume %s is gone: it comes back Lost", v))
			}
		}
	case *apiregistrationv1.APIService:
		if s := t.Spec.Service; s != nil {
			if err := j.callee(ctx, "discovery of "+t.Spec.Group+" fails, and namespace deletions hang", "", s.Namespace, s.Name, add); err != nil {
				return nil, nil, err
			}
		}
	case *admissionregistrationv1.ValidatingWebhookConfiguration:
		for _, w := range t.Webhooks {
			if err := j.webhook(ctx, w.Name, w.ClientConfig, w.FailurePolicy, add); err != nil {
				return nil, nil, err
			}
		}
	case *admissionregistrationv1.MutatingWebhookConfiguration:
		for _, w := range t.Webhooks {
			if err := j.webhook(ctx, w.Name, w.ClientConfig, w.FailurePolicy, add); err != nil {
				return nil, nil, err
			}
		}
	case *certificatesv1.CertificateSigningRequest:
		if csrApproved(t) && len(t.Status.Certificate) == 0 {
			add(CredentialRevived, "it is approved and has no certificate yet: the signer %s issues one, which cannot be revoked", t.Spec.SignerName)
		}
	case *corev1.Node:
		add(PodsCreated, "the scheduler and the DaemonSet controller place pods on node %s again", t.Name)
	case *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
		notes = append(notes, "the access it grants comes back")
	}
	if o.Stage == StageCRDs {
		if crd, err := crdOf(o); err == nil && crd.Spec.Conversion != nil && crd.Spec.Conversion.Webhook != nil && crd.Spec.Conversion.Webhook.ClientConfig != nil {
			if s := crd.Spec.Conversion.Webhook.ClientConfig.Service; s != nil {
				if err := j.callee(ctx, "reads of its custom resources at another version fail", "", s.Namespace, s.Name, add); err != nil {
					return nil, nil, err
				}
			}
		}
	}
	return out, notes, nil
}

// webhook adds a dangling reference for a webhook whose Service is gone
// or has no ready endpoint.
func (j *judge) webhook(ctx context.Context, name string, cc admissionregistrationv1.WebhookClientConfig, policy *admissionregistrationv1.FailurePolicyType, add func(ImpactKind, string, ...any)) error {
	s := cc.Service
	if s == nil {
		return nil
	}
	fail := "Fail"
	if policy != nil {
		fail = string(*policy)
	}
	return j.callee(ctx, "the requests it matches fail (failurePolicy "+fail+")", "webhook "+name+" calls ", s.Namespace, s.Name, add)
}

// callee adds a dangling reference when the Service an object calls is
// gone, or down (no ready endpoint): effect is what then breaks.
func (j *judge) callee(ctx context.Context, effect, who, ns, name string, add func(ImpactKind, string, ...any)) error {
	if who == "" {
		who = "it calls "
	}
	state, err := j.serviceState(ctx, ns, name)
	if err != nil || state == "" {
		return err
	}
	add(DanglingReference, "%sService %s/%s, which %s: %s", who, ns, name, state, effect)
	return nil
}

// serviceState says whether a Service is gone (absent live and not
// recovered) or down (no ready endpoint in its live EndpointSlices); ""
// when it is up.
func (j *judge) serviceState(ctx context.Context, ns, name string) (string, error) {
	alive, err := j.alive(ctx, etcdscan.ObjectKey(j.Registry, "services/specs", ns, name), "")
	if err != nil || !alive {
		return "is gone", err
	}
	p := j.Registry + "endpointslices/" + ns + "/"
	ready, unread := false, 0
	err = j.Live.Range(ctx, p, etcdscan.PrefixEnd(p), false, func(kv *mvccpb.KeyValue) error {
		obj, _, err := decode.Typed(kv.Value)
		if err != nil {
			unread++
			return nil
		}
		es, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || es.Labels[discoveryv1.LabelServiceName] != name {
			return nil
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
				ready = true
			}
		}
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("read the live EndpointSlices of %s: %w", ns, err)
	}
	switch {
	case !ready && unread > 0:
		return fmt.Sprintf("has no ready endpoint that can be read here (%d EndpointSlices of %s cannot be)", unread, ns), nil
	case !ready:
		return "has no ready endpoint", nil
	}
	return "", nil
}

// alive says whether key exists live (with uid, when given) or is
// recovered by this run (with that uid).
func (j *judge) alive(ctx context.Context, key, uid string) (bool, error) {
	if o := j.byKey[key]; o != nil && o.Action == Recover && o.Meta != nil && (uid == "" || string(o.Meta.Meta.UID) == uid) {
		return true, nil
	}
	kv, err := j.Live.Get(ctx, key)
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	if kv == nil {
		return false, nil
	}
	if uid == "" {
		return true, nil
	}
	id, err := j.uidOf(ctx, kv)
	if err != nil {
		// Present, its UID unread: not taken as alive, so what depends on
		// it is refused rather than decided blind.
		return false, nil
	}
	return id == uid, nil
}

func jobFinished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

func csrApproved(c *certificatesv1.CertificateSigningRequest) bool {
	approved := false
	for _, cond := range c.Status.Conditions {
		switch cond.Type {
		case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
			return false
		case certificatesv1.CertificateApproved:
			approved = cond.Status != corev1.ConditionFalse
		}
	}
	return approved
}

// ParseImpact reads one --accept-impact word of recover; storage-deleted is
// the old name of storage-destroyed.
func ParseImpact(s string) (ImpactKind, error) {
	if s == "storage-deleted" {
		s = string(StorageDeleted)
	}
	for _, k := range Acceptable {
		if string(k) == s {
			return k, nil
		}
	}
	return "", fmt.Errorf("%q is not an impact of recover (one of %s)", s, AcceptableNames())
}

// AcceptableNames are the impacts a recover may be told to accept, as
// --accept-impact takes them.
func AcceptableNames() string {
	names := make([]string, len(Acceptable))
	for i, k := range Acceptable {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// ParseAccepted reads every --accept-impact word of recover.
func ParseAccepted(words []string) (map[ImpactKind]bool, error) {
	accept := map[ImpactKind]bool{}
	for _, w := range words {
		k, err := ParseImpact(w)
		if err != nil {
			return nil, err
		}
		accept[k] = true
	}
	return accept, nil
}
