package apiview

import (
	"os"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// AdminConf is where kubeadm leaves the cluster-admin kubeconfig on
// control-plane nodes.
const AdminConf = "/etc/kubernetes/admin.conf"

// Options say which API server to reach.
type Options struct {
	// Kubeconfig is an explicit kubeconfig file; empty means KUBECONFIG,
	// then ~/.kube/config, then AdminConf.
	Kubeconfig string
	// Context is the kubeconfig context (empty: the current one).
	Context string
	// Timeout bounds each request.
	Timeout time.Duration
}

// Open finds the kubeconfig as kubectl does, with kubeadm's admin.conf as
// the last resort on a control-plane node, and checks that the API server
// answers. It returns nil and the reason in one line when it cannot be used.
func Open(o Options) (*View, string) {
	cfg, err := o.RESTConfig()
	if err != nil {
		return nil, "no usable kubeconfig: " + firstLine(err)
	}
	return open(cfg)
}

// open connects to the API server of cfg and checks that it answers.
func open(cfg *rest.Config) (*View, string) {
	view, err := New(cfg)
	if err != nil {
		return nil, firstLine(err)
	}
	v, err := view.Version()
	if err != nil {
		return nil, "API server unreachable: " + firstLine(err)
	}
	view.ServerVersion = v
	return view, ""
}

// loadingRules find the kubeconfig as kubectl does, with kubeadm's
// admin.conf as the last resort on a control-plane node.
func (o Options) loadingRules() *clientcmd.ClientConfigLoadingRules {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	} else if os.Getenv("KUBECONFIG") == "" {
		if _, err := os.Stat(rules.GetDefaultFilename()); err != nil {
			if _, err := os.Stat(AdminConf); err == nil {
				rules.ExplicitPath = AdminConf
			}
		}
	}
	return rules
}

// RESTConfig reads the kubeconfig (in a pod without one, the pod's
// ServiceAccount) into a client configuration, without asking the API
// server anything.
func (o Options) RESTConfig() (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(o.loadingRules(), &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = o.Timeout
	return cfg, nil
}

func firstLine(err error) string {
	line, _, _ := strings.Cut(err.Error(), "\n")
	return line
}
