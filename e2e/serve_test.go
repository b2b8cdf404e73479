package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/regghost/regghost/pkg/etcdscan"
	"github.com/regghost/regghost/pkg/exporter"
)

const (
	chartDir      = "../deploy/helm/regghost"
	rulesFile     = chartDir + "/files/regghost-rules.yaml"
	dashboardFile = chartDir + "/files/regghost-dashboard.json"
)

// TestServeExportsToPrometheus runs regghost serve beside a real etcd and
// kube-apiserver and a real Prometheus scraping it (basic auth through the
// exporter-toolkit web config), with the chart's alert rules loaded:
//   - every class of finding scan reports is a series with scan's count, every
//     check scan makes is exported with whether it could be made, dangling
//     references and terminating namespaces too;
//   - serve writes nothing to etcd across cycles;
//   - after a namespace is force-deleted, the PromQL query for its ghosts
//     returns their count and the ghost alert fires; after purge the query
//     returns nothing;
//   - the dangling-APIService alert fires; every dashboard query parses.
func TestServeExportsToPrometheus(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	plantGhosts(t, c)
	// A namespace in Terminating: without kube-controller-manager nothing
	// finishes its deletion.
	c.createNamespace(t, "leaving")
	c.createConfigMap(t, "leaving", "left")
	mustNoErr(t, "delete namespace leaving", c.kube.CoreV1().Namespaces().Delete(context.Background(), "leaving", metav1.DeleteOptions{}))

	dir := t.TempDir()
	s := c.startServe(t, dir, "--interval", "1s", "--terminating-after", "1ns")

	t.Run("basic auth's passwords never in clear off loopback", func(t *testing.T) {
		// As values.yaml once recommended for a Prometheus outside the
		// cluster: --metrics-auth none, basic_auth_users, no TLS, every
		// interface. Refused in one line before anything listens.
		addr := "0.0.0.0:" + strconv.Itoa(freePort(t))
		_, errOut, code := runBinary(t, "", append([]string{"serve", "--listen-address", addr, "--metrics-auth", "none",
			"--web-config-file", filepath.Join(dir, "web.yml"), "--no-api"}, c.etcdArgs()...)...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "sets basic_auth_users: their passwords must not cross the network in clear") {
			t.Errorf("basic auth over plain HTTP on %s: exit %d, want 2 and one line: %s", addr, code, errOut)
		}
		if code, _, err := (&serveProcess{addr: strings.Replace(addr, "0.0.0.0", "127.0.0.1", 1)}).get("/healthz", false); err == nil {
			t.Errorf("something answers on %s after the refusal: %d", addr, code)
		}
	})

	t.Run("the endpoint asks for the password", func(t *testing.T) {
		for _, path := range []string{"/metrics", "/healthz"} {
			if code, _, err := s.get(path, false); err != nil || code != http.StatusUnauthorized {
				t.Errorf("%s without the password: %d %v, want 401", path, code, err)
			}
		}
		if code, body, err := s.get("/healthz", true); err != nil || code != http.StatusOK {
			t.Errorf("/healthz: %d %v %s", code, err, body)
		}
	})

	t.Run("serve writes nothing", func(t *testing.T) {
		before := c.state(t)
		s.waitCycles(t, 3)
		c.assertUnchanged(t, "three serve cycles", before)
	})

	p := scrapeWithRules(t, dir, s)

	t.Run("the alert rules load", func(t *testing.T) {
		waitFor(t, 30*time.Second, "rules loaded", func() error {
			got, err := p.rules(t)
			if err != nil {
				return err
			}
			for _, want := range []string{"RegghostGhostsFound", "RegghostNamespaceStuckTerminating", "RegghostDanglingAPIService", "RegghostScanFailing", "RegghostScanStale", "RegghostWitnessCheckMissing",
				"RegghostObjectsUnderAnOldKey", "RegghostObjectsAtAnUnreadableVersion", "RegghostEventsPastTTL", "RegghostEtcdLeaseOverLimit", "RegghostStaleMasterLease"} {
				h, ok := got[want]
				if !ok {
					return fmt.Errorf("rule %s not loaded (loaded: %v)", want, got)
				}
				if strings.HasPrefix(h, "err") {
					return fmt.Errorf("rule %s: %s", want, h)
				}
			}
			return nil
		})
	})

	t.Run("every class, check and terminating namespace of scan is in Prometheus", func(t *testing.T) {
		rep, _ := c.scanJSON(t, "--terminating-after", "1ns")
		want, err := exporter.Summarize(rep, exporter.DefaultNamespaceLimit)
		if err != nil {
			t.Fatal(err)
		}
		classes := map[etcdscan.Class]bool{}
		for _, f := range rep.Findings {
			classes[f.Classes[0]] = true
		}
		if len(classes) < 6 {
			t.Fatalf("the scenario has only the classes %v", classes)
		}
		// The same scan with its findings spilled to disk as soon as there
		// are two judges every finding alike, the API server's answers included.
		spilled, _ := c.withEnv("REGGHOST_SPILL_AFTER=1").scanJSON(t, "--terminating-after", "1ns")
		if got, want := verdicts(spilled), verdicts(rep); got != want {
			t.Fatalf("spilled scan's verdicts differ:\n%s\nin memory:\n%s", got, want)
		}
		waitFor(t, 60*time.Second, "Prometheus holds scan's counts", func() error {
			if err := samePromSeries(p, "regghost_objects", []string{"class", "resource", "namespace"}, objectSeries(want.Objects)); err != nil {
				return err
			}
			if err := samePromSeries(p, "regghost_object_classes", []string{"class", "resource", "namespace"}, objectSeries(want.Classes)); err != nil {
				return err
			}
			checks := map[string]float64{}
			for _, c := range want.Checks {
				checks[c.Name] = 0
				if c.Done {
					checks[c.Name] = 1
				}
			}
			if err := samePromSeries(p, "regghost_check_done", []string{"check"}, checks); err != nil {
				return err
			}
			if v, ok, err := p.value(`regghost_namespace_terminating_seconds{namespace="leaving"}`); err != nil || !ok || v <= 0 {
				return fmt.Errorf("terminating seconds of leaving: %v %v %v", v, ok, err)
			}
			if v, ok, err := p.value(`regghost_api_witness`); err != nil || !ok || v != 1 {
				return fmt.Errorf("regghost_api_witness: %v %v %v", v, ok, err)
			}
			return nil
		})
	})

	t.Run("a force-deleted namespace's ghosts are counted, then gone after purge", func(t *testing.T) {
		c.createNamespace(t, "late")
		c.createPod(t, "late", "p1")
		c.createConfigMap(t, "late", "cm1")
		c.createSecret(t, "late", "s1")
		const ghostsOfLate = `sum(regghost_ghosts{namespace="late"})`
		c.forceDelete(t, "/registry/namespaces/late")
		waitFor(t, 60*time.Second, "ghosts of late in Prometheus", func() error {
			v, ok, err := p.value(ghostsOfLate)
			if err != nil || !ok || v != 3 {
				return fmt.Errorf("%s = %v (present %v, %v), want 3", ghostsOfLate, v, ok, err)
			}
			v, ok, err = p.value(`sum(regghost_objects{namespace="late", class="orphaned-namespace"})`)
			if err != nil || !ok || v != 3 {
				return fmt.Errorf("orphaned-namespace objects of late = %v (present %v, %v), want 3", v, ok, err)
			}
			return nil
		})
		waitFor(t, 60*time.Second, "the ghost alert fires for late", func() error {
			return firing(p, "RegghostGhostsFound", "namespace", "late")
		})
		root := filepath.Join(t.TempDir(), "backups")
		if _, errOut, code := c.regghost(t, "", "purge", "--namespace", "late", "--backup-dir", root, "--confirm", "--yes"); code != 0 {
			t.Fatalf("purge: exit %d: %s", code, errOut)
		}
		waitFor(t, 60*time.Second, "no ghosts of late in Prometheus", func() error {
			for _, q := range []string{ghostsOfLate, `regghost_objects{namespace="late"}`} {
				if got, err := p.query(q); err != nil || len(got) != 0 {
					return fmt.Errorf("%s = %v (%v), want nothing", q, got, err)
				}
			}
			return nil
		})
	})

	t.Run("objects are counted per stored version and key", func(t *testing.T) {
		waitFor(t, 60*time.Second, "the census in Prometheus", func() error {
			for _, q := range []string{`regghost_stored_objects{resource="namespaces", stored_as="v1"}`,
				`regghost_encryption_objects{resource="namespaces", key="identity", writes="unknown"}`} {
				if v, ok, err := p.value(q); err != nil || !ok || v < 4 {
					return fmt.Errorf("%s = %v (present %v, %v), want the namespaces kubeadm makes", q, v, ok, err)
				}
			}
			return nil
		})
	})

	t.Run("a dangling APIService is exported and alerted on", func(t *testing.T) {
		c.createNamespace(t, "metrics-ns")
		c.createHeadlessService(t, "metrics-ns", "metrics")
		c.createAggregatedAPI(t, "custom.metrics.example.com", "v1beta1", "metrics-ns", "metrics", nil)
		c.forceDelete(t, "/registry/namespaces/metrics-ns")
		c.forceDelete(t, "/registry/services/specs/metrics-ns/metrics")
		waitFor(t, 60*time.Second, "the dangling APIService in Prometheus", func() error {
			v, ok, err := p.value(`regghost_dangling_references{kind="APIService", state="gone", target_namespace="metrics-ns"}`)
			if err != nil || !ok || v != 1 {
				return fmt.Errorf("dangling APIService into metrics-ns = %v (present %v, %v), want 1", v, ok, err)
			}
			return nil
		})
		waitFor(t, 60*time.Second, "the dangling APIService alert fires", func() error {
			return firing(p, "RegghostDanglingAPIService", "target_namespace", "metrics-ns")
		})
		// Dated from the APIService's Available=False transition (or the
		// first cycle that saw it): a later cycle finds it older.
		waitFor(t, 60*time.Second, "the dangling APIService ages", func() error {
			v, ok, err := p.value(`regghost_dangling_reference_age_seconds{kind="APIService", state="gone", target_namespace="metrics-ns"}`)
			if err != nil || !ok || v <= 0 {
				return fmt.Errorf("age of the dangling APIService into metrics-ns = %v (present %v, %v), want more than 0", v, ok, err)
			}
			return nil
		})
	})

	t.Run("every dashboard query parses", func(t *testing.T) {
		exprs := grafanaExprs(t, dashboardFile)
		if len(exprs) < 10 {
			t.Fatalf("the dashboard has %d queries", len(exprs))
		}
		for _, e := range exprs {
			if _, err := p.query(e); err != nil {
				t.Errorf("dashboard query: %v", err)
			}
		}
	})
}

// firing returns nil once alert is firing with label = value.
func firing(p *promServer, alert, label, value string) error {
	q := fmt.Sprintf(`ALERTS{alertname=%q, alertstate="firing", %s=%q}`, alert, label, value)
	got, err := p.query(q)
	if err != nil {
		return err
	}
	if len(got) == 0 {
		all, _ := p.query(`ALERTS`)
		return fmt.Errorf("%s: nothing (alerts: %v)", q, all)
	}
	return nil
}

// objectSeries keys object counts the way samePromSeries does.
func objectSeries(m map[exporter.ObjectKey]int) map[string]float64 {
	out := map[string]float64{}
	for k, n := range m {
		out[strings.Join([]string{string(k.Class), k.Resource, k.Namespace}, "|")] = float64(n)
	}
	return out
}

// samePromSeries compares every series of metric in Prometheus, keyed by
// the labels joined with "|", with want.
func samePromSeries(p *promServer, metric string, labels []string, want map[string]float64) error {
	got, err := p.query(metric)
	if err != nil {
		return err
	}
	have := map[string]float64{}
	for _, s := range got {
		var parts []string
		for _, l := range labels {
			parts = append(parts, s.Metric[l])
		}
		have[strings.Join(parts, "|")] = s.Value
	}
	var diff []string
	for k, v := range want {
		if have[k] != v {
			diff = append(diff, fmt.Sprintf("%s: %s, want %s", k, fmtValue(have, k), strconv.FormatFloat(v, 'g', -1, 64)))
		}
	}
	for k := range have {
		if _, ok := want[k]; !ok {
			diff = append(diff, fmt.Sprintf("%s: %g, not in scan's report", k, have[k]))
		}
	}
	if len(diff) > 0 {
		sort.Strings(diff)
		return fmt.Errorf("%s differs from scan:\n%s", metric, strings.Join(diff, "\n"))
	}
	return nil
}

func fmtValue(m map[string]float64, k string) string {
	if v, ok := m[k]; ok {
		return strconv.FormatFloat(v, 'g', -1, 64)
	}
	return "absent"
}

// TestServeKeepsLastValuesWhenEtcdStops: while etcd does not answer (its
// process frozen), every cycle fails under reason etcd and /metrics keeps
// the last good values; serve does not exit, and once etcd answers again
// the next cycle sees what changed.
func TestServeKeepsLastValuesWhenEtcdStops(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{noAPIServer: true})
	c.put(t, "/registry/namespaces/default", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"default","uid":"5b0c7f36-6a2b-4c1e-9d3e-1f2a3b4c5d6e"}}`))
	orphan := func(name string) {
		c.put(t, "/registry/configmaps/gone/"+name, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`","namespace":"gone","uid":"uid-`+name+`"}}`))
	}
	orphan("a")
	s := c.startServe(t, t.TempDir(), "--interval", "200ms", "--dial-timeout", "1s", "--command-timeout", "10s")
	const objects = `regghost_objects{class="orphaned-namespace",namespace="gone",resource="configmaps"}`
	if v, ok := s.metric(t, objects); !ok || v != 1 {
		t.Fatalf("%s = %v (present %v), want 1", objects, v, ok)
	}
	// Without the API server the second witness is missing, and says so.
	for _, series := range []string{`regghost_check_done{check="api server witness"}`, "regghost_api_witness"} {
		if v, ok := s.metric(t, series); !ok || v != 0 {
			t.Errorf("%s = %v (present %v), want 0: the API server was not asked", series, v, ok)
		}
	}
	if v, ok := s.metric(t, `regghost_single_witness_ghosts{namespace="gone"}`); !ok || v != 1 {
		t.Errorf("single-witness ghosts of gone = %v (present %v), want 1", v, ok)
	}

	mustNoErr(t, "freeze etcd", syscall.Kill(c.etcdProc.cmd.Process.Pid, syscall.SIGSTOP))
	frozen := true
	defer func() {
		if frozen {
			_ = syscall.Kill(c.etcdProc.cmd.Process.Pid, syscall.SIGCONT)
		}
	}()
	waitFor(t, 60*time.Second, "a failed cycle counted under etcd", func() error {
		if v, _ := s.metric(t, `regghost_scan_errors_total{reason="etcd"}`); v < 1 {
			return fmt.Errorf("etcd errors %v", v)
		}
		if v, _ := s.metric(t, "regghost_last_scan_success"); v != 0 {
			return fmt.Errorf("regghost_last_scan_success %v", v)
		}
		return nil
	})
	if v, ok := s.metric(t, objects); !ok || v != 1 {
		t.Errorf("after a failed cycle %s = %v (present %v), want the last good 1", objects, v, ok)
	}
	if code, _, err := s.get("/readyz", true); err != nil || code != http.StatusOK {
		t.Errorf("/readyz after a failed cycle: %d %v, want 200 (the last good values are served)", code, err)
	}

	mustNoErr(t, "thaw etcd", syscall.Kill(c.etcdProc.cmd.Process.Pid, syscall.SIGCONT))
	frozen = false
	orphan("b")
	waitFor(t, 60*time.Second, "a good cycle after etcd is back", func() error {
		if v, _ := s.metric(t, objects); v != 2 {
			return fmt.Errorf("%s = %v, want 2", objects, v)
		}
		if v, _ := s.metric(t, "regghost_last_scan_success"); v != 1 {
			return fmt.Errorf("regghost_last_scan_success %v", v)
		}
		return nil
	})
}

// verdicts is every finding's key, classes, witnesses and their answers,
// one line each, in the report's order: what a scan judged, without the
// durations its reasons say.
func verdicts(rep *etcdscan.Report) string {
	var b strings.Builder
	for _, f := range rep.Findings {
		fmt.Fprintf(&b, "%s %v ghost=%v single=%v", f.Key, f.Classes, f.Ghost, f.SingleWitness)
		for _, e := range f.Evidence {
			fmt.Fprintf(&b, " %s/%s:%s", e.Class, e.Witness, e.Answer)
		}
		b.WriteString("\n")
	}
	return b.String()
}
