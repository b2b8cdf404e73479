package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// cluster is a real etcd (TLS with client certificates) and, unless asked
// not to, a real kube-apiserver in front of it.
type cluster struct {
	dir        string
	pki        pki
	etcdURL    string
	etcd       *clientv3.Client
	kubeconfig string
	rest       *rest.Config
	kube       kubernetes.Interface
	dyn        dynamic.Interface
	apiserver  *process
	etcdBin    string
	// members are the etcd members of a multi-member cluster.
	members []*member
	// eventsURL and eventsEtcd are the second etcd of clusterOptions.eventsEtcd.
	eventsURL  string
	eventsEtcd *clientv3.Client
	// etcdProc is the single etcd's process (to freeze it).
	etcdProc *process
	// etcdQuota is the single etcd's --quota-backend-bytes (default 1 GiB).
	etcdQuota int64
	// env is what regghost's environment holds beside the test process's
	// (withEnv): a test that sets it stays parallel, unlike t.Setenv.
	env []string
}

// withEnv is c, with regghost run with env (NAME=VALUE) added to its
// environment: a shallow copy, to run regghost with (a change to the
// cluster's servers made through it does not reach c).
func (c *cluster) withEnv(env ...string) *cluster {
	cp := *c
	cp.env = append(append([]string{}, c.env...), env...)
	return &cp
}

type clusterOptions struct {
	noAPIServer bool
	// apiserverArgs are extra kube-apiserver flags.
	apiserverArgs []string
	// live waits for /livez instead of /readyz (a KMS plugin that is down
	// keeps readyz failing on purpose).
	live bool
	// eventsEtcd keeps events in a second etcd (--etcd-servers-overrides).
	eventsEtcd bool
	// etcdBin runs another etcd release than the default (3.7).
	etcdBin string
	// members starts an etcd cluster of that many members (default one).
	members int
	// etcdQuota is the single etcd's --quota-backend-bytes (default 1 GiB).
	etcdQuota int64
	// kine runs kine over SQLite (k3s's default datastore) instead of etcd.
	kine bool
	// apiserverIP and apiserverPort are where kube-apiserver binds and
	// advertises itself (127.0.0.1 and a free port by default);
	// apiserverName names its log, certificate directory and kubeconfig,
	// for a second kube-apiserver of an HA control plane.
	apiserverIP, apiserverName string
	apiserverPort              int
	// authorization is kube-apiserver's --authorization-mode (Node,RBAC
	// by default, as kubeadm's; the flag is a list, so it cannot be
	// overridden through apiserverArgs).
	authorization string
	// unseeded leaves out the objects of a kubeadm cluster and its
	// workloads (seedProductionShape) that every other cluster holds: for
	// an API server that cannot write them (its KMS plugin is down).
	unseeded bool
	// apiserverBin runs another kube-apiserver than binsFor(t).kubeAPIServer (a
	// second release on the same etcd).
	apiserverBin string
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startProcess runs a server until the test ends, keeping its output in a log
// file that is printed when the test fails.
func startProcess(t *testing.T, name, logPath string, bin string, args ...string) *process {
	t.Helper()
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("--- last lines of %s log:\n%s", name, b)
		}
	})
	return &process{cmd: cmd, done: done}
}

// process is a running server.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// exited reports whether the process has ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func startCluster(t *testing.T, o clusterOptions) *cluster {
	t.Helper()
	c := &cluster{dir: t.TempDir(), etcdQuota: 1 << 30}
	if o.etcdQuota > 0 {
		c.etcdQuota = o.etcdQuota
	}
	c.pki = newPKI(t, c.dir)
	c.etcdBin = bins.etcd
	if o.etcdBin != "" {
		c.etcdBin = o.etcdBin
	}
	switch {
	case o.kine:
		c.startKine(t)
	case o.members > 1:
		c.startMembers(t, o.members)
	default:
		c.etcdURL, c.etcd = c.startEtcd(t, "e2e")
	}
	if o.eventsEtcd {
		c.eventsURL, c.eventsEtcd = c.startEtcd(t, "events")
		o.apiserverArgs = append(o.apiserverArgs, "--etcd-servers-overrides", "/events#"+c.eventsURL)
	}
	if !o.noAPIServer {
		c.startAPIServer(t, o)
		if !o.unseeded {
			c.seedProductionShape(t)
		}
	}
	return c
}

// startEtcd starts one single-member etcd and returns its URL and a client.
func (c *cluster) startEtcd(t *testing.T, name string) (string, *clientv3.Client) {
	t.Helper()
	clientPort, peerPort := freePort(t), freePort(t)
	url := fmt.Sprintf("https://127.0.0.1:%d", clientPort)
	peer := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	dataDir := filepath.Join(c.dir, "etcd-data")
	if name != "e2e" {
		dataDir = filepath.Join(c.dir, name+"-data")
	}
	proc := startProcess(t, name, filepath.Join(c.dir, name+".log"), c.etcdBin,
		"--name", name, "--data-dir", dataDir,
		"--listen-client-urls", url, "--advertise-client-urls", url,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", name+"="+peer,
		"--cert-file", c.pki.ServerCert, "--key-file", c.pki.ServerKey,
		"--trusted-ca-file", c.pki.CA, "--client-cert-auth",
		"--log-level", "warn", "--quota-backend-bytes", strconv.FormatInt(c.etcdQuota, 10))
	if name == "e2e" {
		c.etcdProc = proc
	}
	cli := c.etcdClient(t, url)
	waitFor(t, 90*time.Second, name+" ready", func() error {
		if proc.exited() {
			t.Fatalf("%s exited: %v (see its log)", name, proc.cmd.ProcessState)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := cli.Status(ctx, url)
		return err
	})
	return url, cli
}

const testToken = "regghost-e2e-token"

func (c *cluster) startAPIServer(t *testing.T, o clusterOptions) {
	t.Helper()
	ip, name, port := o.apiserverIP, o.apiserverName, o.apiserverPort
	if ip == "" {
		ip = "127.0.0.1"
	}
	if name == "" {
		name = "apiserver"
	}
	if port == 0 {
		port = freePort(t)
	}
	authz := o.authorization
	if authz == "" {
		authz = "Node,RBAC"
	}
	saPub, saKey := writeServiceAccountKey(t, c.dir)
	tokens := filepath.Join(c.dir, "tokens.csv")
	if err := os.WriteFile(tokens, []byte(testToken+",admin,admin,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{
		"--etcd-servers", c.etcdURL, "--etcd-cafile", c.pki.CA, "--etcd-certfile", c.pki.ClientCert, "--etcd-keyfile", c.pki.ClientKey,
		"--bind-address", ip, "--advertise-address", ip, "--secure-port", strconv.Itoa(port),
		"--cert-dir", filepath.Join(c.dir, name+"-certs"),
		"--service-account-issuer", "https://kubernetes.default.svc", "--service-account-key-file", saPub,
		"--service-account-signing-key-file", saKey, "--token-auth-file", tokens,
		"--authorization-mode", authz, "--service-cluster-ip-range", "10.0.0.0/24",
		// kubeadm's: client certificates of the cluster's CA, bootstrap
		// tokens, NodeRestriction. The ServiceAccount plugin stays off: it
		// refuses a pod until the namespace's default account exists, and
		// most tests run no kube-controller-manager to create it.
		"--client-ca-file", c.pki.CA, "--enable-bootstrap-token-auth=true", "--enable-admission-plugins", "NodeRestriction",
		"--disable-admission-plugins", "ServiceAccount", "--endpoint-reconciler-type", "none", "--v", "1",
	}
	bin := binsFor(t).kubeAPIServer
	if o.apiserverBin != "" {
		bin = o.apiserverBin
	}
	c.apiserver = startProcess(t, "kube-apiserver", filepath.Join(c.dir, name+".log"), bin, append(args, o.apiserverArgs...)...)
	host := "https://" + net.JoinHostPort(ip, strconv.Itoa(port))
	c.rest = &rest.Config{Host: host, BearerToken: testToken, TLSClientConfig: rest.TLSClientConfig{Insecure: true}, QPS: 100, Burst: 200}
	httpc := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	waitFor(t, 180*time.Second, "kube-apiserver ready", func() error {
		if c.apiserver.exited() {
			t.Fatalf("kube-apiserver exited: %v", c.apiserver.cmd.ProcessState)
		}
		probe := "/readyz"
		if o.live {
			probe = "/livez"
		}
		req, _ := http.NewRequest("GET", host+probe, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		resp, err := httpc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("readyz %d", resp.StatusCode)
		}
		return nil
	})
	var err error
	if c.kube, err = kubernetes.NewForConfig(c.rest); err != nil {
		t.Fatal(err)
	}
	if c.dyn, err = dynamic.NewForConfig(c.rest); err != nil {
		t.Fatal(err)
	}
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if name != "apiserver" {
		c.kubeconfig = filepath.Join(c.dir, name+".kubeconfig")
	}
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: e2e, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: %q}}]
contexts: [{name: e2e, context: {cluster: e2e, user: admin}}]
current-context: e2e
`, host, testToken)
	if err := os.WriteFile(c.kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
}

// etcdArgs are the regghost flags that reach this cluster's etcd.
func (c *cluster) etcdArgs() []string {
	return []string{"--endpoints", c.etcdURL, "--cacert", c.pki.CA, "--cert", c.pki.ClientCert, "--key", c.pki.ClientKey}
}

// regghost runs the real binary against the cluster and returns its output
// and exit code. The API server is used when the cluster has one.
func (c *cluster) regghost(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	full := append([]string{}, args...)
	full = append(full, c.etcdArgs()...)
	if c.kubeconfig != "" {
		full = append(full, "--kubeconfig", c.kubeconfig)
	} else {
		full = append(full, "--no-api")
	}
	return runBinaryEnv(t, c.env, stdin, full...)
}

func runBinary(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	return runBinaryEnv(t, nil, stdin, args...)
}

// runBinaryEnv runs regghost with env added to the test process's
// environment.
func runBinaryEnv(t *testing.T, env []string, stdin string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(bins.regghost, args...)
	cmd.Env = append(append(os.Environ(), "HOME="+t.TempDir(), "KUBECONFIG="), env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run regghost: %v", err)
		}
		code = ee.ExitCode()
	}
	checkWidth(t, args, true, code, out.String(), errOut.String())
	return out.String(), errOut.String(), code
}

func waitFor(t *testing.T, timeout time.Duration, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %v", what, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startControllerManager runs a real kube-controller-manager against the
// cluster's API server with the given controllers. The hostPath provisioner
// is on: it creates and, for reclaim policy Delete, really deletes
// directories under /tmp/hostpath_pv.
func (c *cluster) startControllerManager(t *testing.T, controllers ...string) {
	t.Helper()
	startProcess(t, "kube-controller-manager", filepath.Join(c.dir, "kcm.log"), binsFor(t).kubeControllerManager,
		"--kubeconfig", c.kubeconfig, "--leader-elect=false", "--secure-port=0",
		"--controllers", strings.Join(controllers, ","), "--enable-hostpath-provisioner", "--v", "2")
}

// etcdClient is a client of the cluster's etcd (or kine) on the endpoints
// given, with the cluster's client certificate; it is closed when t ends.
func (c *cluster) etcdClient(t *testing.T, endpoints ...string) *clientv3.Client {
	t.Helper()
	tlsCfg, err := (transport.TLSInfo{TrustedCAFile: c.pki.CA, CertFile: c.pki.ClientCert, KeyFile: c.pki.ClientKey}).ClientConfig()
	mustNoErr(t, "client TLS", err)
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: tlsCfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	mustNoErr(t, "etcd client of "+strings.Join(endpoints, ","), err)
	t.Cleanup(func() { cli.Close() })
	return cli
}
