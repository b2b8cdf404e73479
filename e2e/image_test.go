package e2e

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/tls"
	"debug/buildinfo"
	"debug/elf"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/regghost/regghost/internal/image"
)

// builtImage is what `make image` (hack/release.sh image) wrote in dist.
type builtImage struct {
	dist, version, revision, repo string
	created                       time.Time
}

func (b builtImage) ref() string { return b.repo + ":" + b.version }

func (b builtImage) binary(arch string) string {
	return filepath.Join(b.dist, "regghost-"+b.version+"-linux-"+arch)
}

// TestImage: `make image` builds an OCI index whose images run regghost
// serve for the e2e cluster as deploy/'s static pod runs it:
//   - the index, each image's config and its layer read back: platform,
//     entrypoint, user, OCI annotations at the commit's time, the release
//     binary, an SBOM of every module it links;
//   - the hack/image program run again on the same binaries gives the same
//     digest;
//   - the copies of deploy/ name the tag, and the chart renders with it;
//   - the host platform's binary, unpacked from the layer into a root of
//     its own with the node's /etc/kubernetes where the static pod mounts
//     it, run with the static pod's arguments, serves /metrics with the
//     cluster's ghosts;
//   - where a container runtime runs (podman, or docker with a daemon),
//     the docker archive is loaded and run there the same way.
func TestImage(t *testing.T) {
	parallel(t)
	b := makeImage(t)

	lp, err := layout.FromPath(filepath.Join(b.dist, "image", image.LayoutDir))
	mustNoErr(t, "read the OCI layout", err)
	top, err := lp.ImageIndex()
	mustNoErr(t, "read index.json", err)
	tm, err := top.IndexManifest()
	mustNoErr(t, "read index.json", err)
	if len(tm.Manifests) != 1 || tm.Manifests[0].Annotations[image.AnnotationRefName] != b.version {
		t.Fatalf("index.json %+v, want one index named %s", tm.Manifests, b.version)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	mustNoErr(t, "read the index", err)
	im, err := idx.IndexManifest()
	mustNoErr(t, "read the index", err)
	wantAnn := map[string]string{
		image.AnnotationSource:   "https://github.com/regghost/regghost",
		image.AnnotationVersion:  b.version,
		image.AnnotationRevision: b.revision,
		image.AnnotationCreated:  b.created.UTC().Format(time.RFC3339),
	}
	checkAnnotations(t, "index", im.Annotations, wantAnn)

	var hostImage v1.Image
	platforms := map[string]bool{}
	for _, desc := range im.Manifests {
		arch := desc.Platform.Architecture
		platforms[desc.Platform.OS+"/"+arch] = true
		img, err := idx.Image(desc.Digest)
		mustNoErr(t, "read the "+arch+" image", err)
		if arch == runtime.GOARCH {
			hostImage = img
		}
		t.Run("linux/"+arch, func(t *testing.T) {
			m, err := img.Manifest()
			mustNoErr(t, "read the manifest", err)
			checkAnnotations(t, "manifest", m.Annotations, wantAnn)
			cf, err := img.ConfigFile()
			mustNoErr(t, "read the config", err)
			if cf.OS != "linux" || cf.Architecture != arch || !cf.Created.Time.Equal(b.created) ||
				strings.Join(cf.Config.Entrypoint, " ") != image.BinaryPath || cf.Config.User != image.User {
				t.Errorf("config: %s/%s created %v entrypoint %v user %q", cf.OS, cf.Architecture, cf.Created, cf.Config.Entrypoint, cf.Config.User)
			}
			checkAnnotations(t, "config labels", cf.Config.Labels, wantAnn)
			files := imageFiles(t, img)
			bin, err := os.ReadFile(b.binary(arch))
			mustNoErr(t, "read the release binary", err)
			if !bytes.Equal(files[strings.TrimPrefix(image.BinaryPath, "/")], bin) {
				t.Errorf("%s in the image is not %s", image.BinaryPath, b.binary(arch))
			}
			checkStatic(t, b.binary(arch), arch)
			checkReleaseSBOM(t, files[strings.TrimPrefix(image.SBOMPath, "/")], b, arch)
			if _, err := os.Stat(filepath.Join(b.dist, "image", "regghost-"+b.version+"-linux-"+arch+".docker.tar")); err != nil {
				t.Errorf("no docker archive for %s: %v", arch, err)
			}
		})
	}
	if !platforms["linux/amd64"] || !platforms["linux/arm64"] || len(platforms) != 2 {
		t.Errorf("platforms %v, want linux/amd64 and linux/arm64", platforms)
	}

	t.Run("the image program gives the same digest again", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "image")
		cmd := exec.Command("go", "run", "./hack/image", "-version", b.version, "-repository", b.repo, "-revision", b.revision,
			"-binary", "linux/amd64="+b.binary("amd64"), "-binary", "linux/arm64="+b.binary("arm64"), "-out", out)
		cmd.Dir = ".."
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+strconv.FormatInt(b.created.Unix(), 10))
		got, err := cmd.CombinedOutput()
		mustNoErr(t, "go run ./hack/image: "+string(got), err)
		again, err := layout.ImageIndexFromPath(filepath.Join(out, image.LayoutDir))
		mustNoErr(t, "read the second layout", err)
		am, err := again.IndexManifest()
		mustNoErr(t, "read the second layout", err)
		if am.Manifests[0].Digest != tm.Manifests[0].Digest {
			t.Errorf("second build %s, first %s", am.Manifests[0].Digest, tm.Manifests[0].Digest)
		}
	})

	t.Run("pushed to a registry, the index keeps its digest", func(t *testing.T) {
		// go-containerregistry's registry, in memory: what crane push
		// (remote.WriteIndex) and skopeo copy --all --preserve-digests send.
		reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
		defer reg.Close()
		host := strings.TrimPrefix(reg.URL, "http://")
		want := tm.Manifests[0].Digest
		pushed := map[string]string{"crane": host + "/team/regghost:" + b.version}
		mustNoErr(t, "push", remote.WriteIndex(mustRef(t, pushed["crane"]), idx))
		if _, err := exec.LookPath("skopeo"); err == nil {
			pushed["skopeo"] = host + "/other/regghost:" + b.version
			out, err := exec.Command("skopeo", "copy", "--all", "--preserve-digests", "--dest-tls-verify=false",
				"oci:"+filepath.Join(b.dist, "image", image.LayoutDir)+":"+b.version, "docker://"+pushed["skopeo"]).CombinedOutput()
			mustNoErr(t, "skopeo copy: "+string(out), err)
		}
		for by, ref := range pushed {
			d, err := remote.Head(mustRef(t, ref))
			mustNoErr(t, "head "+ref, err)
			if d.Digest != want || d.MediaType != tm.Manifests[0].MediaType {
				t.Errorf("pushed by %s: %s %s, want %s", by, d.MediaType, d.Digest, want)
			}
		}
	})

	t.Run("deploy/ names the tag", func(t *testing.T) {
		pod := staticPod(t, b)
		if got := pod.Spec.Containers[0].Image; got != b.ref() {
			t.Errorf("static pod image %s, want %s", got, b.ref())
		}
		chart := filepath.Join(b.dist, "deploy", "helm", "regghost")
		out := helm(t, "template", "ghosts", chart, "--namespace", "monitoring")
		if !strings.Contains(out, `image: "`+b.ref()+`"`) || !strings.Contains(out, `app.kubernetes.io/version: "`+b.version+`"`) {
			t.Errorf("the chart does not run %s:\n%s", b.ref(), out)
		}
		for _, f := range []string{"static-pod/regghost.yaml", "helm/regghost/Chart.yaml", "helm/regghost/values.yaml"} {
			if n := changedLines(t, filepath.Join("..", "deploy", f), filepath.Join(b.dist, "deploy", f)); n != 1 {
				t.Errorf("%s: %d lines differ from deploy/, want the image's line only", f, n)
			}
		}
	})

	if hostImage == nil {
		t.Fatalf("no image for this machine's platform linux/%s", runtime.GOARCH)
	}
	c := startCluster(t, clusterOptions{})
	c.createNamespace(t, "shipped")
	c.createConfigMap(t, "shipped", "cm1")
	c.createSecret(t, "shipped", "s1")
	c.forceDelete(t, "/registry/namespaces/shipped")
	pod := staticPod(t, b)
	node := staticPodNode(t, c, pod)

	t.Run("the unpacked binary serves /metrics with the static pod's arguments", func(t *testing.T) {
		rootfs := filepath.Join(t.TempDir(), "rootfs")
		unpack(t, hostImage, rootfs)
		mount(t, pod, node, rootfs)
		addr, args := podArgs(t, pod)
		cf, err := hostImage.ConfigFile()
		mustNoErr(t, "read the config", err)
		cmd := exec.Command(cf.Config.Entrypoint[0], args...)
		cmd.Env, cmd.Dir = cf.Config.Env, "/"
		cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs, Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if os.Getuid() != 0 {
			// A user namespace of our own gives the chroot without root.
			cmd.SysProcAttr.Cloneflags = syscall.CLONE_NEWUSER
			cmd.SysProcAttr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}}
			cmd.SysProcAttr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		}
		logs := runUntilEnd(t, cmd)
		scrapeShipped(t, addr, b.version, logs)
	})

	t.Run("a container runtime runs the image", func(t *testing.T) {
		rt := containerRuntime(t)
		archive := filepath.Join(b.dist, "image", "regghost-"+b.version+"-linux-"+runtime.GOARCH+".docker.tar")
		out := runtimeCmd(t, rt, "load", "-i", archive)
		cfg, err := hostImage.ConfigName()
		mustNoErr(t, "config digest", err)
		id := cfg.String()
		if !strings.Contains(out, b.ref()) {
			t.Errorf("%s load -i %s: %s", rt, archive, out)
		}
		// Loaded under the tag, as the image ID docker would show.
		if got := strings.TrimSpace(runtimeCmd(t, rt, "image", "inspect", "--format", "{{.Id}}", b.ref())); strings.TrimPrefix(got, "sha256:") != cfg.Hex {
			t.Errorf("%s image ID %s, want %s", b.ref(), got, cfg.Hex)
		}
		t.Cleanup(func() { _ = exec.Command(rt, "rmi", b.ref()).Run() })
		runFlags := runnableFlags(t, rt, id)
		addr, args := podArgs(t, pod)
		name := fmt.Sprintf("regghost-e2e-%d", os.Getpid())
		// The static pod's securityContext: root, no capabilities, no
		// privilege escalation, a read-only root file system.
		run := append([]string{"run", "--rm", "--name", name, "--network", "host", "--read-only", "--cap-drop", "ALL",
			"--security-opt", "no-new-privileges", "--user", "0"}, runFlags...)
		for _, vm := range pod.Spec.Containers[0].VolumeMounts {
			v := podVolume(t, pod, vm.Name)
			switch {
			case v.HostPath != nil:
				run = append(run, "-v", filepath.Join(node, v.HostPath.Path)+":"+vm.MountPath+":ro")
			case v.EmptyDir != nil:
				run = append(run, "--tmpfs", vm.MountPath)
			}
		}
		cmd := exec.Command(rt, append(append(run, id), args...)...)
		t.Cleanup(func() { _ = exec.Command(rt, "rm", "-f", name).Run() })
		logs := runUntilEnd(t, cmd)
		scrapeShipped(t, addr, b.version, logs)
	})
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.Insecure)
	mustNoErr(t, "parse "+s, err)
	return r
}

// makeImage runs `make image`'s script into a new dist directory.
func makeImage(t *testing.T) builtImage {
	t.Helper()
	// A registry of one's own: the name flows into the tag, the archives
	// and the copies of deploy/.
	b := builtImage{dist: t.TempDir(), repo: "registry.e2e.example/team/regghost"}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", ".."}, args...)...).Output()
		mustNoErr(t, "git "+strings.Join(args, " "), err)
		return strings.TrimSpace(string(out))
	}
	b.revision = git("rev-parse", "HEAD")
	secs, err := strconv.ParseInt(git("log", "-1", "--format=%ct"), 10, 64)
	mustNoErr(t, "commit time", err)
	b.created = time.Unix(secs, 0)
	out, err := exec.Command("../hack/version.sh").Output()
	mustNoErr(t, "hack/version.sh", err)
	b.version = strings.TrimSpace(string(out))

	start := time.Now()
	cmd := exec.Command("../hack/release.sh", "image")
	cmd.Env = append(os.Environ(), "OUT="+b.dist, "VERSION=", "SOURCE_DATE_EPOCH=", "IMAGE_REPO="+b.repo)
	got, err := cmd.CombinedOutput()
	mustNoErr(t, "hack/release.sh image: "+string(got), err)
	t.Logf("make image in %s:\n%s", time.Since(start).Round(time.Second), got)
	return b
}

func checkAnnotations(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %q, want %q", what, k, got[k], v)
		}
	}
}

// checkStatic: the binary is for arch and has no ELF interpreter (the
// image has no libc).
func checkStatic(t *testing.T, path, arch string) {
	t.Helper()
	f, err := elf.Open(path)
	mustNoErr(t, "read "+path, err)
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if f.Machine != want {
		t.Errorf("%s is for %v, want %v", path, f.Machine, want)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s is dynamically linked", path)
		}
	}
}

// checkReleaseSBOM: the SBOM in the image names regghost at the version
// and every module Go linked into the binary, at the version linked.
func checkReleaseSBOM(t *testing.T, doc []byte, b builtImage, arch string) {
	t.Helper()
	var bom cdx.BOM
	mustNoErr(t, "decode the SBOM", cdx.NewBOMDecoder(bytes.NewReader(doc), cdx.BOMFileFormatJSON).Decode(&bom))
	if bom.Metadata == nil || bom.Metadata.Component == nil || bom.Metadata.Component.Version != b.version || bom.Components == nil {
		t.Fatalf("SBOM metadata %+v", bom.Metadata)
	}
	have := map[string]string{}
	for _, c := range *bom.Components {
		have[c.Name] = c.Version
	}
	bi, err := buildinfo.ReadFile(b.binary(arch))
	mustNoErr(t, "read the build info", err)
	for _, d := range bi.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		if have[m.Path] != m.Version {
			t.Errorf("SBOM has %s at %q, the binary links %s", m.Path, have[m.Path], m.Version)
		}
	}
	for _, want := range []string{"go.etcd.io/etcd/client/v3", "k8s.io/client-go", "stdlib"} {
		if have[want] == "" {
			t.Errorf("SBOM lacks %s", want)
		}
	}
}

// imageFiles reads the regular files of img's file system.
func imageFiles(t *testing.T, img v1.Image) map[string][]byte {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		mustNoErr(t, "read the layer", err)
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			mustNoErr(t, "read "+h.Name, err)
			out[h.Name] = b
		}
	}
}

// unpack writes img's file system under root, with its modes.
func unpack(t *testing.T, img v1.Image, root string) {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		mustNoErr(t, "read the layer", err)
		if !filepath.IsLocal(h.Name) {
			t.Fatalf("layer entry %q outside the root", h.Name)
		}
		p := filepath.Join(root, h.Name)
		mode := h.FileInfo().Mode()
		switch h.Typeflag {
		case tar.TypeDir:
			mustNoErr(t, "mkdir "+p, os.MkdirAll(p, 0o755))
			mustNoErr(t, "chmod "+p, os.Chmod(p, mode.Perm()|mode&(os.ModeSticky|os.ModeSetuid|os.ModeSetgid)))
		case tar.TypeReg:
			mustNoErr(t, "mkdir", os.MkdirAll(filepath.Dir(p), 0o755))
			f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode.Perm())
			mustNoErr(t, "create "+p, err)
			_, err = io.Copy(f, tr)
			mustNoErr(t, "write "+p, err)
			mustNoErr(t, "close "+p, f.Close())
		default:
			t.Fatalf("layer entry %s of type %c", h.Name, h.Typeflag)
		}
	}
}

// staticPod is the static pod manifest `make image` wrote.
func staticPod(t *testing.T, b builtImage) *corev1.Pod {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(b.dist, "deploy", "static-pod", "regghost.yaml"))
	mustNoErr(t, "read the static pod", err)
	var pod corev1.Pod
	mustNoErr(t, "parse the static pod", yaml.UnmarshalStrict(raw, &pod))
	if len(pod.Spec.Containers) != 1 {
		t.Fatalf("static pod with %d containers", len(pod.Spec.Containers))
	}
	return &pod
}

func podVolume(t *testing.T, pod *corev1.Pod, name string) corev1.Volume {
	t.Helper()
	for _, v := range pod.Spec.Volumes {
		if v.Name == name {
			return v
		}
	}
	t.Fatalf("static pod mounts volume %s it does not declare", name)
	return corev1.Volume{}
}

// podArgs are the static pod's arguments, with --listen-address on a free
// loopback port instead of every interface's 9819 (the pod runs on the
// host network; tests run side by side). It returns that address.
func podArgs(t *testing.T, pod *corev1.Pod) (string, []string) {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	args := append([]string{}, pod.Spec.Containers[0].Args...)
	found := false
	for i, a := range args {
		if strings.HasPrefix(a, "--listen-address=") {
			args[i], found = "--listen-address="+addr, true
		}
	}
	if !found || len(pod.Spec.Containers[0].Command) != 0 {
		t.Fatalf("static pod args %v (command %v): want the image's entrypoint and a --listen-address", args, pod.Spec.Containers[0].Command)
	}
	return addr, args
}

// podArg is the value of the static pod's --name=value argument.
func podArg(pod *corev1.Pod, name string) string {
	for _, a := range pod.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v
		}
	}
	return ""
}

// staticPodNode lays out a control-plane node's /etc/kubernetes as kubeadm
// writes it for the cluster (the kube-apiserver manifest naming etcd and
// its client certificate, root-only keys) and puts the cluster's
// kubeconfig where the static pod's --kubeconfig reads it. It returns the
// node's root.
func staticPodNode(t *testing.T, c *cluster, pod *corev1.Pod) string {
	t.Helper()
	node := t.TempDir()
	copyFile(t, c.pki.CA, node, "etc/kubernetes/pki/etcd/ca.crt")
	copyFile(t, c.pki.ClientCert, node, "etc/kubernetes/pki/apiserver-etcd-client.crt")
	copyFile(t, c.pki.ClientKey, node, "etc/kubernetes/pki/apiserver-etcd-client.key")
	manifest := `apiVersion: v1
kind: Pod
metadata:
  name: kube-apiserver
  namespace: kube-system
spec:
  containers:
  - name: kube-apiserver
    image: registry.k8s.io/kube-apiserver:v1.37.2
    command:
    - kube-apiserver
    - --etcd-cafile=/etc/kubernetes/pki/etcd/ca.crt
    - --etcd-certfile=/etc/kubernetes/pki/apiserver-etcd-client.crt
    - --etcd-keyfile=/etc/kubernetes/pki/apiserver-etcd-client.key
    - --etcd-servers=` + c.etcdURL + "\n"
	mustNoErr(t, "mkdir", os.MkdirAll(filepath.Join(node, "etc/kubernetes/manifests"), 0o755))
	mustNoErr(t, "write manifest", os.WriteFile(filepath.Join(node, "etc/kubernetes/manifests/kube-apiserver.yaml"), []byte(manifest), 0o600))
	if kc := podArg(pod, "kubeconfig"); kc != "" {
		copyFile(t, c.kubeconfig, node, hostPathOf(t, pod, kc))
	}
	return node
}

// hostPathOf is the node path a path in the container comes from, through
// the static pod's hostPath mounts.
func hostPathOf(t *testing.T, pod *corev1.Pod, p string) string {
	t.Helper()
	for _, vm := range pod.Spec.Containers[0].VolumeMounts {
		if rest, ok := strings.CutPrefix(p, vm.MountPath+"/"); ok {
			if v := podVolume(t, pod, vm.Name); v.HostPath != nil {
				return filepath.Join(v.HostPath.Path, rest)
			}
		}
	}
	t.Fatalf("%s is on no hostPath mount of the static pod", p)
	return ""
}

// mount gives rootfs what the static pod's volumes give the container: a
// copy of each hostPath of the node, read-only in the pod (the node's files
// are root's), and an empty directory for each emptyDir.
func mount(t *testing.T, pod *corev1.Pod, node, rootfs string) {
	t.Helper()
	for _, vm := range pod.Spec.Containers[0].VolumeMounts {
		v := podVolume(t, pod, vm.Name)
		dst := filepath.Join(rootfs, vm.MountPath)
		switch {
		case v.HostPath != nil:
			mustNoErr(t, "mkdir "+dst, os.MkdirAll(filepath.Dir(dst), 0o755))
			mustNoErr(t, "copy "+v.HostPath.Path, os.CopyFS(dst, os.DirFS(filepath.Join(node, v.HostPath.Path))))
		case v.EmptyDir != nil:
			mustNoErr(t, "mkdir "+dst, os.MkdirAll(dst, 0o1777))
		default:
			t.Fatalf("static pod volume %s is neither hostPath nor emptyDir", v.Name)
		}
	}
}

// runUntilEnd starts cmd and stops it when the test ends; its output is
// returned as it comes, and printed if the test fails.
func runUntilEnd(t *testing.T, cmd *exec.Cmd) *lockedBuffer {
	t.Helper()
	logs := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	}
	mustNoErr(t, "start "+cmd.Path, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("--- output of %s:\n%s", strings.Join(cmd.Args, " "), logs.String())
		}
	})
	return logs
}

// lockedBuffer is a process's output, read while it is written.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// scrapeShipped waits for the exporter at addr to be ready and checks
// that /metrics counts the ghosts of the force-deleted namespace
// "shipped" with the API server as second witness, from the binary of the
// version built. It sends the cluster's admin token, as a Prometheus with
// a ServiceAccount token would, over HTTPS without verifying the
// certificate serve made itself in --cert-dir (as the ServiceMonitor and
// kube-prometheus's control-plane scrapes do); the same token over plain
// HTTP gets no metrics.
func scrapeShipped(t *testing.T, addr, version string, logs *lockedBuffer) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path string) (int, string, error) {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://"+addr+path, nil)
		if err != nil {
			return 0, "", err
		}
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := client.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), err
	}
	waitFor(t, 120*time.Second, "the image's regghost serve ready", func() error {
		code, body, err := get("/readyz")
		if err != nil || code != http.StatusOK {
			return fmt.Errorf("/readyz: %d %v %s (output: %s)", code, err, body, logs.String())
		}
		return nil
	})
	code, body, err := get("/metrics")
	if err != nil || code != http.StatusOK {
		t.Fatalf("/metrics: %d %v", code, err)
	}
	plainGet(t, addr, testToken)
	for _, want := range []string{`regghost_ghosts{namespace="shipped"} 2`, "regghost_api_witness 1", "regghost_last_scan_success 1"} {
		if !strings.Contains(body, "\n"+want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, grepLines(body, "regghost_ghosts", "regghost_api_witness", "regghost_last_scan"))
		}
	}
	// The release binary: its version stamped in.
	if build := grepLines(body, "regghost_build_info{"); !strings.Contains(build, `version="`+version+`"`) {
		t.Errorf("regghost_build_info %q, want version %s", build, version)
	}
}

func grepLines(s string, prefixes ...string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				out = append(out, l)
			}
		}
	}
	return strings.Join(out, "\n")
}

// changedLines counts the lines of a that b has differently (same length
// files, line by line).
func changedLines(t *testing.T, a, b string) int {
	t.Helper()
	ra, err := os.ReadFile(a)
	mustNoErr(t, "read "+a, err)
	rb, err := os.ReadFile(b)
	mustNoErr(t, "read "+b, err)
	la, lb := strings.Split(string(ra), "\n"), strings.Split(string(rb), "\n")
	if len(la) != len(lb) {
		return -1
	}
	n := 0
	for i := range la {
		if la[i] != lb[i] {
			n++
		}
	}
	return n
}

// containerRuntime is podman, or docker when its daemon answers; the test
// is skipped when neither runs here.
func containerRuntime(t *testing.T) string {
	t.Helper()
	var tried []string
	for _, rt := range []string{"podman", "docker"} {
		if _, err := exec.LookPath(rt); err != nil {
			tried = append(tried, rt+": not installed")
			continue
		}
		out, err := exec.Command(rt, "info").CombinedOutput()
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s info: %v: %s", rt, err, firstLine(string(out))))
			continue
		}
		return rt
	}
	t.Skipf("no container runtime here (%s)", strings.Join(tried, "; "))
	return ""
}

// runnableFlags are the run flags under which rt starts a container on
// this machine, found by running the image's `regghost version`. Limits
// stay below the sandbox's (a root without CAP_SYS_RESOURCE cannot raise
// them to the runtime's defaults); podman falls back to runc where crun
// refuses the cgroup layout (v1 and v2 mounted together). When the runtime
// itself cannot start a container here the test is skipped, saying why; a
// failure of the image fails it.
func runnableFlags(t *testing.T, rt, id string) []string {
	t.Helper()
	limits := []string{"--ulimit", "nofile=4096:4096", "--ulimit", "nproc=32768:32768"}
	variants := [][]string{limits}
	if _, err := exec.LookPath("runc"); err == nil && rt == "podman" {
		variants = append(variants, append([]string{"--runtime", "runc"}, limits...))
	}
	var reasons []string
	for _, flags := range variants {
		out, err := exec.Command(rt, append(append([]string{"run", "--rm"}, flags...), id, "version")...).CombinedOutput()
		if err == nil {
			if !strings.Contains(string(out), "Platform:      linux/"+runtime.GOARCH) {
				t.Fatalf("%s run %s version: %s", rt, id, out)
			}
			return flags
		}
		if !runtimeFailure(string(out)) {
			t.Fatalf("%s run %s version: %v: %s", rt, id, err, out)
		}
		reasons = append(reasons, fmt.Sprintf("%v: %s", flags, firstLine(string(out))))
	}
	t.Skipf("%s cannot start a container here: %s", rt, strings.Join(reasons, "; "))
	return nil
}

// runtimeFailure tells the runtime's own errors (it could not create the
// container) from the image's.
func runtimeFailure(out string) bool {
	for _, s := range []string{"OCI runtime", "OCI permission denied", "crun:", "runc create failed", "Cannot connect to the Docker daemon"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

func runtimeCmd(t *testing.T, rt string, args ...string) string {
	t.Helper()
	out, err := exec.Command(rt, args...).CombinedOutput()
	mustNoErr(t, rt+" "+strings.Join(args, " ")+": "+string(out), err)
	return string(out)
}
