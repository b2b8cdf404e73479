package members

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/regghost/regghost/pkg/etcdmembers"
)

// Distribution is a Kubernetes distribution that manages etcd's member
// list itself: a member removed or added beside it fights its supervisor.
type Distribution struct {
	Name string `json:"name"`
	// Evidence says what showed it.
	Evidence string `json:"evidence"`
	// Procedure is the distribution's own way to replace a member.
	Procedure string `json:"procedure"`
}

// k3sName is how k3s and rke2 name their etcd members: the node's name,
// a dash and the first 8 hex digits of a UUID (pkg/etcd setName).
var k3sName = regexp.MustCompile(`^.+-[0-9a-f]{8}$`)

// distributionProcedures are the distributions' own ways.
var distributionProcedures = map[string]string{
	"k3s": "k3s's supervisor adds, promotes and removes etcd members itself (a learner that makes no progress for 5 minutes is " +
		"removed): delete the member's node (`kubectl delete node NODE`: k3s removes its etcd member), then on that node stop k3s, " +
		"move /var/lib/rancher/k3s/server/db aside and start k3s again to join as a new member (docs.k3s.io/cli/etcd-snapshot)",
	"rke2": "rke2's supervisor adds, promotes and removes etcd members itself (a learner that makes no progress for 5 minutes is " +
		"removed): delete the member's node (`kubectl delete node NODE`: rke2 removes its etcd member), then on that node stop " +
		"rke2-server, move /var/lib/rancher/rke2/server/db aside and start it again to join as a new member (docs.rke2.io/datastore/backup_restore)",
	"OpenShift": "the cluster-etcd-operator owns etcd's members: follow OpenShift's \"Replacing an unhealthy etcd member\" " +
		"(docs.openshift.com, Backup and restore, Control plane backup and restore)",
}

// detectDistribution looks for what k3s, rke2 or OpenShift leave in etcd:
// k3s's and rke2's keys (k3s/apiaddresses, k3s/etcd/learnerProgress: no
// leading slash), their member names (<node>-<8 hex digits>), OpenShift's
// storage prefix (/kubernetes.io) and its API groups (config.openshift.io).
// nil when none is found.
func detectDistribution(ctx context.Context, cli *clientv3.Client, registry string, list []etcdmembers.Member, timeout time.Duration) *Distribution {
	found := func(name, evidence string) *Distribution {
		return &Distribution{Name: name, Evidence: evidence, Procedure: distributionProcedures[name]}
	}
	// A key that cannot be read is no answer: not knowing whether this
	// is a distribution that manages its own members refuses too.
	var unread error
	first := func(prefix string) string {
		gctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		resp, err := cli.Get(gctx, prefix, clientv3.WithPrefix(), clientv3.WithKeysOnly(), clientv3.WithLimit(1), clientv3.WithSerializable())
		if err != nil {
			if unread == nil {
				unread = fmt.Errorf("read %s: %w", prefix, err)
			}
			return ""
		}
		if len(resp.Kvs) == 0 {
			return ""
		}
		return string(resp.Kvs[0].Key)
	}
	for _, prog := range []string{"k3s", "rke2"} {
		if k := first(prog + "/"); k != "" {
			return found(prog, "etcd holds "+prog+"'s own key "+k)
		}
	}
	registry = "/" + strings.Trim(registry, "/") + "/"
	for _, prefix := range []string{registry + "config.openshift.io/", "/kubernetes.io/config.openshift.io/", "/openshift.io/"} {
		if k := first(prefix); k != "" {
			return found("OpenShift", "etcd holds OpenShift's "+k)
		}
	}
	if unread != nil {
		return &Distribution{Name: "perhaps a distribution", Evidence: "its keys could not be read: " + unread.Error(),
			Procedure: "whether k3s, rke2 or OpenShift manages these members cannot be told; run again once etcd answers"}
	}
	named := 0
	for _, m := range list {
		if k3sName.MatchString(m.Name) {
			named++
		}
	}
	if len(list) > 0 && named == len(list) {
		return found("k3s", "every member is named as k3s and rke2 name them (<node>-<8 hex digits>)")
	}
	return nil
}
