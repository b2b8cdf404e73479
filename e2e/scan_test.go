package e2e

import (
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/etcdscan"
)

func assertFindings(t *testing.T, rep *etcdscan.Report, want map[string][]etcdscan.Class) {
	t.Helper()
	got := classesByKey(rep)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !reflect.DeepEqual(got[k], want[k]) {
			reason := ""
			for _, f := range rep.Findings {
				if f.Key == k {
					reason = f.Reason()
				}
			}
			t.Errorf("%s: classes %v, want %v (%s)", k, got[k], want[k], reason)
		}
	}
}

// assertEvidence checks that the API server confirmed a class of a finding,
// saying want.
func assertEvidence(t *testing.T, rep *etcdscan.Report, key string, c etcdscan.Class, want string) {
	t.Helper()
	for _, f := range rep.Findings {
		if f.Key != key {
			continue
		}
		for _, e := range f.Evidence {
			if e.Class == c && e.Witness == etcdscan.WitnessAPIServer {
				if e.Answer != etcdscan.Confirms || !strings.Contains(e.Said, want) {
					t.Errorf("%s %s: the API server answered %s: %s (want it to confirm: %q)", key, c, e.Answer, e.Said, want)
				}
				return
			}
		}
		t.Errorf("%s: no API server evidence for %s: %+v", key, c, f.Evidence)
		return
	}
	t.Errorf("%s: no finding", key)
}

func TestScanFindsExactlyThePlantedGhosts(t *testing.T) {
	parallel(t)
	c := startCluster(t, clusterOptions{})
	want := plantGhosts(t, c)

	t.Run("whole keyspace", func(t *testing.T) {
		rep, code := c.scanJSON(t, "--terminating-after", "1ns")
		assertFindings(t, rep, want)
		if code != 3 {
			t.Errorf("exit code %d, want 3 (ghosts found)", code)
		}
		if rep.Revision == 0 || !strings.HasPrefix(rep.Catalog, "api server discovery") {
			t.Errorf("revision %d catalog %q", rep.Revision, rep.Catalog)
		}
		// With the API server up every ghost has two witnesses, but for the
		// stale encryption prefix: no --encryption-provider-config was given,
		// so only the API server can say it cannot decrypt it.
		for _, f := range rep.Findings {
			if want := f.Key == "/registry/secrets/mixed/rotated"; f.Ghost && f.SingleWitness != want {
				t.Errorf("%s: single-witness %v with the API server up: %+v", f.Key, f.SingleWitness, f.Evidence)
			}
		}
		// kube-apiserver v1.37 says "object not decodable" (its corrupt-object
		// path, AllowUnsafeMalformedObjectDeletion on), older ones the decoder's
		// error alone; both end in it.
		assertEvidence(t, rep, "/registry/configmaps/mixed/broken", etcdscan.ClassUndecodable, "proto: illegal wireType 6")
		assertEvidence(t, rep, "/registry/secrets/mixed/rotated", etcdscan.ClassEncryptedUnknown, "identity transformer tried to read encrypted data")
		assertEvidence(t, rep, "/registry/pods/kb-system/p1", etcdscan.ClassOrphanedNamespace, "404 NotFound")
		assertEvidence(t, rep, "/registry/example.com/widgets/kb-system/w1", etcdscan.ClassUnservedType, "CustomResourceDefinition is 404 NotFound")
	})
	t.Run("one namespace", func(t *testing.T) {
		rep, code := c.scanJSON(t, "--namespace", "kb-system")
		assertFindings(t, rep, filterNamespace(want, "kb-system"))
		if code != 3 {
			t.Errorf("exit code %d, want 3", code)
		}
	})
	t.Run("healthy namespace", func(t *testing.T) {
		rep, code := c.scanJSON(t, "--namespace", "healthy")
		assertFindings(t, rep, nil)
		if code != 0 {
			t.Errorf("exit code %d, want 0", code)
		}
		if rep.ScannedKeys < 5 {
			t.Errorf("scanned %d keys in healthy, want its namespace, pod, configmap, secret and gadget", rep.ScannedKeys)
		}
	})
	t.Run("without the API server", func(t *testing.T) {
		// etcd alone decides everything but the API read-backs: the stale
		// encryption prefix cannot be confirmed and is not reported.
		offline := map[string][]etcdscan.Class{}
		for k, v := range want {
			if k != "/registry/secrets/mixed/rotated" {
				offline[k] = v
			}
		}
		out, errOut, code := runBinary(t, "", append([]string{"scan", "-o", "json", "--no-api", "--terminating-after", "1ns"}, c.etcdArgs()...)...)
		if code != 3 {
			t.Fatalf("exit %d: %s", code, errOut)
		}
		rep := decodeReport(t, out)
		assertFindings(t, rep, offline)
		notDone := false
		for _, ch := range rep.Checks {
			notDone = notDone || !ch.Done
		}
		if !notDone {
			t.Errorf("report does not say which checks it could not make: %+v", rep.Checks)
		}
	})
	t.Run("table", func(t *testing.T) {
		out, _, code := c.regghost(t, "", "scan", "--namespace", "kb-system")
		if code != 3 {
			t.Errorf("exit %d", code)
		}
		for _, s := range []string{"NAMESPACE", "KIND", "NAME", "CLASS", "AGE", "kb-system  Pod        p1", "orphaned-namespace", "# namespace kb-system does not exist", "Ghosts: 5 (unserved-type 1, orphaned-namespace 4)"} {
			if !strings.Contains(out, s) {
				t.Errorf("table output lacks %q:\n%s", s, out)
			}
		}
		// The reason the four orphans share is said once, and the table fits 120 columns.
		if n := strings.Count(out, "# namespace kb-system does not exist"); n != 1 {
			t.Errorf("the reason the orphans share is said %d times:\n%s", n, out)
		}
		for _, line := range strings.Split(out, "\n") {
			if len([]rune(line)) > 120 {
				t.Errorf("line wider than 120 columns: %q", line)
			}
		}
		wide, _, _ := c.regghost(t, "", "scan", "--namespace", "kb-system", "-o", "wide")
		for _, s := range []string{"KEY", "REASON", "REVISION", "/registry/pods/kb-system/p1"} {
			if !strings.Contains(wide, s) {
				t.Errorf("wide output lacks %q:\n%s", s, wide)
			}
		}
	})
	t.Run("get decodes one key", func(t *testing.T) {
		out, errOut, code := c.regghost(t, "", "get", "/registry/pods/kb-system/p1", "-o", "yaml")
		if code != 0 || !strings.Contains(out, "image: busybox") || !strings.Contains(out, "kind: Pod") {
			t.Errorf("get exit %d: %s\n%s", code, errOut, out)
		}
		_, errOut, code = c.regghost(t, "", "get", "/registry/secrets/mixed/rotated")
		if code != 1 || !strings.Contains(errOut, `encrypted at rest with aescbc key "retired-key"`) {
			t.Errorf("get of an encrypted value: exit %d: %s", code, errOut)
		}
		_, errOut, code = c.regghost(t, "", "get", "/registry/pods/kb-system/nope")
		if code != 1 || !strings.Contains(errOut, "does not exist") {
			t.Errorf("get of a missing key: exit %d: %s", code, errOut)
		}
	})
}
