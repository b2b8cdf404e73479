package render

import (
	"fmt"
	"io"

	"github.com/regghost/regghost/pkg/version"
)

// Version is regghost's version in every form -o can ask for.
func Version(info version.Info) Output {
	return Output{Doc: info, Human: func(w io.Writer, _, _ bool) error {
		fmt.Fprintf(w, "Version:       %s\nCommit:        %s\nGo:            %s\nPlatform:      %s\netcd client:   %s\nKubernetes:    %s\n",
			info.Version, info.Commit, info.GoVersion, info.Platform, info.EtcdClient, info.Kubernetes)
		return nil
	}}
}
