// Package version says which regghost this is: its release, commit, Go
// version and the etcd and Kubernetes libraries built into it.
package version

import (
	"runtime"
	"runtime/debug"
)

// Version and Commit are stamped in at build time by `make release`:
//
//	-ldflags "-X github.com/regghost/regghost/pkg/version.Version=v0.3.0 -X github.com/regghost/regghost/pkg/version.Commit=abc1234"
var (
	Version = "dev"
	Commit  = ""
)

// Info is what `regghost version` prints.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
	// EtcdClient and Kubernetes are the versions of go.etcd.io/etcd/client/v3
	// and k8s.io/client-go compiled in.
	EtcdClient string `json:"etcdClient"`
	Kubernetes string `json:"kubernetes"`
}

// Get returns the build's version information. A binary built without
// stamps (go build, go install) takes its commit from the VCS information
// Go records.
func Get() Info {
	info := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return info
	}
	if info.Version == "dev" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && info.Commit == "" {
			info.Commit = s.Value
			if len(info.Commit) > 12 {
				info.Commit = info.Commit[:12]
			}
		}
	}
	for _, d := range bi.Deps {
		v := d.Version
		if d.Replace != nil {
			v = d.Replace.Version
		}
		switch d.Path {
		case "go.etcd.io/etcd/client/v3":
			info.EtcdClient = v
		case "k8s.io/client-go":
			info.Kubernetes = v
		}
	}
	if info.Commit == "" {
		info.Commit = "unknown"
	}
	return info
}

// String is the one-line form `regghost --version` prints.
func (i Info) String() string {
	return "regghost " + i.Version + " (commit " + i.Commit + ", " + i.GoVersion + ", " + i.Platform + "; etcd client " + i.EtcdClient + ", Kubernetes libraries " + i.Kubernetes + ")"
}
