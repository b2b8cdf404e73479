package etcdwrite

import (
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// DefaultMaxRequestBytes is etcd's default --max-request-bytes (1.5 MiB):
// the largest request it accepts. kube-apiserver never stores a value
// larger than that, so one object always fits one transaction; several big
// ones (Helm releases, CRDs with big schemas, ConfigMaps near the 1 MiB
// limit) do not.
const DefaultMaxRequestBytes = 1572864

// MaxRequestBytesFlag is the flag that says how large a request the etcd
// regghost writes to accepts: etcd's own flag name, for the same number.
const MaxRequestBytesFlag = "--max-request-bytes"

// txnOverhead is what a batch's envelope may cost beyond its operations
// and compares (the request header etcd adds, tags, lengths): a margin, so
// a batch sized to the limit is accepted.
const txnOverhead = 4 << 10

// keyOverhead is what one key's transaction costs beyond its key, value and
// compares as etcd counts it (the raft request's header and the fields'
// tags and lengths, about a hundred bytes): a key is refused before
// anything is sent only when it cannot fit with that, so an object etcd
// accepted is never refused here; nearer the limit, etcd decides.
const keyOverhead = 256

// opBytes is what an operation adds to a transaction: its key, value and
// range end, with room for tags, lengths and options.
func opBytes(op clientv3.Op) int {
	return len(op.KeyBytes()) + len(op.ValueBytes()) + len(op.RangeBytes()) + 16
}

// cmpBytes is what a compare adds to a transaction: its key, value (a
// compare on a value carries it whole) and range end, with room for the
// target, result and revision.
func cmpBytes(c clientv3.Cmp) int {
	return len(c.KeyBytes()) + len(c.ValueBytes()) + len(c.GetCompare().GetRangeEnd()) + 16
}

// TooLargeError says that one key's write does not fit one request of the
// etcd it goes to, whatever the batching.
type TooLargeError struct {
	Key string
	// Bytes is the transaction the key needs on its own; Limit is the
	// request size it was held to.
	Bytes, Limit int
	// Refused is set when etcd (or the gRPC client) refused the request;
	// otherwise it was found before anything was sent.
	Refused error
}

func (e *TooLargeError) Error() string {
	if e.Refused != nil {
		return fmt.Sprintf("%s: its write (%d bytes) was refused as too large (%v): start etcd with a larger %s and give regghost the same %s", e.Key, e.Bytes, e.Refused, MaxRequestBytesFlag, MaxRequestBytesFlag)
	}
	return fmt.Sprintf("%s: its write needs a request of %d bytes, more than the %d etcd accepts (%s): nothing was written; start etcd with a larger %s and give regghost the same %s", e.Key, e.Bytes, e.Limit, MaxRequestBytesFlag, MaxRequestBytesFlag, MaxRequestBytesFlag)
}

// tooLarge reports whether etcd or the gRPC client refused a request for
// its size: etcd's "request is too large" (above --max-request-bytes), or
// gRPC's ResourceExhausted (above a send or receive message limit).
func tooLarge(err error) bool {
	if err == nil {
		return false
	}
	if rpctypes.Error(err) == rpctypes.ErrRequestTooLarge {
		return true
	}
	return status.Code(err) == codes.ResourceExhausted
}
