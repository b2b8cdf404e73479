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
		{"nobody to ask", Config{Endpoints: []string{"127.0.0.1:2379"}, User: "root", AskPassword: func() (string, error) { return "", nil }}, 0, "", "--user root needs a password"},
	} {
		asked = 0
		cfg, err := tc.c.ClientConfig()
		if asked != tc.asks || cfg.Password != tc.password || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: asked %d, password %q, err %v; want %d, %q, %q", tc.name, asked, cfg.Password, err, tc.asks, tc.password, tc.err)
		}
	}
}
