package repair

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	clientv3 "go.etcd.io/etcd/client/v3"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/backup"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

const (
	gadgetCRD  = "/registry/apiextensions.k8s.io/customresourcedefinitions/gadgets.example.com"
	gadgetNS   = "/registry/namespaces/ns1"
	shopNS     = "/registry/namespaces/shop"
	adapterSvc = "/registry/services/specs/shop/adapter"
	adapterAPI = "/registry/apiregistration.k8s.io/apiservices/v1beta1.custom.metrics.example.com"
)

// crdValue is CustomResourceDefinition gadgets.example.com as stored (JSON),
// listing versions (the last the storage version) with storedVersions.
func crdValue(t *testing.T, versions []string, stored ...string) string {
	t.Helper()
	crd := apiextensionsv1.CustomResourceDefinition{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.example.com", UID: "crd-uid"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{StoredVersions: stored}}
	for i, v := range versions {
		last := i == len(versions)-1
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: v, Served: last, Storage: last})
	}
	data, err := json.Marshal(crd)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// gadget is a Gadget stored at example.com/version.
func gadget(name, version string) string {
	return `{"apiVersion":"example.com/` + version + `","kind":"Gadget","metadata":{"name":"` + name + `","namespace":"ns1","uid":"uid-` + name + `"}}`
}

// apiService is APIService v1beta1.custom.metrics.example.com, calling
// service shop/adapter (none: served by kube-apiserver itself).
func apiService(t *testing.T, service bool) string {
	t.Helper()
	a := apiregistrationv1.APIService{TypeMeta: metav1.TypeMeta{APIVersion: "apiregistration.k8s.io/v1", Kind: "APIService"},
		ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.custom.metrics.example.com", UID: "api-uid"},
		Spec:       apiregistrationv1.APIServiceSpec{Group: "custom.metrics.example.com", Version: "v1beta1", GroupPriorityMinimum: 100, VersionPriority: 100}}
	if service {
		a.Spec.Service = &apiregistrationv1.ServiceReference{Namespace: "shop", Name: "adapter"}
	}
	data, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// notReadySlice is shop/adapter's EndpointSlice, its one endpoint not ready.
func notReadySlice(t *testing.T) string {
	t.Helper()
	no := false
	return etcdtest.Encode(t, &discoveryv1.EndpointSlice{TypeMeta: metav1.TypeMeta{APIVersion: "discovery.k8s.io/v1", Kind: "EndpointSlice"},
		ObjectMeta:  metav1.ObjectMeta{Name: "adapter-x", Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: "adapter"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &no}}}})
}

// TestRestoreChecksWhatTheBytesNeed: a custom resource is not written back
// at a version its CRD's spec.versions no longer lists (migrate proved it
// gone; every list of the resource would fail), the others of the same
// backup are; a CRD that is gone keeps restore's rules of before (the ghosts
// of a deleted CRD come back, a key whose CRD existed at the backup is
// refused); an APIService is not written back while the Service it calls is
// gone. The run does only what the dry run showed: a refused key is never
// written, and stays refused.
func TestRestoreChecksWhatTheBytesNeed(t *testing.T) {
	type entry struct {
		key, value string
		// absent are the witnesses absent when the purge deleted it; needs
		// the live keys it rested on when captured.
		absent, needs []string
	}
	tests := []struct {
		name string
		// live are put before the backup and stay, unless in gone.
		live    map[string]string
		entries []entry
		action  string
		gone    []string
		// after are put after the backup (the CRD edited since).
		after  map[string]string
		want   map[string]etcdwrite.Outcome
		detail map[string][]string
		// none are details a key's outcome must not carry.
		none map[string][]string
	}{
		{name: "a version the CRD no longer lists is refused, the storage version restored",
			live: map[string]string{gadgetCRD: crdValue(t, []string{"v1beta1", "v1"}, "v1beta1", "v1")},
			entries: []entry{
				{key: "/registry/example.com/gadgets/ns1/g1", value: gadget("g1", "v1beta1"), absent: []string{gadgetNS}},
				{key: "/registry/example.com/gadgets/ns1/g2", value: gadget("g2", "v1"), absent: []string{gadgetNS}}},
			// migrate moved the live ones, pruned storedVersions, and the
			// CRD was applied without v1beta1.
			after: map[string]string{gadgetCRD: crdValue(t, []string{"v1"}, "v1")},
			want:  map[string]etcdwrite.Outcome{"/registry/example.com/gadgets/ns1/g1": etcdwrite.Refused, "/registry/example.com/gadgets/ns1/g2": etcdwrite.WouldRestore},
			detail: map[string][]string{"/registry/example.com/gadgets/ns1/g1": {"stored at example.com/v1beta1, which CustomResourceDefinition gadgets.example.com no longer lists in spec.versions (it lists v1)",
				"every list of gadgets fail", "list v1beta1 in the CRD's spec.versions again (served: false)", "`regghost migrate gadgets.example.com --confirm`"}},
			none: map[string][]string{"/registry/example.com/gadgets/ns1/g2": {"storedVersions", "stored version"}}},
		{name: "a version listed still but pruned from storedVersions: restored, with what to run after",
			live: map[string]string{gadgetCRD: crdValue(t, []string{"v1beta1", "v1"}, "v1")},
			entries: []entry{
				{key: "/registry/example.com/gadgets/ns1/g1", value: gadget("g1", "v1beta1"), absent: []string{gadgetNS}}},
			want: map[string]etcdwrite.Outcome{"/registry/example.com/gadgets/ns1/g1": etcdwrite.WouldRestore},
			detail: map[string][]string{"/registry/example.com/gadgets/ns1/g1": {"which status.storedVersions of CustomResourceDefinition gadgets.example.com no longer lists ([v1]",
				"run `regghost migrate gadgets.example.com --confirm` after the restore"}}},
		{name: "the CRD gone at the purge and now: its ghosts come back, as before",
			entries: []entry{
				{key: "/registry/example.com/gadgets/ns1/g1", value: gadget("g1", "v1beta1"), absent: []string{gadgetNS, gadgetCRD}}},
			want: map[string]etcdwrite.Outcome{"/registry/example.com/gadgets/ns1/g1": etcdwrite.WouldRestore},
			none: map[string][]string{"/registry/example.com/gadgets/ns1/g1": {"spec.versions", "stored version"}}},
		{name: "the CRD existed at the backup and is gone: refused, as before",
			live:   map[string]string{gadgetNS: "ns", gadgetCRD: crdValue(t, []string{"v1"}, "v1")},
			action: backup.ActionUnstick,
			entries: []entry{
				{key: "/registry/example.com/gadgets/ns1/g1", value: gadget("g1", "v1"), needs: []string{gadgetNS, gadgetCRD}}},
			gone:   []string{gadgetCRD},
			want:   map[string]etcdwrite.Outcome{"/registry/example.com/gadgets/ns1/g1": etcdwrite.Refused},
			detail: map[string][]string{"/registry/example.com/gadgets/ns1/g1": {"CustomResourceDefinition gadgets.example.com existed when the backup was taken and is gone now"}}},
		{name: "the CRD comes back with the backup: judged by its bytes",
			entries: []entry{
				{key: gadgetCRD, value: crdValue(t, []string{"v1"}, "v1")},
				{key: "/registry/example.com/gadgets/ns1/g1", value: gadget("g1", "v1beta1"), absent: []string{gadgetNS}},
				{key: "/registry/example.com/gadgets/ns1/g2", value: gadget("g2", "v1"), absent: []string{gadgetNS}}},
			want: map[string]etcdwrite.Outcome{gadgetCRD: etcdwrite.WouldRestore,
				"/registry/example.com/gadgets/ns1/g1": etcdwrite.Refused, "/registry/example.com/gadgets/ns1/g2": etcdwrite.WouldRestore},
			detail: map[string][]string{"/registry/example.com/gadgets/ns1/g1": {"no longer lists in spec.versions (it lists v1)"}}},
		{name: "a CRD that cannot be read: refused, with what reads it",
			live: map[string]string{gadgetCRD: "k8s:enc:aescbc:v1:key1:sealed"},
			entries: []entry{
				{key: "/registry/example.com/gadgets/ns1/g1", value: gadget("g1", "v1"), absent: []string{gadgetNS}}},
			want:   map[string]etcdwrite.Outcome{"/registry/example.com/gadgets/ns1/g1": etcdwrite.Refused},
			detail: map[string][]string{"/registry/example.com/gadgets/ns1/g1": {"CustomResourceDefinition gadgets.example.com cannot be read here", "--encryption-provider-config"}}},
		{name: "a value whose stored version cannot be read: restored, saying so",
			live: map[string]string{gadgetCRD: crdValue(t, []string{"v1"}, "v1")},
			entries: []entry{
				{key: "/registry/example.com/gadgets/ns1/g1", value: "k8s:enc:kms:v2:vault:sealed", absent: []string{gadgetNS}}},
			want:   map[string]etcdwrite.Outcome{"/registry/example.com/gadgets/ns1/g1": etcdwrite.WouldRestore},
			detail: map[string][]string{"/registry/example.com/gadgets/ns1/g1": {"its stored version cannot be read here", "(it lists v1)", "`kubectl get gadgets -A`"}}},
		{name: "an APIService whose Service is gone: refused",
			entries: []entry{{key: adapterAPI, value: apiService(t, true)}},
			want:    map[string]etcdwrite.Outcome{adapterAPI: etcdwrite.Refused},
			detail: map[string][]string{adapterAPI: {"APIService v1beta1.custom.metrics.example.com calls service shop/adapter, which is gone (no " + adapterSvc + ")",
				"discovery of custom.metrics.example.com/v1beta1 fails", "every namespace deletion in the cluster hangs", "bring service shop/adapter back"}}},
		{name: "an APIService whose Service is there",
			live:    map[string]string{shopNS: "ns", adapterSvc: "svc"},
			entries: []entry{{key: adapterAPI, value: apiService(t, true)}},
			want:    map[string]etcdwrite.Outcome{adapterAPI: etcdwrite.WouldRestore}},
		{name: "an APIService whose Service has no ready endpoint: restored, said",
			live: map[string]string{shopNS: "ns", adapterSvc: "svc",
				"/registry/endpointslices/shop/adapter-x": notReadySlice(t)},
			entries: []entry{{key: adapterAPI, value: apiService(t, true)}},
			want:    map[string]etcdwrite.Outcome{adapterAPI: etcdwrite.WouldRestore},
			detail:  map[string][]string{adapterAPI: {"service shop/adapter has no ready endpoint now", "every namespace deletion hangs again"}}},
		{name: "an APIService whose Service comes back with it",
			live: map[string]string{shopNS: "ns"},
			// the APIService first in the backup: written last all the same
			entries: []entry{{key: adapterAPI, value: apiService(t, true)}, {key: adapterSvc, value: "svc"}},
			want:    map[string]etcdwrite.Outcome{adapterAPI: etcdwrite.WouldRestore, adapterSvc: etcdwrite.WouldRestore},
			detail:  map[string][]string{adapterAPI: {"service shop/adapter, which it calls, comes back with it"}}},
		{name: "an APIService whose Service's restore is refused: refused too",
			live:   map[string]string{shopNS: "ns"},
			action: backup.ActionUnstick,
			entries: []entry{{key: adapterAPI, value: apiService(t, true)},
				{key: adapterSvc, value: "svc", needs: []string{shopNS}}},
			gone:   []string{shopNS},
			want:   map[string]etcdwrite.Outcome{adapterAPI: etcdwrite.Refused, adapterSvc: etcdwrite.Refused},
			detail: map[string][]string{adapterAPI: {"calls service shop/adapter, which is gone"}}},
		{name: "an APIService kube-apiserver serves itself",
			entries: []entry{{key: adapterAPI, value: apiService(t, false)}},
			want:    map[string]etcdwrite.Outcome{adapterAPI: etcdwrite.WouldRestore}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			ctx := context.Background()
			created := map[string]int64{}
			for k, v := range tt.live {
				created[k] = etcdtest.Put(t, cli, k, v).CreateRevision
			}
			var entries []backup.Entry
			for _, x := range tt.entries {
				e := backup.EntryOf(etcdtest.Put(t, cli, x.key, x.value))
				e.Absent = x.absent
				for _, k := range x.needs {
					e.Needs = append(e.Needs, backup.Present{Key: k, CreateRevision: created[k]})
				}
				entries = append(entries, e)
			}
			resp, err := cli.Get(ctx, "/")
			if err != nil {
				t.Fatal(err)
			}
			b := &backup.Backup{Prefix: "/registry/", ScanRevision: resp.Header.Revision, Entries: entries, Action: tt.action}
			for _, x := range tt.entries {
				if _, err := cli.Delete(ctx, x.key); err != nil {
					t.Fatal(err)
				}
			}
			for _, k := range tt.gone {
				if _, err := cli.Delete(ctx, k); err != nil {
					t.Fatal(err)
				}
			}
			for k, v := range tt.after {
				etcdtest.Put(t, cli, k, v)
			}
			check := func(stage string, res []etcdwrite.Result, run bool) {
				t.Helper()
				for _, r := range res {
					want := tt.want[r.Key]
					if run && want == etcdwrite.WouldRestore {
						want = etcdwrite.Restored
					}
					if r.Outcome != want {
						t.Errorf("%s: %s: %s, want %s (%s)", stage, r.Key, r.Outcome, want, r.Detail)
					}
					for _, d := range tt.detail[r.Key] {
						if !strings.Contains(r.Detail, d) {
							t.Errorf("%s: %s: detail %q lacks %q", stage, r.Key, r.Detail, d)
						}
					}
					for _, d := range tt.none[r.Key] {
						if strings.Contains(r.Detail, d) {
							t.Errorf("%s: %s: detail %q has %q", stage, r.Key, r.Detail, d)
						}
					}
				}
			}
			plan, err := RestoreWith(ctx, cli, b, RestoreOptions{DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			check("dry run", plan, false)
			res, err := RestoreWith(ctx, cli, b, RestoreOptions{})
			if err != nil {
				t.Fatal(err)
			}
			check("run", res, true)
			var svcRev, apiRev int64
			for _, r := range res {
				got, err := cli.Get(ctx, r.Key)
				if err != nil {
					t.Fatal(err)
				}
				if r.Outcome == etcdwrite.Refused && len(got.Kvs) != 0 {
					t.Errorf("%s refused, yet written", r.Key)
				}
				if r.Outcome == etcdwrite.Restored && len(got.Kvs) == 1 {
					switch r.Key {
					case adapterSvc:
						svcRev = got.Kvs[0].CreateRevision
					case adapterAPI:
						apiRev = got.Kvs[0].CreateRevision
					}
				}
			}
			if svcRev != 0 && apiRev != 0 && apiRev < svcRev {
				t.Errorf("the APIService was written (revision %d) before the Service it calls (%d)", apiRev, svcRev)
			}
		})
	}
}

// onFirstTxn runs do before the first transaction: what someone else does
// between the plan and the writes.
type onFirstTxn struct {
	*clientv3.Client
	once sync.Once
	do   func()
}

func (k *onFirstTxn) Txn(ctx context.Context) clientv3.Txn {
	k.once.Do(k.do)
	return k.Client.Txn(ctx)
}

// TestRestoreComparesTheCRDItJudged: the CRD a custom resource was judged
// on is edited between the plan and the write; the key is not written, and
// says why (on kine, read just before each write: the keys after the edit).
func TestRestoreComparesTheCRDItJudged(t *testing.T) {
	for _, oneKey := range []bool{false, true} {
		name := "etcd"
		if oneKey {
			name = "kine"
		}
		t.Run(name, func(t *testing.T) {
			cli, _ := etcdtest.Start(t)
			ctx := context.Background()
			etcdtest.Put(t, cli, gadgetCRD, crdValue(t, []string{"v1beta1", "v1"}, "v1"))
			var entries []backup.Entry
			for _, n := range []string{"g1", "g2"} {
				e := backup.EntryOf(etcdtest.Put(t, cli, "/registry/example.com/gadgets/ns1/"+n, gadget(n, "v1beta1")))
				e.Absent = []string{gadgetNS}
				entries = append(entries, e)
				if _, err := cli.Delete(ctx, e.Key); err != nil {
					t.Fatal(err)
				}
			}
			b := &backup.Backup{Prefix: "/registry/", ScanRevision: entries[1].ModRevision, Entries: entries}
			kv := &onFirstTxn{Client: cli, do: func() { etcdtest.Put(t, cli, gadgetCRD, crdValue(t, []string{"v1"}, "v1")) }}
			res, err := RestoreWith(ctx, kv, b, RestoreOptions{Pacing: etcdwrite.Pacing{PerSecond: 1000, OneKey: oneKey}})
			if err != nil {
				t.Fatal(err)
			}
			// On kine the first key's write is the transaction the edit
			// races: it lands, as a write read just before always may.
			from := 0
			if oneKey {
				from = 1
			}
			for _, r := range res[from:] {
				if r.Outcome != etcdwrite.Refused || !strings.Contains(r.Detail, "CustomResourceDefinition gadgets.example.com was changed during the restore") {
					t.Errorf("%s: %s (%s), want refused: its CRD changed", r.Key, r.Outcome, r.Detail)
				}
				if got, _ := cli.Get(ctx, r.Key); len(got.Kvs) != 0 {
					t.Errorf("%s written after its CRD changed", r.Key)
				}
			}
		})
	}
}
