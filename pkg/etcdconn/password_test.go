package etcdconn

import (
	"strings"
	"testing"
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
