package apiview

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Peers returns a View of every kube-apiserver of the cluster: the ready
// endpoints of the default/kubernetes Service, where each kube-apiserver
// registers itself (--advertise-address, --secure-port). On an HA control
// plane one of them may read a value another cannot (a stale encryption
// config), so a verdict that rests on "the API server cannot read it" asks
// each. None is returned when the Service lists no endpoint (a control plane
// run with --endpoint-reconciler-type=none). TLS is verified against the name the kubeconfig uses, which the
// serving certificates of every kube-apiserver hold.
func (v *View) Peers(ctx context.Context) ([]*View, error) {
	kube, err := kubernetes.NewForConfig(v.Config)
	if err != nil {
		return nil, fmt.Errorf("api server client: %w", err)
	}
	addrs, err := apiserverEndpoints(ctx, kube)
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(v.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", v.Config.Host, err)
	}
	var out []*View
	for _, addr := range addrs {
		p, err := v.at(base, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// At is the kube-apiserver at addr (host:port), reached with this view's
// credentials and TLS verified against the name the kubeconfig uses.
func (v *View) At(addr string) (*View, error) {
	base, err := url.Parse(v.Config.Host)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", v.Config.Host, err)
	}
	return v.at(base, addr)
}

func (v *View) at(base *url.URL, addr string) (*View, error) {
	cfg := rest.CopyConfig(v.Config)
	cfg.Host = "https://" + addr
	if cfg.TLSClientConfig.ServerName == "" && !cfg.TLSClientConfig.Insecure {
		cfg.TLSClientConfig.ServerName = base.Hostname()
	}
	return New(cfg)
}

// apiserverEndpoints lists host:port of each ready endpoint of the
// default/kubernetes Service, from its EndpointSlices.
func apiserverEndpoints(ctx context.Context, kube kubernetes.Interface) ([]string, error) {
	slices, err := kube.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=kubernetes"})
	if err != nil {
		return nil, fmt.Errorf("list the endpoints of the default/kubernetes Service: %w", err)
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range slices.Items {
		port := 0
		for _, p := range s.Ports {
			if p.Port != nil && (p.Name == nil || *p.Name == "https") {
				port = int(*p.Port)
			}
		}
		if port == 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready {
				continue
			}
			for _, a := range e.Addresses {
				hp := net.JoinHostPort(a, strconv.Itoa(port))
				if !seen[hp] {
					seen[hp] = true
					out = append(out, hp)
				}
			}
		}
	}
	sort.Strings(out)
	return out, nil
}
