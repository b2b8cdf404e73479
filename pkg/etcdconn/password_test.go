package etcdconn

import (
	"crypto/tls"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestAskPasswordOnlyWhenConnecting: the password of --user is asked when a
// client is configured and nothing gave it, never otherwise.
func TestAskPasswordOnlyWhenConnecting(t *testing.T) {
	asked := 0
	ask := func() (string, error) { asked++; return "s3cret", nil }
	for _, tc := range []struct {
		name     string
		c        Config
		asks     int
		password string
		err      string
	}{
		{"no user", Config{Endpoints: []string{"127.0.0.1:2379"}, AskPassword: ask}, 0, "", ""},
		{"user:password", Config{Endpoints: []string{"127.0.0.1:2379"}, User: "root:given", AskPassword: ask}, 0, "given", ""},
		{"--password", Config{Endpoints: []string{"127.0.0.1:2379"}, User: "root", Password: "flag", AskPassword: ask}, 0, "flag", ""},
		{"asked", Config{Endpoints: []string{"127.0.0.1:2379"}, User: "root", AskPassword: ask}, 1, "s3cret", ""},
		{"http to another host", Config{Endpoints: []string{"127.0.0.1:2379", "http://10.0.0.5:2379"}, User: "root", AskPassword: ask}, 0, "", "in the clear to http://10.0.0.5:2379"},
		{"no scheme, no TLS, another host", Config{Endpoints: []string{"etcd-0.internal:2379"}, User: "root:given"}, 0, "", "in the clear to etcd-0.internal:2379"},
		{"loopback over http", Config{Endpoints: []string{"http://localhost:2379", "http://[::1]:2379", "unix:///run/etcd.sock"}, User: "root:given"}, 0, "given", ""},
		{"https to another host", Config{Endpoints: []string{"https://10.0.0.5:2379"}, User: "root:given"}, 0, "given", ""},
		{"the first endpoint's http decides for all", Config{Endpoints: []string{"http://127.0.0.1:2379", "https://10.0.0.5:2379"}, User: "root:given"}, 0, "", "in the clear to https://10.0.0.5:2379"},
		{"unix: without slashes", Config{Endpoints: []string{"unix:/run/etcd.sock"}, User: "root:given"}, 0, "given", ""},
		{"nobody to ask", Config{Endpoints: []string{"127.0.0.1:2379"}, User: "root", AskPassword: func() (string, error) { return "", nil }}, 0, "", "--user root needs a password"},
	} {
		asked = 0
		cfg, err := tc.c.ClientConfig()
		if asked != tc.asks || cfg.Password != tc.password || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: asked %d, password %q, err %v; want %d, %q, %q", tc.name, asked, cfg.Password, err, tc.asks, tc.password, tc.err)
		}
	}
}

// TestAskPasswordNow: asked once, before connecting, only when it would be
// asked then; the client then takes the answer without asking again.
func TestAskPasswordNow(t *testing.T) {
	asked := 0
	ask := func() (string, error) { asked++; return "s3cret", nil }
	for _, tc := range []struct {
		name string
		c    Config
		asks int
	}{
		{"no user", Config{AskPassword: ask}, 0},
		{"user:password", Config{User: "root:given", AskPassword: ask}, 0},
		{"--password", Config{User: "root", Password: "flag", AskPassword: ask}, 0},
		{"asked", Config{User: "root", AskPassword: ask}, 1},
	} {
		asked = 0
		tc.c.Endpoints = []string{"127.0.0.1:2379"}
		if err := tc.c.AskPasswordNow(); err != nil {
			t.Fatal(err)
		}
		if _, err := tc.c.ClientConfig(); err != nil || asked != tc.asks {
			t.Errorf("%s: asked %d, err %v; want %d", tc.name, asked, err, tc.asks)
		}
	}
}

// TestCheckCredentials: a client for a member's client URL from the member
// list (not one given) is refused too when it would carry the password in
// the clear; without a user, or over TLS, it goes.
func TestCheckCredentials(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  clientv3.Config
		err  string
	}{
		{"a member's plain URL", clientv3.Config{Endpoints: []string{"http://10.0.0.6:2379"}, Username: "root", Password: "pw"}, "in the clear to http://10.0.0.6:2379"},
		{"no user", clientv3.Config{Endpoints: []string{"http://10.0.0.6:2379"}}, ""},
		{"TLS", clientv3.Config{Endpoints: []string{"10.0.0.6:2379"}, Username: "root", Password: "pw", TLS: &tls.Config{}}, ""},
	} {
		err := CheckCredentials(tc.cfg)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
	// Never asked only to be refused.
	asked := false
	c := Config{Endpoints: []string{"http://10.0.0.6:2379"}, User: "root", AskPassword: func() (string, error) { asked = true; return "pw", nil }}
	if err := c.AskPasswordNow(); err == nil || asked {
		t.Errorf("asked %v before a refusal: %v", asked, err)
	}
}
