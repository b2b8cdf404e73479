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

// TestSourceReconnects: a Source keeps one etcd client across cycles,
// counts a failed scan under the reason it names (or etcd's, when etcd
// does not answer), and after ReconnectAfter etcd failures in a row
// connects afresh, loading the encryption config again.
func TestSourceReconnects(t *testing.T) {
	_, ep := etcdtest.Start(t)
	connects, loads := 0, 0
	var clients []*clientv3.Client
	t.Cleanup(func() {
		for _, c := range clients {
			c.Close()
		}
	})
	var scanErr error
	var got ScanInput
	src := NewSource(SourceOptions{
		Connect: func(context.Context) (*clientv3.Client, error) {
			connects++
			cli, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
			clients = append(clients, cli)
			return cli, err
		},
		LoadDecrypter: func(context.Context) (*decrypt.Decrypter, error) { loads++; return nil, nil },
		OpenAPI:       func() (*apiview.View, string) { return nil, "--no-api given" },
		DialTimeout:   5 * time.Second, PageSize: etcdscan.DefaultPageSize, Stream: true,
		Scan: func(_ context.Context, in ScanInput) (*etcdscan.Report, error) {
			got = in
			if scanErr != nil {
				return nil, scanErr
			}
			return &etcdscan.Report{}, nil
		},
	})
	defer src.Close()
	ctx := context.Background()
	cycle := func(err error, wantReason string, wantConnects, wantLoads int) {
		t.Helper()
		scanErr = err
		rep, err := src.Scan(ctx)
		switch {
		case wantReason == "" && (err != nil || rep == nil):
			t.Fatalf("cycle: %v, want a report", err)
		case wantReason != "" && (err == nil || ReasonOf(err) != wantReason):
			t.Fatalf("cycle: %v, want an error counted under %s", err, wantReason)
		}
		if connects != wantConnects || loads != wantLoads {
			t.Fatalf("connected %d times, loaded the encryption config %d times; want %d and %d", connects, loads, wantConnects, wantLoads)
		}
	}
	cycle(nil, "", 1, 1)
	if got.Store == nil || got.API != nil || got.APIUnavailable != "--no-api given" {
		t.Fatalf("scan input %+v, want a store and no API server, saying why", got)
	}
	// etcd answers: a plain failure is the scan's, an API failure the API's.
	cycle(errors.New("bad value"), ReasonScan, 1, 1)
	cycle(&CycleError{Reason: ReasonAPI, Err: errors.New("discovery failed")}, ReasonAPI, 1, 1)
	etcdDown := &CycleError{Reason: ReasonEtcd, Err: errors.New("etcd refused the client")}
	for range DefaultReconnectAfter - 1 {
		cycle(etcdDown, ReasonEtcd, 1, 1)
	}
	// A good cycle starts the count again.
	cycle(nil, "", 1, 1)
	for range DefaultReconnectAfter {
		cycle(etcdDown, ReasonEtcd, 1, 1)
	}
	cycle(nil, "", 2, 2)
}
