package render

import (
	"fmt"
	"io"

	"go.etcd.io/etcd/api/v3/mvccpb"

	"github.com/regghost/regghost/pkg/plural"
)

// KeyLines writes each key it is given to out as it is read, one a line:
// the key, and with wide its mod revision and value size, tab-separated
// (ls: keys stream as read, so no table). Count is how many it wrote.
type KeyLines struct {
	Out   io.Writer
	Wide  bool
	Count int
}

// Write writes kv's line.
func (k *KeyLines) Write(kv *mvccpb.KeyValue) error {
	k.Count++
	if k.Wide {
		_, err := fmt.Fprintf(k.Out, "%s\t%d\t%d\n", kv.Key, kv.ModRevision, len(kv.Value))
		return err
	}
	_, err := fmt.Fprintf(k.Out, "%s\n", kv.Key)
	return err
}

// Summary says on errOut how many keys were listed under prefix, at which
// revision.
func (k *KeyLines) Summary(errOut io.Writer, prefix string, rev int64) {
	fmt.Fprintf(errOut, "%s under %s at revision %d\n", plural.Of(k.Count, "key"), prefix, rev)
}
