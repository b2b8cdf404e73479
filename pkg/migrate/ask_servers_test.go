package migrate

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"

	"github.com/regghost/regghost/pkg/apiview"
)

// fakeAPIServer is a kube-apiserver's /version and the default/kubernetes
// EndpointSlice it lists (addrs, host:port), or 403 for that list when
// forbidden (RBAC).
func fakeAPIServer(t *testing.T, gitVersion string, addrs func() []string, forbidden bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/version":
			_ = json.NewEncoder(w).Encode(version.Info{GitVersion: gitVersion, Major: "1", Minor: "37"})
		case strings.HasSuffix(r.URL.Path, "/namespaces/default/endpointslices") && forbidden:
			w.WriteHeader(http.StatusForbidden)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403,"message":"endpointslices.discovery.k8s.io is forbidden"}`))
		case strings.HasSuffix(r.URL.Path, "/namespaces/default/endpointslices"):
			// One slice per address: a slice has one port for all.
			name := "https"
			var items []discoveryv1.EndpointSlice
			for _, a := range addrs() {
				host, p, _ := net.SplitHostPort(a)
				n, _ := strconv.Atoi(p)
				port := int32(n)
				items = append(items, discoveryv1.EndpointSlice{AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{host}}},
					Ports: []discoveryv1.EndpointPort{{Name: &name, Port: &port}}})
			}
			_ = json.NewEncoder(w).Encode(discoveryv1.EndpointSliceList{TypeMeta: metaList(), Items: items})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// refused is a host:port nothing listens at.
func refused(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestAskServers: every kube-apiserver the default/kubernetes EndpointSlice
// lists is asked on its own address and one that cannot be asked is named,
// never failing the others (one down but still listed); a list that
// cannot be read (RBAC) is named, not dropped, and the kubeconfig's server
// is asked; where none listed answers from here (a bastion that reaches
// only the load balancer) the kubeconfig's address is asked instead, said.
func TestAskServers(t *testing.T) {
	dead := refused(t)
	var live string
	a := fakeAPIServer(t, "v1.37.2", func() []string { return []string{live, dead} }, false)
	live = strings.TrimPrefix(a.URL, "https://")
	forbidden := fakeAPIServer(t, "v1.37.2", nil, true)
	otherDead := refused(t)
	bastion := fakeAPIServer(t, "v1.37.2", func() []string { return []string{dead, otherDead} }, false)
	for _, tc := range []struct {
		name      string
		url       string
		asked     []string
		through   bool
		notAsked  []string
		unaskedIn string
	}{
		{"one down but still listed", a.URL, []string{live}, false, []string{dead}, "connection refused"},
		{"the list forbidden", forbidden.URL, []string{strings.TrimPrefix(forbidden.URL, "https://")}, false, []string{"the other kube-apiservers"}, "forbidden"},
		{"a bastion", bastion.URL, []string{strings.TrimPrefix(bastion.URL, "https://")}, true, []string{dead, otherDead}, "connection refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := apiview.New(&rest.Config{Host: tc.url, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
			if err != nil {
				t.Fatal(err)
			}
			s := AskServers(context.Background(), v)
			var asked []string
			for _, sv := range s.Asked {
				asked = append(asked, strings.TrimPrefix(sv.Address, "https://"))
				if sv.Through != tc.through || sv.Version != "v1.37.2" {
					t.Errorf("asked %+v, want through %v at v1.37.2", sv, tc.through)
				}
			}
			if strings.Join(asked, " ") != strings.Join(tc.asked, " ") {
				t.Errorf("asked %v, want %v", asked, tc.asked)
			}
			if len(s.NotAsked) != len(tc.notAsked) {
				t.Fatalf("not asked %v, want %v", s.NotAsked, tc.notAsked)
			}
			// In any order: each one not asked is named once.
			for _, want := range tc.notAsked {
				if n := len(slices.DeleteFunc(slices.Clone(s.NotAsked), func(n string) bool { return !strings.Contains(n, want) })); n != 1 {
					t.Errorf("not asked %q: %s named %d times, want once", s.NotAsked, want, n)
				}
			}
			if !strings.Contains(s.Unasked(), tc.unaskedIn) {
				t.Errorf("unasked %q does not say %q", s.Unasked(), tc.unaskedIn)
			}
		})
	}
}

func metaList() metav1.TypeMeta {
	return metav1.TypeMeta{Kind: "EndpointSliceList", APIVersion: "discovery.k8s.io/v1"}
}
