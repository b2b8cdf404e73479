package nodeconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// EtcdMember is what a node's files say about the etcd member that runs on
// the node: its name, where its data directory is on the node's disk, and
// the quota it was started with.
type EtcdMember struct {
	// Source says where it was read.
	Source string `json:"source"`
	// Name is etcd's --name: the member's name in the member list.
	Name string `json:"name,omitempty"`
	// DataDir is etcd's --data-dir as a path on the node (under root): the
	// container's path mapped through the pod's hostPath volume. Empty
	// when the files do not say, or the directory is on no hostPath.
	DataDir string `json:"dataDir,omitempty"`
	// WalDir is etcd's --wal-dir as a path on the node, when it keeps its
	// write-ahead log apart from the data directory (kubeadm does not).
	WalDir string `json:"walDir,omitempty"`
	// QuotaBytes is --quota-backend-bytes; 0 when not set (etcd's default,
	// 2 GiB), negative when the quota is off.
	QuotaBytes int64 `json:"quotaBytes,omitempty"`
}

// etcdPods are etcd static pod manifests, most common first. rke2's pod
// passes --config-file: its settings are in that file.
var etcdPods = []struct{ path, dist string }{
	{"/etc/kubernetes/manifests/etcd.yaml", "kubeadm"},
	{"/var/lib/rancher/rke2/agent/pod-manifests/etcd.yaml", "rke2"},
}

// DiscoverEtcd reads the etcd static pod of the node whose filesystem is at
// root. It returns ErrNotFound when the node has none of the known
// manifests (k3s runs etcd inside its own process, with no manifest; etcd
// as a systemd unit has none either).
func DiscoverEtcd(root string) (*EtcdMember, error) {
	for _, sp := range etcdPods {
		data, err := os.ReadFile(filepath.Join(root, sp.path))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", sp.path, err)
		}
		return etcdFromPod(root, data, sp.dist+" static pod "+sp.path)
	}
	return nil, ErrNotFound
}

// etcdFromPod reads the etcd container's flags (or its --config-file) from a
// static pod manifest.
func etcdFromPod(root string, data []byte, source string) (*EtcdMember, error) {
	var pod corev1.Pod
	if err := yaml.Unmarshal(data, &pod); err != nil {
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	for _, c := range pod.Spec.Containers {
		args := append(append([]string{}, c.Command...), c.Args...)
		if len(args) == 0 || !strings.Contains(filepath.Base(args[0]), "etcd") {
			continue
		}
		flags := parseFlags(args)
		m := &EtcdMember{Source: source}
		// etcd ignores its other flags when given a config file.
		if file := flags["config-file"]; file != "" {
			host, ok := hostPathOf(&pod, &c, file)
			if !ok {
				return nil, fmt.Errorf("%s: etcd's --config-file %s is on no hostPath volume", source, file)
			}
			raw, err := os.ReadFile(filepath.Join(root, host))
			if err != nil {
				return nil, fmt.Errorf("%s: read etcd's config file: %w", source, err)
			}
			var cfg map[string]any
			if err := yaml.Unmarshal(raw, &cfg); err != nil {
				return nil, fmt.Errorf("%s: etcd's config file %s: %w", source, host, err)
			}
			m.Source += " and " + host
			flags = map[string]string{}
			for _, k := range []string{"name", "data-dir", "wal-dir", "quota-backend-bytes"} {
				if v, ok := cfg[k]; ok && v != nil {
					flags[k] = fmt.Sprint(v)
				}
			}
		}
		m.Name = flags["name"]
		if q := flags["quota-backend-bytes"]; q != "" {
			n, err := strconv.ParseFloat(q, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: --quota-backend-bytes %q is not a number", source, q)
			}
			m.QuotaBytes = int64(n)
		}
		if dir := flags["data-dir"]; dir != "" {
			if host, ok := hostPathOf(&pod, &c, dir); ok {
				m.DataDir = filepath.Join(root, host)
			}
		}
		if dir := flags["wal-dir"]; dir != "" {
			if host, ok := hostPathOf(&pod, &c, dir); ok {
				m.WalDir = filepath.Join(root, host)
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("%s has no etcd container", source)
}

// hostPathOf maps a path inside container c to the node's path through the
// hostPath volume mounted deepest above it.
func hostPathOf(pod *corev1.Pod, c *corev1.Container, path string) (string, bool) {
	best, host := "", ""
	for _, vm := range c.VolumeMounts {
		mp := filepath.Clean(vm.MountPath)
		rel, err := filepath.Rel(mp, filepath.Clean(path))
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || len(mp) <= len(best) {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.Name == vm.Name && v.HostPath != nil {
				best, host = mp, filepath.Join(v.HostPath.Path, vm.SubPath, rel)
			}
		}
	}
	return host, best != ""
}
