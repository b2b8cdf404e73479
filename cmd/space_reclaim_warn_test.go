package cmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"

	"github.com/regghost/regghost/internal/etcdtest"
	"github.com/regghost/regghost/pkg/etcdwrite"
)

// TestSpaceReclaimWarnsBeforeTheQuestion: under NOSPACE reclaim holds only
// this node's lock, and says so before it asks, so that the person who
// answers knows it does not stop a regghost on another node; it says it
// once.
func TestSpaceReclaimWarnsBeforeTheQuestion(t *testing.T) {
	t.Setenv(etcdwrite.LockDirEnv, t.TempDir())
	cli, ep := etcdtest.StartWith(t, func(c *embed.Config) { c.QuotaBackendBytes = 16 << 20 })
	v := strings.Repeat("x", 1<<20)
	for i := 0; ; i++ {
		_, err := cli.Put(context.Background(), fmt.Sprintf("/big/%03d", i), v)
		if errors.Is(err, rpctypes.ErrNoSpace) {
			break
		}
		if err != nil || i > 100 {
			t.Fatalf("put %d: %v (no NOSPACE)", i, err)
		}
	}
	// Deletes are served under the alarm: a reclaim then brings writes back.
	if _, err := cli.Delete(context.Background(), "/big/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
	warning := "regghost: warning: etcd's NOSPACE alarm is raised, so etcd refuses the lease of regghost's lock: only this node's lock"
	args := func(more ...string) []string {
		return append([]string{"space", "reclaim", "--confirm", "--endpoints", ep, "--no-api", "--backup-dir", filepath.Join(t.TempDir(), "backups"), "--node-root", t.TempDir()}, more...)
	}

	t.Run("before the question", func(t *testing.T) {
		// Nobody can answer (no terminal, no --yes): the question is
		// where the run ends, and the warning is said before it.
		var out, errOut bytes.Buffer
		code := Run(args(), strings.NewReader(""), &out, &errOut)
		refusal := strings.Index(errOut.String(), "stdin is not a terminal")
		if code != ExitUsage || refusal < 0 {
			t.Fatalf("exit %d, stderr %q", code, errOut.String())
		}
		if at := strings.Index(errOut.String(), warning); at < 0 || at > refusal || !strings.Contains(errOut.String(), "not one on another node") {
			t.Errorf("the warning is not said before the question:\n%s", errOut.String())
		}
	})

	t.Run("once", func(t *testing.T) {
		var all bytes.Buffer
		if code := Run(args("--yes"), strings.NewReader(""), &all, &all); code != 0 {
			t.Fatalf("exit %d:\n%q", code, all.String())
		}
		if n := strings.Count(all.String(), "regghost: warning: etcd's NOSPACE alarm is raised"); n != 1 {
			t.Errorf("the warning is said %d times:\n%s", n, all.String())
		}
		if at, snap := strings.Index(all.String(), warning), strings.Index(all.String(), "Snapshot from"); at < 0 || snap < 0 || at > snap {
			t.Errorf("the warning does not come before the run:\n%s", all.String())
		}
	})
}
