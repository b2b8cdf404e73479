package dbfile

import (
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// The field numbers of mvccpb.KeyValue (api/mvccpb/kv.proto).
const (
	fieldKey            = 1
	fieldCreateRevision = 2
	fieldModRevision    = 3
	fieldVersion        = 4
	fieldValue          = 5
	fieldLease          = 6
)

var errRecord = errors.New("not an etcd key-value record")

// recordKey returns the key of an mvccpb.KeyValue record without decoding
// the rest: etcd writes the key first, so this reads a few bytes of a record
// however large its value is. The key aliases rec.
func recordKey(rec []byte) ([]byte, error) {
	for len(rec) > 0 {
		num, typ, n := protowire.ConsumeTag(rec)
		if n < 0 {
			return nil, errRecord
		}
		rec = rec[n:]
		if num == fieldKey && typ == protowire.BytesType {
			key, n := protowire.ConsumeBytes(rec)
			if n < 0 {
				return nil, errRecord
			}
			return key, nil
		}
		n = protowire.ConsumeFieldValue(num, typ, rec)
		if n < 0 {
			return nil, errRecord
		}
		rec = rec[n:]
	}
	return nil, errRecord
}

// decodeRecord decodes an mvccpb.KeyValue record. Key and Value alias rec
// (the file's memory map): they are valid until the Store is closed.
func decodeRecord(rec []byte, keysOnly bool) (*mvccpb.KeyValue, error) {
	kv := &mvccpb.KeyValue{}
	for len(rec) > 0 {
		num, typ, n := protowire.ConsumeTag(rec)
		if n < 0 {
			return nil, errRecord
		}
		rec = rec[n:]
		switch {
		case typ == protowire.BytesType && (num == fieldKey || num == fieldValue):
			b, n := protowire.ConsumeBytes(rec)
			if n < 0 {
				return nil, errRecord
			}
			if num == fieldKey {
				kv.Key = b
			} else if !keysOnly {
				kv.Value = b
			}
			rec = rec[n:]
		case typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(rec)
			if n < 0 {
				return nil, errRecord
			}
			switch num {
			case fieldCreateRevision:
				kv.CreateRevision = int64(v)
			case fieldModRevision:
				kv.ModRevision = int64(v)
			case fieldVersion:
				kv.Version = int64(v)
			case fieldLease:
				kv.Lease = int64(v)
			}
			rec = rec[n:]
		default:
			n := protowire.ConsumeFieldValue(num, typ, rec)
			if n < 0 {
				return nil, errRecord
			}
			rec = rec[n:]
		}
	}
	if kv.Key == nil {
		return nil, fmt.Errorf("%w: no key", errRecord)
	}
	return kv, nil
}
