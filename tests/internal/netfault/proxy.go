// Package netfault cuts or slows one process's TCP link to the API server:
// the fault harness (bench/chaos) and the `baton run` tests share it.
package netfault

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP forwarder on 127.0.0.1 between one member and the API
// server, so a fault can cut or slow that one member's link: TLS passes
// through untouched. It forwards, black-holes (stops forwarding in both
// directions and keeps every connection open, as a partition does; queued
// bytes flow again when it heals), holds only the replies (what the member
// sends reaches the server, what the server answers does not: a write is
// applied and its response lost), stalls only the connections already open
// (as a middlebox that lost their state does: a watch stream goes quiet with
// its connection open, while requests on new connections work) or delays
// every chunk by a latency.
//
// Safe for concurrent use. Close ends every connection.
type Proxy struct {
	ln      net.Listener
	target  string
	blocked atomic.Bool  // both directions
	muted   atomic.Bool  // the server's replies only
	latency atomic.Int64 // nanoseconds added to every chunk
	// Connections are numbered from 1 as they are accepted; those numbered
	// up to stallTo are held in both directions.
	dialled atomic.Uint64
	stallTo atomic.Uint64
	closed  chan struct{}
	mu      sync.Mutex
	conns   map[net.Conn]struct{}
}

// maxHold bounds how long one chunk is held by a black hole or latency, so
// no goroutine outlives a forgotten fault.
const maxHold = 30 * time.Second

// NewProxy listens on a free 127.0.0.1 port and forwards to target
// (host:port).
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, closed: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	go p.accept()
	return p, nil
}

// Addr is where members connect.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Forward heals the link: no black hole, no held replies, no stalled
// connections, no latency.
func (p *Proxy) Forward() {
	p.latency.Store(0)
	p.stallTo.Store(0)
	p.blocked.Store(false)
	p.muted.Store(false)
}

// BlackHole stops forwarding until Forward.
func (p *Proxy) BlackHole() { p.blocked.Store(true) }

// HoldReplies stops forwarding what the server sends until Forward; what
// the member sends still reaches the server.
func (p *Proxy) HoldReplies() { p.muted.Store(true) }

// StallOpen stops forwarding on every connection open now, in both
// directions, until Forward; connections opened later pass.
func (p *Proxy) StallOpen() { p.stallTo.Store(p.dialled.Load()) }

// Delay adds d to every chunk forwarded until Forward.
func (p *Proxy) Delay(d time.Duration) { p.latency.Store(int64(d)) }

// Close stops listening and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		return
	default:
	}
	close(p.closed)
	p.ln.Close()
	for c := range p.conns {
		c.Close()
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.closed:
		c.Close()
		return false
	default:
		p.conns[c] = struct{}{}
		return true
	}
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		go p.serve(down)
	}
}

func (p *Proxy) serve(down net.Conn) {
	if !p.track(down) {
		return
	}
	defer p.untrack(down)
	id := p.dialled.Add(1)
	if !p.hold(id, time.Now(), false) {
		return
	}
	up, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		return
	}
	if !p.track(up) {
		return
	}
	defer p.untrack(up)
	done := make(chan struct{}, 2)
	go func() { p.pipe(id, up, down, false); done <- struct{}{} }()
	go func() { p.pipe(id, down, up, true); done <- struct{}{} }()
	<-done // either side closing ends both
}

// hold waits until a chunk of connection id read at readAt (a reply: from
// the server) may be forwarded: the black hole has healed, replies are no
// longer held, the connection is not stalled and the latency has passed.
// False if the proxy closed or the chunk was held longer than maxHold.
func (p *Proxy) hold(id uint64, readAt time.Time, reply bool) bool {
	for time.Since(readAt) < maxHold {
		select {
		case <-p.closed:
			return false
		default:
		}
		if p.blocked.Load() || (reply && p.muted.Load()) || id <= p.stallTo.Load() {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		wait := time.Until(readAt.Add(time.Duration(p.latency.Load())))
		if wait <= 0 {
			return true
		}
		time.Sleep(min(wait, 50*time.Millisecond))
	}
	return false
}

// pipe forwards src to dst for connection id; reply says src is the server.
func (p *Proxy) pipe(id uint64, dst io.Writer, src io.Reader, reply bool) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !p.hold(id, time.Now(), reply) {
				return
			}
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
