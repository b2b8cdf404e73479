package backup

import (
	"context"
	"errors"
	"fmt"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/decode"
)

// Identity names a cluster: the UID of its kube-system namespace (the
// Kubernetes cluster's identity, kept by an etcd restored from a snapshot),
// and etcd's cluster ID where there is one (kine has none).
type Identity struct {
	KubeSystemUID string `json:"kubeSystemUID,omitempty"`
	ClusterID     string `json:"clusterID,omitempty"`
	// Unknown says why the kube-system UID could not be read (no such
	// namespace, an encrypted value no key here opens); empty when it was.
	Unknown string `json:"unknown,omitempty"`
}

// String names the identity for a refusal.
func (id Identity) String() string {
	var parts []string
	if id.KubeSystemUID != "" {
		parts = append(parts, "kube-system uid "+id.KubeSystemUID)
	}
	if id.ClusterID != "" {
		parts = append(parts, "etcd cluster "+id.ClusterID)
	}
	if len(parts) == 0 {
		if id.Unknown != "" {
			return "unknown (" + id.Unknown + ")"
		}
		return "unknown"
	}
	return strings.Join(parts, ", ")
}

// Of is the identity recorded in a backup's header.
func (b *Backup) Of() Identity {
	id := Identity{KubeSystemUID: b.KubeSystemUID, ClusterID: b.ClusterID}
	if id.KubeSystemUID == "" {
		id.Unknown = "the backup does not record its kube-system uid"
	}
	return id
}

// ErrOtherCluster is returned (wrapped) when what a command would write came
// from another cluster than the one it writes to.
var ErrOtherCluster = errors.New("it comes from another cluster")

// ErrUnknownCluster is returned (wrapped) when the cluster a source came
// from cannot be told, while this cluster's can.
var ErrUnknownCluster = errors.New("which cluster it comes from cannot be told")

// SameCluster compares the identity of a source (a backup, a snapshot, an
// older revision) with this cluster's. The kube-system UIDs decide when
// both are known. etcd's cluster IDs decide only when neither UID is
// known: a cluster ID is derived from the peer URLs and the cluster token
// alone, so a cluster rebuilt on the same node with kubeadm's defaults
// (or two kind clusters) shares it, and it cannot stand in for a UID one
// side has (different cluster IDs still tell another cluster). When the UIDs cannot be compared while one is known, the
// source is refused (ErrUnknownCluster): a snapshot without kube-system,
// or a cluster whose kube-system cannot be read here (encrypted with a key
// not given), cannot be told apart from another cluster's. Only where
// neither side can be told at all (a bare etcd that no Kubernetes wrote)
// is nothing refused.
func SameCluster(source, here Identity) error {
	switch {
	case source.KubeSystemUID != "" && here.KubeSystemUID != "":
		if source.KubeSystemUID == here.KubeSystemUID {
			return nil
		}
	case source.KubeSystemUID != "" || here.KubeSystemUID != "":
		// etcd cluster IDs that differ still tell another cluster.
		if source.ClusterID != "" && here.ClusterID != "" && source.ClusterID != here.ClusterID {
			break
		}
		return fmt.Errorf("%w: the source is %s, this cluster is %s", ErrUnknownCluster, source, here)
	case source.ClusterID != "" && here.ClusterID != "":
		if source.ClusterID == here.ClusterID {
			return nil
		}
	case source.KubeSystemUID == "" && source.ClusterID == "" && here.KubeSystemUID == "" && here.ClusterID == "":
		return nil
	default:
		return fmt.Errorf("%w: the source is %s, this cluster is %s", ErrUnknownCluster, source, here)
	}
	return fmt.Errorf("%w: the source is %s, this cluster is %s", ErrOtherCluster, source, here)
}

// Decrypter opens an encrypted value (a kube-system namespace stored with
// encryption at rest); nil when there is no key.
type Decrypter func(ctx context.Context, key string, value []byte) ([]byte, error)

// KubeSystemUID reads the UID in a stored kube-system namespace value,
// decrypting it with dec when it is encrypted. why says why it could not
// be read.
func KubeSystemUID(ctx context.Context, key string, value []byte, dec Decrypter) (uid, why string) {
	if value == nil {
		return "", "no kube-system namespace is stored"
	}
	obj, err := decode.Meta(value)
	if err == nil && obj.Encryption != nil {
		if dec == nil {
			return "", "kube-system is encrypted and no key here opens it"
		}
		plain, derr := dec(ctx, key, value)
		if derr != nil {
			return "", fmt.Sprintf("kube-system could not be decrypted: %v", derr)
		}
		obj, err = decode.Meta(plain)
	}
	if err != nil {
		return "", fmt.Sprintf("kube-system could not be decoded: %v", err)
	}
	if obj.Encryption != nil || obj.Meta.UID == "" {
		return "", "kube-system has no uid"
	}
	return string(obj.Meta.UID), ""
}

// ReadIdentity reads this cluster's identity: etcd's cluster ID from the
// first endpoint that answers (none on kine), and the kube-system UID from
// the namespace stored under prefix.
func ReadIdentity(ctx context.Context, cli *clientv3.Client, prefix string, dec Decrypter) (Identity, error) {
	var id Identity
	var errs []error
	for _, ep := range cli.Endpoints() {
		st, err := cli.Status(ctx, ep)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if st.Header != nil && st.Header.ClusterId != 0 {
			id.ClusterID = fmt.Sprintf("%x", st.Header.ClusterId)
		}
		errs = nil
		break
	}
	if errs != nil {
		return id, fmt.Errorf("read the etcd cluster ID: %w", errors.Join(errs...))
	}
	key := prefix + "namespaces/kube-system"
	resp, err := cli.Get(ctx, key)
	if err != nil {
		return id, fmt.Errorf("read %s: %w", key, err)
	}
	var value []byte
	if len(resp.Kvs) > 0 {
		value = resp.Kvs[0].Value
	}
	id.KubeSystemUID, id.Unknown = KubeSystemUID(ctx, key, value, dec)
	return id, nil
}

// grantResources are the resources whose objects grant power: bindings
// of roles and the roles they bind, admission webhooks and policies,
// aggregated APIs, CRDs (a conversion webhook receives every custom
// resource), and bootstrap tokens (credentials to join the cluster).
// Written from another cluster, they give its users, services and
// endpoints power here.
var grantResources = []string{
	"clusterrolebindings/", "clusterroles/", "rolebindings/", "roles/",
	"validatingwebhookconfigurations/", "mutatingwebhookconfigurations/",
	"validatingadmissionpolicies/", "validatingadmissionpolicybindings/",
	"mutatingadmissionpolicies/", "mutatingadmissionpolicybindings/",
	"apiregistration.k8s.io/apiservices/", "apiextensions.k8s.io/customresourcedefinitions/",
	"secrets/kube-system/bootstrap-token-",
}

// IsGrant reports whether key holds an object that grants power (see
// grantResources). It looks for the resource under prefix, and, for a key
// written under another prefix (a backup of a cluster with another
// --etcd-prefix), anywhere in the key: a refusal too many, never one too few.
func IsGrant(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	for _, r := range grantResources {
		if ok && strings.HasPrefix(rest, r) || !ok && strings.Contains(key, "/"+r) {
			return true
		}
	}
	return false
}
