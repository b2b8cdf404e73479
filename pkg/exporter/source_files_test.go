package exporter

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/apiview"
	"github.com/regghost/regghost/pkg/decrypt"
	"github.com/regghost/regghost/pkg/etcdscan"
)

// TestSourceConnectsAfreshWhenTLSFilesChange: a Source keeps its etcd
// client while etcd's TLS files are unchanged, and connects afresh (loading
// the encryption config again) at the first cycle after they change,
// without waiting for a cycle to fail. Files that cannot be used yet (half
// rewritten) leave the cycle on the old client, and the next cycle tries
// again. OpenAPI is asked at every cycle.
func TestSourceConnectsAfreshWhenTLSFilesChange(t *testing.T) {
	_, ep := etcdtest.Start(t)
	connects, loads, asked := 0, 0, 0
	files := "first certificate"
	var clients []*clientv3.Client
	t.Cleanup(func() {
		for _, c := range clients {
			c.Close()
		}
	})
	src := NewSource(SourceOptions{
		Connect: func(context.Context) (*clientv3.Client, error) {
			connects++
			if files == "new certificate, old key" {
				return nil, errors.New("--key is not the private key of --cert")
			}
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			clients = append(clients, cli)
			return cli, err
		},
		LoadDecrypter: func(context.Context) (*decrypt.Decrypter, error) { loads++; return nil, nil },
		OpenAPI:       func() (*apiview.View, string) { asked++; return nil, "--no-api given" },
		TLSFiles:      func() string { return files },
		DialTimeout:   5 * time.Second, PageSize: etcdscan.DefaultPageSize, Stream: true,
		Scan: func(context.Context, ScanInput) (*etcdscan.Report, error) { return &etcdscan.Report{}, nil },
	})
	defer src.Close()
	steps := []struct {
		name  string
		files string
		// wantConnects counts the tries, wantLoads the clients opened.
		wantConnects, wantLoads int
	}{
		{"first cycle", "first certificate", 1, 1},
		{"files unchanged", "first certificate", 1, 1},
		{"files half rewritten", "new certificate, old key", 2, 1},
		{"files rotated", "second certificate", 3, 2},
		{"unchanged again", "second certificate", 3, 2},
	}
	for i, s := range steps {
		files = s.files
		if _, err := src.Scan(context.Background()); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if connects != s.wantConnects || loads != s.wantLoads || asked != i+1 {
			t.Fatalf("%s: connected %d times, loaded %d, asked the API %d; want %d, %d, %d", s.name, connects, loads, asked, s.wantConnects, s.wantLoads, i+1)
		}
	}
}
