// Package nodeconfig finds how kube-apiserver reaches etcd on a
// control-plane node, from the files each distribution writes: kubeadm's
// and rke2's static pod manifests (kubespray uses kubeadm's), k3s's server
// directory, and OpenShift's static pod resources.
package nodeconfig

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// Found is what a node's files say about kube-apiserver's etcd.
type Found struct {
	// Source says where it was read, for the one line regghost prints.
	Source    string
	Endpoints []string
	CACert    string
	Cert      string
	Key       string
	// Prefix is --etcd-prefix as a registry prefix ("/registry/").
	Prefix string
	// EncryptionConfig is --encryption-provider-config, if set.
	EncryptionConfig string
	// Overrides is --etcd-servers-overrides: resources kept in other etcds.
	Overrides []string
	// EventTTL (--event-ttl) and LeaseReuse
	// (--lease-reuse-duration-seconds) say how kube-apiserver puts events
	// under etcd leases; 0 when not set (its defaults apply) or not read.
	EventTTL   time.Duration
	LeaseReuse time.Duration
	// LeaseFlagsFrom says where those were read when it is not Source
	// (k3s's config.yaml).
	LeaseFlagsFrom string
}

// ErrNotFound means the node holds none of the known layouts.
var ErrNotFound = errors.New("no kube-apiserver configuration found on this node")

// staticPods are kube-apiserver static pod manifests, most common first.
var staticPods = []struct{ path, dist string }{
	{"/etc/kubernetes/manifests/kube-apiserver.yaml", "kubeadm"},
	{"/var/lib/rancher/rke2/agent/pod-manifests/kube-apiserver.yaml", "rke2"},
}

// Discover reads the node whose filesystem is at root ("/" on the node;
// another directory in tests). Paths in the result are under root.
func Discover(root string) (*Found, error) {
	for _, sp := range staticPods {
		f, err := fromStaticPod(root, sp.path, sp.dist)
		if err == nil {
			return f, nil
		}
		if !os.IsNotExist(err) {
			return nil, err
		}
	}
	if f, err := fromOpenShift(root); err == nil || !errors.Is(err, ErrNotFound) {
		return f, err
	}
	return fromK3s(root)
}

// fromStaticPod reads kube-apiserver's flags from a static pod manifest.
func fromStaticPod(root, path, dist string) (*Found, error) {
	data, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		return nil, err
	}
	var pod corev1.Pod
	if err := yaml.Unmarshal(data, &pod); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	for _, c := range pod.Spec.Containers {
		args := append(append([]string{}, c.Command...), c.Args...)
		flags := parseFlags(args)
		if _, ok := flags["etcd-servers"]; !ok {
			continue
		}
		return fromFlags(root, flags, dist+" static pod "+path), nil
	}
	return nil, fmt.Errorf("%s has no kube-apiserver container with --etcd-servers", path)
}

// parseFlags reads "--name=value" and "--name value" arguments.
func parseFlags(args []string) map[string]string {
	out := map[string]string{}
	for i := 0; i < len(args); i++ {
		a, ok := strings.CutPrefix(args[i], "--")
		if !ok {
			continue
		}
		if name, value, ok := strings.Cut(a, "="); ok {
			out[name] = value
		} else if i+1 < len(args) && !strings.HasPrefix(args[i+1], "--") {
			out[a] = args[i+1]
			i++
		} else {
			out[a] = ""
		}
	}
	return out
}

// fromFlags turns kube-apiserver flags into a Found.
func fromFlags(root string, flags map[string]string, source string) *Found {
	f := &Found{Source: source, Prefix: "/registry/"}
	for _, ep := range strings.Split(flags["etcd-servers"], ",") {
		if ep = strings.TrimSpace(ep); ep != "" {
			f.Endpoints = append(f.Endpoints, ep)
		}
	}
	f.CACert, f.Cert, f.Key = under(root, flags["etcd-cafile"]), under(root, flags["etcd-certfile"]), under(root, flags["etcd-keyfile"])
	f.EncryptionConfig = under(root, flags["encryption-provider-config"])
	if p := flags["etcd-prefix"]; p != "" {
		f.Prefix = registryPrefix(p)
	}
	if o := flags["etcd-servers-overrides"]; o != "" {
		f.Overrides = strings.Split(o, ",")
	}
	f.leaseFlags(flags)
	return f
}

// leaseFlags reads how kube-apiserver puts events under etcd leases
// (--event-ttl, --lease-reuse-duration-seconds) from its flags; a flag
// absent or not parsed leaves its default.
func (f *Found) leaseFlags(flags map[string]string) {
	if d, err := time.ParseDuration(flags["event-ttl"]); err == nil {
		f.EventTTL = d
	}
	if n, err := strconv.Atoi(flags["lease-reuse-duration-seconds"]); err == nil {
		f.LeaseReuse = time.Duration(n) * time.Second
	}
}

// registryPrefix turns kube-apiserver's --etcd-prefix ("/registry",
// "kubernetes.io") into the key prefix regghost reads ("/registry/",
// "/kubernetes.io/").
func registryPrefix(p string) string {
	return "/" + strings.Trim(p, "/") + "/"
}

func under(root, path string) string {
	if path == "" {
		return ""
	}
	return filepath.Join(root, path)
}

// fromOpenShift reads the newest kube-apiserver static pod resources.
func fromOpenShift(root string) (*Found, error) {
	base := filepath.Join(root, "etc/kubernetes/static-pod-resources")
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil, ErrNotFound
	}
	best, bestN := "", -1
	for _, e := range entries {
		if n, err := strconv.Atoi(strings.TrimPrefix(e.Name(), "kube-apiserver-pod-")); err == nil && strings.HasPrefix(e.Name(), "kube-apiserver-pod-") && n > bestN {
			best, bestN = e.Name(), n
		}
	}
	if best == "" {
		return nil, ErrNotFound
	}
	dir := filepath.Join(base, best)
	f := &Found{Source: "OpenShift static pod resources " + strings.TrimPrefix(dir, root), Prefix: "/kubernetes.io/",
		Endpoints: []string{"https://localhost:2379"},
		CACert:    filepath.Join(dir, "configmaps/etcd-serving-ca/ca-bundle.crt"),
		Cert:      filepath.Join(dir, "secrets/etcd-client/tls.crt"), Key: filepath.Join(dir, "secrets/etcd-client/tls.key")}
	if data, err := os.ReadFile(filepath.Join(dir, "configmaps/config/config.yaml")); err == nil {
		var cfg struct {
			APIServerArguments map[string][]string `json:"apiServerArguments"`
		}
		if yaml.Unmarshal(data, &cfg) == nil {
			if eps := cfg.APIServerArguments["etcd-servers"]; len(eps) > 0 {
				f.Endpoints = eps
			}
			if p := cfg.APIServerArguments["etcd-prefix"]; len(p) > 0 {
				f.Prefix = registryPrefix(p[0])
			}
			flags := map[string]string{}
			for name, values := range cfg.APIServerArguments {
				if len(values) > 0 {
					flags[name] = values[len(values)-1]
				}
			}
			f.leaseFlags(flags)
		}
	}
	if enc := filepath.Join(dir, "secrets/encryption-config/encryption-config"); exists(enc) {
		f.EncryptionConfig = enc
	}
	return f, nil
}

// fromK3s reads k3s's server directory: embedded etcd with its client
// certificates, or the default SQLite datastore behind kine's socket.
func fromK3s(root string) (*Found, error) {
	server := filepath.Join(root, "var/lib/rancher/k3s/server")
	if !exists(server) {
		return nil, ErrNotFound
	}
	f := &Found{Prefix: "/registry/"}
	if flags := k3sAPIServerArgs(root); len(flags) > 0 {
		f.leaseFlags(flags)
		if f.EventTTL > 0 || f.LeaseReuse > 0 {
			f.LeaseFlagsFrom = "k3s's kube-apiserver-arg in /etc/rancher/k3s/config.yaml(.d)"
		}
	}
	if enc := filepath.Join(server, "cred/encryption-config.json"); exists(enc) {
		f.EncryptionConfig = enc
	}
	tls := filepath.Join(server, "tls/etcd")
	if exists(filepath.Join(tls, "client.crt")) {
		f.Source = "k3s embedded etcd (" + strings.TrimPrefix(tls, root) + ")"
		f.Endpoints = []string{"https://127.0.0.1:2379"}
		f.CACert, f.Cert, f.Key = filepath.Join(tls, "server-ca.crt"), filepath.Join(tls, "client.crt"), filepath.Join(tls, "client.key")
		return f, nil
	}
	sock := filepath.Join(server, "kine.sock")
	f.Source = "k3s with kine (" + strings.TrimPrefix(sock, root) + ")"
	f.Endpoints = []string{"unix://" + sock}
	return f, nil
}

// k3sAPIServerArgs are the kube-apiserver-arg values of k3s's
// configuration: /etc/rancher/k3s/config.yaml, then each file of
// config.yaml.d in name order, where kube-apiserver-arg replaces what came
// before and kube-apiserver-arg+ adds to it (k3s's own rule). Each value
// is "name=value"; the last of a name wins, as on a command line.
func k3sAPIServerArgs(root string) map[string]string {
	dir := filepath.Join(root, "etc/rancher/k3s")
	files := []string{filepath.Join(dir, "config.yaml")}
	// k3s reads every .yaml and .yml file of config.yaml.d, by name.
	if entries, err := os.ReadDir(filepath.Join(dir, "config.yaml.d")); err == nil {
		var drop []string
		for _, e := range entries {
			if ext := strings.ToLower(filepath.Ext(e.Name())); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				drop = append(drop, filepath.Join(dir, "config.yaml.d", e.Name()))
			}
		}
		sort.Strings(drop)
		files = append(files, drop...)
	}
	var args []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		var cfg map[string]any
		if yaml.Unmarshal(data, &cfg) != nil {
			continue
		}
		if v, ok := cfg["kube-apiserver-arg"]; ok {
			args = stringsOf(v)
		}
		args = append(args, stringsOf(cfg["kube-apiserver-arg+"])...)
	}
	flags := map[string]string{}
	for _, a := range args {
		if name, value, ok := strings.Cut(strings.TrimPrefix(a, "--"), "="); ok {
			flags[name] = value
		}
	}
	return flags
}

// stringsOf is a YAML value that is a string or a list of strings.
func stringsOf(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, e := range v {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// Describe is the one line regghost prints when it takes every setting from
// the node.
func (f *Found) Describe() string {
	return Fill(Settings{}, nil, f).Line
}
