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
// both are known; else etcd's cluster IDs when both are known. A source
// whose identity is unknown while this cluster's is known is refused too:
// a snapshot without kube-system is no snapshot of a Kubernetes cluster's
// whole keyspace. Nothing is refused when neither side can be told.
func SameCluster(source, here Identity) error {
	switch {
	case source.KubeSystemUID != "" && here.KubeSystemUID != "":
		if source.KubeSystemUID == here.KubeSystemUID {
			return nil
		}
	case source.ClusterID != "" && here.ClusterID != "":
		if source.ClusterID == here.ClusterID {
			return nil
		}
	case here.KubeSystemUID != "" && source.KubeSystemUID == "":
		return fmt.Errorf("%w: the source is %s, this cluster is %s", ErrUnknownCluster, source, here)
	default:
		return nil
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

// grantResources are the resources whose objects grant power cluster-wide:
// bindings of roles, the roles bound cluster-wide, admission webhooks and
// policies, aggregated APIs. Written from another cluster, they give its
// users, services and policies power here.
var grantResources = []string{
	"clusterrolebindings/", "clusterroles/", "rolebindings/", "roles/",
	"validatingwebhookconfigurations/", "mutatingwebhookconfigurations/",
	"validatingadmissionpolicies/", "validatingadmissionpolicybindings/",
	"mutatingadmissionpolicies/", "mutatingadmissionpolicybindings/",
	"apiregistration.k8s.io/apiservices/",
}

// IsGrant reports whether key (under prefix) holds an object that grants
// power: a role or binding, a webhook or admission policy, an APIService.
func IsGrant(prefix, key string) bool {
	rest, ok := strings.CutPrefix(key, prefix)
	if !ok {
		return false
	}
	for _, r := range grantResources {
		if strings.HasPrefix(rest, r) {
			return true
		}
	}
	return false
}
