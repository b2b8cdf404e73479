package spill

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/regghost/regghost/pkg/diskroom"
)

func TestPutGetEach(t *testing.T) {
	tests := []struct {
		name string
		n    int
	}{
		{"empty", 0},
		{"one", 1},
		{"less than a read batch", readBatch - 1},
		{"exactly a read batch", readBatch},
		{"several write batches", 3*writeBatch + 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("spill file left in the directory while open: %v", left)
			}
			// Written in reverse: Each returns them in key order.
			for i := tt.n - 1; i >= 0; i-- {
				if err := f.Put("b", fmt.Sprintf("k%06d", i), []byte(fmt.Sprint(i))); err != nil {
					t.Fatal(err)
				}
			}
			for _, i := range []int{0, tt.n / 2, tt.n - 1} {
				v, err := f.Get("b", fmt.Sprintf("k%06d", i))
				if err != nil {
					t.Fatal(err)
				}
				if tt.n > 0 && string(v) != fmt.Sprint(i) {
					t.Fatalf("Get k%06d = %q, want %d", i, v, i)
				}
			}
			if v, err := f.Get("b", "absent"); err != nil || v != nil {
				t.Fatalf("Get absent = %q, %v; want nil", v, err)
			}
			// A rewrite: every value doubled while iterating.
			seen := 0
			err = f.Each("b", func(k string, v []byte) error {
				if want := fmt.Sprintf("k%06d", seen); k != want {
					return fmt.Errorf("entry %d is %s, want %s", seen, k, want)
				}
				seen++
				return f.Put("b", k, []byte(string(v)+string(v)))
			})
			if err != nil {
				t.Fatal(err)
			}
			if seen != tt.n {
				t.Fatalf("Each saw %d entries, want %d", seen, tt.n)
			}
			seen = 0
			err = f.Each("b", func(k string, v []byte) error {
				if s := fmt.Sprint(seen); string(v) != s+s {
					return fmt.Errorf("%s = %q after the rewrite, want %q", k, v, s+s)
				}
				seen++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestEachSeesLaterWrites(t *testing.T) {
	f, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, k := range []string{"a", "b", "c"} {
		if err := f.Put("b", k, []byte("old")); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err = f.Each("b", func(k string, v []byte) error {
		got = append(got, k+"="+string(v))
		if k == "a" {
			return f.Put("b", "c", []byte("new"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "a=old b=old c=new" {
		t.Fatalf("Each saw %v", got)
	}
}

func TestOpenRefusesMissingDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "missing")
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "spill to "+dir) {
		t.Fatalf("Open(%s) = %v, want an error naming the directory", dir, err)
	}
}

// TestRefusals: a closed file, and keys bbolt cannot take, are errors,
// never a panic.
func TestRefusals(t *testing.T) {
	f, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Put("b", strings.Repeat("k", MaxKey+1), nil); err == nil || !strings.Contains(err.Error(), "a key of") {
		t.Fatalf("Put of a key past %d bytes: %v", MaxKey, err)
	}
	if err := f.Put("b", "", nil); err == nil {
		t.Fatal("Put of an empty key succeeds")
	}
	if err := f.Put("b", "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	for name, op := range map[string]func() error{
		"Put":  func() error { return f.Put("b", "k", nil) },
		"Get":  func() error { _, err := f.Get("b", "k"); return err },
		"Each": func() error { return f.Each("b", func(string, []byte) error { return nil }) },
		"Drop": func() error { return f.Drop("b") },
	} {
		if err := op(); err != ErrClosed {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}

// TestRoomRefused: a spill file is not started, and does not grow, on a
// disk that would keep less than its reserve; what it holds stays readable.
func TestRoomRefused(t *testing.T) {
	full := false
	roomOf = func(dir string) (diskroom.Room, error) {
		if full {
			return diskroom.Room{Dir: dir, Free: 900 << 20, Keep: 1 << 30}, nil
		}
		return diskroom.Room{Dir: dir, Free: 100 << 30, Keep: 1 << 30}, nil
	}
	defer func() { roomOf = diskroom.Of }()
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := range writeBatch - 1 {
		if err := f.Put("b", fmt.Sprintf("k%06d", i), []byte("v")); err != nil {
			t.Fatal(err)
		}
	}
	full = true
	err = f.Put("b", "last", []byte("v"))
	if err == nil || !strings.Contains(err.Error(), "has 900 MiB free and must keep 1024 MiB") || !strings.Contains(err.Error(), "TMPDIR") {
		t.Fatalf("a write past the reserve: %v", err)
	}
	if v, err := f.Get("b", "k000000"); err != nil || string(v) != "v" {
		t.Fatalf("after the refusal: %q, %v", v, err)
	}
	if _, err := Open(dir); err == nil || !strings.Contains(err.Error(), "must keep") {
		t.Fatalf("a spill file opened on a full disk: %v", err)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Fatalf("a refused spill file left %v", left)
	}
}
