package etcdscan

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"testing"

	"go.etcd.io/etcd/api/v3/mvccpb"
)

// faultyStore hands out values that alias a memory map past its file's
// end, as a db file's do once the file shrank: reading them faults. Its
// Guard turns the fault into an error, as dbfile.Store's does.
type faultyStore struct {
	kvs []*mvccpb.KeyValue
}

func (f *faultyStore) Revision() int64 { return 10 }
func (f *faultyStore) Range(ctx context.Context, start, end string, keysOnly bool, fn func(*mvccpb.KeyValue) error) error {
	for _, kv := range f.kvs {
		if string(kv.Key) >= start && (end == "" || string(kv.Key) < end) {
			if err := fn(kv); err != nil {
				return err
			}
		}
	}
	return nil
}
func (f *faultyStore) First(ctx context.Context, start, end string) (*mvccpb.KeyValue, error) {
	return nil, nil
}
func (f *faultyStore) Get(ctx context.Context, key string) (*mvccpb.KeyValue, error) { return nil, nil }

var errFault = errors.New("a fault on the store's map")

func (f *faultyStore) Guard(err *error) func() {
	prev := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(prev)
		if r := recover(); r != nil {
			*err = errFault
		}
	}
}

// TestDecodePipelineTurnsAFaultIntoAnError: offline, values are decoded
// on other goroutines than the one that called Range. A fault reading a
// value there (the db file shrank while it was read) is the store's error,
// and the scan ends with it, never with a crash nor a hang.
func TestDecodePipelineTurnsAFaultIntoAnError(t *testing.T) {
	page := os.Getpagesize()
	m := shortMap(t, make([]byte, page))
	store := &faultyStore{}
	for i := range 600 {
		value := m[:16]
		if i == 300 {
			value = m[page : page+16]
		}
		store.kvs = append(store.kvs, &mvccpb.KeyValue{Key: []byte(fmt.Sprintf("/registry/configmaps/ns/cm-%04d", i)), Value: value, ModRevision: 5, CreateRevision: 5, Version: 1})
	}
	for _, workers := range []int{1, 4} {
		_, err := Scan(context.Background(), store, Options{Prefix: "/registry/", DecodeWorkers: workers})
		if !errors.Is(err, errFault) {
			t.Errorf("%d workers: scan returned %v, want the store's fault", workers, err)
		}
		// Through a store that wraps it (space's account, the leases
		// tally), the guard is found all the same.
		_, err = Scan(context.Background(), wrapped{wrapped{store}}, Options{Prefix: "/registry/", DecodeWorkers: workers})
		if !errors.Is(err, errFault) {
			t.Errorf("%d workers, wrapped: scan returned %v, want the store's fault", workers, err)
		}
	}
}

// wrapped is a store that wraps another, as space's account does.
type wrapped struct{ Store }

func (w wrapped) Unwrap() Store { return w.Store }

// gettingFaultyStore is a faultyStore whose Get hands out its key-values.
type gettingFaultyStore struct{ faultyStore }

func (f *gettingFaultyStore) Get(ctx context.Context, key string) (*mvccpb.KeyValue, error) {
	for _, kv := range f.kvs {
		if string(kv.Key) == key {
			return kv, nil
		}
	}
	return nil, nil
}

// TestGetCopyTurnsAFaultIntoAnError: `get` and recover read one key of a
// db file whose page faults (the file shrank while open): GetCopy returns
// the store's error, never a crash; a readable key comes back as a copy of
// its own.
func TestGetCopyTurnsAFaultIntoAnError(t *testing.T) {
	page := os.Getpagesize()
	m := shortMap(t, []byte("readable value"))
	store := &gettingFaultyStore{faultyStore{kvs: []*mvccpb.KeyValue{
		{Key: []byte("/registry/configmaps/ns/good"), Value: m[:14]},
		{Key: []byte("/registry/configmaps/ns/bad"), Value: m[page : page+16]},
	}}}
	kv, err := GetCopy(context.Background(), store, "/registry/configmaps/ns/good")
	if err != nil || string(kv.Value) != "readable value" || &kv.Value[0] == &m[0] {
		t.Errorf("GetCopy of a readable key: %v, %v (a copy of its own wanted)", kv, err)
	}
	if _, err := GetCopy(context.Background(), store, "/registry/configmaps/ns/bad"); !errors.Is(err, errFault) {
		t.Errorf("GetCopy of a key whose page faults: %v, want the store's fault", err)
	}
	if kv, err := GetCopy(context.Background(), store, "/registry/configmaps/ns/none"); kv != nil || err != nil {
		t.Errorf("GetCopy of a missing key: %v, %v", kv, err)
	}
}

// shortMap maps two pages over a file holding content (at most a page):
// reading the second page faults (SIGBUS), as a db file's map does once
// the file shrank.
func shortMap(t *testing.T, content []byte) []byte {
	t.Helper()
	page := os.Getpagesize()
	p := filepath.Join(t.TempDir(), "short")
	if err := os.WriteFile(p, content, 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { file.Close() })
	m, err := syscall.Mmap(int(file.Fd()), 0, 2*page, syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(m) })
	return m
}
