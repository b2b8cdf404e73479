package exporter

import (
	"context"
	"sync/atomic"

	"google.golang.org/grpc/stats"
)

// Cost is what a scan asked of etcd.
type Cost struct {
	// Requests counts gRPC calls (a RangeStream is one call).
	Requests int64
	// SentBytes and ReceivedBytes are the payloads' sizes on the wire.
	SentBytes, ReceivedBytes int64
}

// Sub returns the cost between an earlier reading and c.
func (c Cost) Sub(earlier Cost) Cost {
	return Cost{Requests: c.Requests - earlier.Requests, SentBytes: c.SentBytes - earlier.SentBytes, ReceivedBytes: c.ReceivedBytes - earlier.ReceivedBytes}
}

// EtcdMeter counts the requests and bytes of an etcd client: give it to the
// client as a gRPC stats handler (grpc.WithStatsHandler). It is safe for
// concurrent use.
type EtcdMeter struct {
	requests, sent, received atomic.Int64
}

// Total is everything counted so far.
func (m *EtcdMeter) Total() Cost {
	return Cost{Requests: m.requests.Load(), SentBytes: m.sent.Load(), ReceivedBytes: m.received.Load()}
}

// TagRPC implements stats.Handler.
func (m *EtcdMeter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }

// HandleRPC implements stats.Handler.
func (m *EtcdMeter) HandleRPC(_ context.Context, s stats.RPCStats) {
	switch p := s.(type) {
	case *stats.Begin:
		if p.IsClient() {
			m.requests.Add(1)
		}
	case *stats.InPayload:
		m.received.Add(int64(p.WireLength))
	case *stats.OutPayload:
		m.sent.Add(int64(p.WireLength))
	}
}

// TagConn implements stats.Handler.
func (m *EtcdMeter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context { return ctx }

// HandleConn implements stats.Handler.
func (m *EtcdMeter) HandleConn(context.Context, stats.ConnStats) {}
