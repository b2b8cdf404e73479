// Command image builds regghost's OCI image index from the static binaries
// hack/release.sh builds (see internal/image), with no Docker daemon and no
// base image. `make image` and `make release` run it:
//
//	go run ./hack/image -version v0.1.0 \
//	    -binary linux/amd64=dist/regghost-v0.1.0-linux-amd64 \
//	    -binary linux/arm64=dist/regghost-v0.1.0-linux-arm64 -out dist/image
//
// The image's creation time is the commit's (Go's vcs.time in the
// binaries), or SOURCE_DATE_EPOCH when set: two builds of one commit give
// one digest.
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/regghost/regghost/internal/image"
)

// binaryFlags collects -binary PLATFORM=PATH.
type binaryFlags map[string]string

func (b binaryFlags) String() string { return fmt.Sprint(map[string]string(b)) }

func (b binaryFlags) Set(v string) error {
	p, path, ok := strings.Cut(v, "=")
	if !ok || p == "" || path == "" {
		return fmt.Errorf("want PLATFORM=PATH, e.g. linux/amd64=dist/regghost-linux-amd64")
	}
	b[p] = path
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func run() error {
	o := image.Options{Binaries: binaryFlags{}}
	flag.StringVar(&o.Repository, "repository", "ghcr.io/regghost/regghost", "image name without tag")
	flag.StringVar(&o.Version, "version", "", "version: the tag and org.opencontainers.image.version (hack/version.sh)")
	flag.StringVar(&o.Source, "source", "https://github.com/regghost/regghost", "source repository URL (org.opencontainers.image.source)")
	flag.StringVar(&o.Revision, "revision", "", "commit (default: vcs.revision of the binaries)")
	flag.StringVar(&o.Out, "out", "dist/image", "output directory, replaced as a whole")
	created := flag.String("created", "", "creation time, RFC 3339 (default: SOURCE_DATE_EPOCH, else vcs.time of the binaries)")
	flag.Var(binaryFlags(o.Binaries), "binary", "PLATFORM=PATH of a static regghost binary, once per platform")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", flag.Arg(0))
	}
	if o.Version == "" {
		return fmt.Errorf("-version is required")
	}
	switch epoch := os.Getenv("SOURCE_DATE_EPOCH"); {
	case *created != "":
		t, err := time.Parse(time.RFC3339, *created)
		if err != nil {
			return fmt.Errorf("-created: %w", err)
		}
		o.Created = t
	case epoch != "":
		secs, err := strconv.ParseInt(epoch, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q: not a number of seconds", epoch)
		}
		o.Created = time.Unix(secs, 0)
	}
	res, err := image.Build(o)
	if err != nil {
		return err
	}
	fmt.Printf("image %s\n", res.Reference)
	fmt.Printf("  index        %s  OCI layout %s\n", res.Index, res.Layout)
	for _, pi := range res.Images {
		fmt.Printf("  %-12s %s  %.1f MiB to pull  docker load -i %s\n", pi.Platform.OS+"/"+pi.Platform.Architecture, pi.Digest, float64(pi.Compressed)/(1<<20), pi.DockerArchive)
	}
	fmt.Printf("  push it:     crane push %s REGISTRY/regghost:%s\n", res.Layout, strings.TrimPrefix(res.Reference, o.Repository+":"))
	return nil
}
