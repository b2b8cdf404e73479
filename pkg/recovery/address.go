package recovery

import (
	"context"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	corev1 "k8s.io/api/core/v1"

	"github.com/regghost/regghost/pkg/decode"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// addresses are the cluster IPs and node ports the live Services hold.
type addresses struct {
	ips, nodePorts map[string]string
	// unread counts live Services that could not be read.
	unread int
}

// addressTaken says why a Service cannot come back with its cluster IPs
// and node ports: a live Service holds one of them now (two Services
// would share it).
func (j *judge) addressTaken(ctx context.Context, o *Object) (string, error) {
	svc, ok := o.Obj.(*corev1.Service)
	if !ok {
		return "", nil
	}
	if j.addrs == nil {
		a := &addresses{ips: map[string]string{}, nodePorts: map[string]string{}}
		p := j.Registry + "services/specs/"
		err := j.Live.Range(ctx, p, etcdscan.PrefixEnd(p), false, func(kv *mvccpb.KeyValue) error {
			obj, _, err := decode.Typed(kv.Value)
			if err != nil {
				a.unread++
				return nil
			}
			s, ok := obj.(*corev1.Service)
			if !ok {
				a.unread++
				return nil
			}
			for _, ip := range clusterIPs(s) {
				a.ips[ip] = s.Namespace + "/" + s.Name
			}
			for _, port := range s.Spec.Ports {
				if port.NodePort != 0 {
					a.nodePorts[fmt.Sprintf("%s/%d", port.Protocol, port.NodePort)] = s.Namespace + "/" + s.Name
				}
			}
			return nil
		})
		if err != nil {
			return "", fmt.Errorf("read the live Services: %w", err)
		}
		j.addrs = a
	}
	for _, ip := range clusterIPs(svc) {
		if who := j.addrs.ips[ip]; who != "" {
			return fmt.Sprintf("its cluster IP %s is held by the live Service %s now: two Services would share it; `regghost recover -o yaml` and `kubectl apply` give it a new one", ip, who), nil
		}
		// The IP allocator's own record (networking.k8s.io IPAddress),
		// held for a Service that may not be stored under services/.
		key := j.Registry + "ipaddresses/" + ip
		if kv, err := j.Live.Get(ctx, key); err != nil {
			return "", fmt.Errorf("read %s: %w", key, err)
		} else if kv != nil {
			return fmt.Sprintf("its cluster IP %s is allocated now (%s exists): two Services would share it; `regghost recover -o yaml` and `kubectl apply` give it a new one", ip, key), nil
		}
	}
	for _, port := range svc.Spec.Ports {
		if who := j.addrs.nodePorts[fmt.Sprintf("%s/%d", port.Protocol, port.NodePort)]; port.NodePort != 0 && who != "" {
			return fmt.Sprintf("its node port %d/%s is held by the live Service %s now: two Services would share it; its manifest (`regghost recover -o yaml`) keeps the port, so `kubectl apply` fails until spec.ports[].nodePort is removed from it (then it is given a new one)", port.NodePort, port.Protocol, who), nil
		}
	}
	if j.addrs.unread > 0 && (len(clusterIPs(svc)) > 0) {
		return fmt.Sprintf("whether its cluster IP is held by another Service cannot be told: %d live Services cannot be read here", j.addrs.unread), nil
	}
	return "", nil
}

// clusterIPs are the allocated cluster IPs of a Service (not None).
func clusterIPs(s *corev1.Service) []string {
	ips := s.Spec.ClusterIPs
	if len(ips) == 0 && s.Spec.ClusterIP != "" {
		ips = []string{s.Spec.ClusterIP}
	}
	var out []string
	for _, ip := range ips {
		if ip != "" && ip != corev1.ClusterIPNone {
			out = append(out, ip)
		}
	}
	return out
}
