package reclaim

import (
	"reflect"
	"testing"

	"github.com/regghost/regghost/pkg/usage"
)

func TestParseDataDirs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		values []string
		want   map[string]string
		err    string
	}{
		{"none", nil, map[string]string{}, ""},
		{"the member on this node", []string{"/var/lib/etcd"}, map[string]string{"": "/var/lib/etcd"}, ""},
		{"by name", []string{"cp-1=/var/lib/etcd", "cp-2=/mnt/etcd"}, map[string]string{"cp-1": "/var/lib/etcd", "cp-2": "/mnt/etcd"}, ""},
		{"no name before =", []string{"=/var/lib/etcd"}, nil, `--data-dir "=/var/lib/etcd": want NAME=DIR or DIR`},
		{"no directory", []string{"cp-1="}, nil, `--data-dir "cp-1=": want NAME=DIR or DIR`},
		{"twice for one member", []string{"cp-1=/a", "cp-1=/b"}, nil, "--data-dir: given twice for member cp-1"},
		{"twice for this node", []string{"/a", "/b"}, nil, "--data-dir: given twice for the member on this node"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseDataDirs(tc.values)
			if tc.err != "" {
				if !usage.Is(err) || err.Error() != tc.err {
					t.Fatalf("ParseDataDirs error %v, want usage error %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseDataDirs = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
