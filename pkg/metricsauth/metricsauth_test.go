package metricsauth

import (
	"bytes"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
)

// fixedConfig is a ConfigSource that never changes.
type fixedConfig struct {
	cfg *rest.Config
	err error
}

func (f fixedConfig) Config() (*rest.Config, uint64, error) { return f.cfg, 1, f.err }

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDelegatedWithoutReviewer: without a configuration there is no guard;
// with an API server that does not answer (a closed port), a request
// without a token is 401 at once, and one with a token 401 too once the
// review failed, the failure logged (kube-apiserver's answer). The API
// server's own answers are tested end to end in e2e/metricsauth_test.go.
func TestDelegatedWithoutReviewer(t *testing.T) {
	if _, err := New(fixedConfig{err: errors.New("no kubeconfig")}, slog.Default()); err == nil || !strings.Contains(err.Error(), "no kubeconfig") {
		t.Fatalf("New without a configuration: %v, want the reason", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "https://" + l.Addr().String()
	l.Close()
	var logs syncBuffer
	d, err := New(fixedConfig{cfg: &rest.Config{Host: closed, BearerToken: "serve", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}}, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(d.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("secret")) })))
	defer srv.Close()
	for _, tt := range []struct {
		name, token string
		wantLog     bool
	}{
		{"no token", "", false},
		{"a token the API server cannot review", "scraper", true},
	} {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: %d, want 401", tt.name, resp.StatusCode)
		}
		if got := strings.Contains(logs.String(), "token review failed"); got != tt.wantLog {
			t.Errorf("%s: review failure logged %v, want %v: %s", tt.name, got, tt.wantLog, logs.String())
		}
	}
}
