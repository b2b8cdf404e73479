package etcdtest

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// StallProxy forwards TCP connections to a member until Stall: from then
// on nothing more is forwarded on any connection, old or new, and nothing
// is refused either. That is how a member held to a sliver of a CPU looks
// to its clients: alive, and answering nothing in time. Addr is where it
// listens.
type StallProxy struct {
	Addr    string
	stalled atomic.Bool
	held    atomic.Int64
	sent    atomic.Int64
	conns   atomic.Int64
	delay   atomic.Int64
	done    chan struct{}
}

// NewStallProxy forwards to target until the test ends.
func NewStallProxy(t testing.TB, target string) *StallProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &StallProxy{Addr: l.Addr().String(), done: make(chan struct{})}
	var wg sync.WaitGroup
	t.Cleanup(func() { close(p.done); l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			p.conns.Add(1)
			wg.Go(func() { p.serve(in, target) })
		}
	})
	return p
}

// Stall stops forwarding, for good.
func (p *StallProxy) Stall() { p.stalled.Store(true) }

// Slow delays each piece of the member's answers by d from now on: a
// member that answers, slowly.
func (p *StallProxy) Slow(d time.Duration) { p.delay.Store(int64(d)) }

// Held is how many bytes a client sent that were held since Stall: more
// than 0 once a request went to the stalled member.
func (p *StallProxy) Held() int64 { return p.held.Load() }

// Sent is how many bytes of the clients' were forwarded to the member.
func (p *StallProxy) Sent() int64 { return p.sent.Load() }

// Conns is how many connections were made to the proxy.
func (p *StallProxy) Conns() int64 { return p.conns.Load() }

// serve forwards one connection both ways until either side closes or
// the proxy ends; once stalled it holds what it reads.
func (p *StallProxy) serve(in net.Conn, target string) {
	defer in.Close()
	out, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer out.Close()
	go func() { <-p.done; in.Close(); out.Close() }()
	copyTo := func(dst io.Writer, src io.Reader, count bool) {
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if p.stalled.Load() {
				if count {
					p.held.Add(int64(n))
					if err == nil {
						continue
					}
				}
				<-p.done
				return
			}
			if d := time.Duration(p.delay.Load()); d > 0 && !count {
				time.Sleep(d)
			}
			if n > 0 {
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
				if count {
					p.sent.Add(int64(n))
				}
			}
			if err != nil {
				return
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { copyTo(out, in, true) })
	copyTo(in, out, false)
	wg.Wait()
}
