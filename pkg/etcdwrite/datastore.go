package etcdwrite

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Datastore says what the server behind an etcd endpoint can do for a
// repair. etcd serves everything; kine (k3s's etcd API over SQL) serves no
// snapshot RPC, no lease keep-alive, and only the transaction shapes
// kube-apiserver sends: one key, one revision compare.
type Datastore struct {
	// Name is "etcd", or "kine" for an etcd API without raft.
	Name string `json:"name"`
	// Version is the etcd version the server reports (kine emulates one).
	Version string `json:"version,omitempty"`
	// ClusterID is etcd's cluster ID in hex; empty where there is none.
	ClusterID string `json:"clusterID,omitempty"`
}

// Limited reports an etcd API without etcd's snapshot RPC and multi-key
// transactions: a repair takes a logical snapshot and writes one key per
// transaction.
func (d Datastore) Limited() bool { return d.Name != "etcd" }

// Pacing returns p shaped for the datastore: one key per transaction, with
// only its own revision compared, where that is all the server takes.
func (d Datastore) Pacing(p Pacing) Pacing {
	if d.Limited() {
		p.OneKey = true
	}
	return p
}

// DetectDatastore asks the client's endpoints for their status and answers
// from the first that replies. Every etcd member answers with its member and
// cluster IDs; an etcd API that answers with neither is not raft-backed etcd
// (kine answers an empty header).
func DetectDatastore(ctx context.Context, cli *clientv3.Client) (Datastore, error) {
	var errs []error
	for _, ep := range cli.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("status of %s: %w", ep, err))
			continue
		}
		return DatastoreOf(st), nil
	}
	return Datastore{}, errors.Join(errs...)
}

// DatastoreOf tells etcd from kine by a status answer (see DetectDatastore).
func DatastoreOf(st *clientv3.StatusResponse) Datastore {
	if st.Header == nil || (st.Header.MemberId == 0 && st.Header.ClusterId == 0) {
		return Datastore{Name: "kine", Version: st.Version}
	}
	return Datastore{Name: "etcd", Version: st.Version, ClusterID: fmt.Sprintf("%x", st.Header.ClusterId)}
}
