package netfault

import (
	"bufio"
	"net"
	"testing"
	"time"
)

// echoThroughProxy starts an echo server behind a Proxy and returns the
// proxy and a connection through it.
func echoThroughProxy(t *testing.T) (*Proxy, net.Conn, *bufio.Reader) {
	t.Helper()
	p, c, r, _ := echoThroughProxyCounting(t)
	return p, c, r
}

// echoThroughProxyCounting is echoThroughProxy whose server also counts, on
// the returned channel, every chunk it receives.
func echoThroughProxyCounting(t *testing.T) (*Proxy, net.Conn, *bufio.Reader, <-chan struct{}) {
	t.Helper()
	received := make(chan struct{}, 100)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 1024)
				for {
					n, err := c.Read(buf)
					if err != nil {
						return
					}
					received <- struct{}{}
					c.Write(buf[:n])
				}
			}()
		}
	}()
	p, err := NewProxy(ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return p, c, bufio.NewReader(c), received
}

// roundTrip sends a line and waits (at most wait) for its echo; it returns
// how long that took, or false.
func roundTrip(t *testing.T, c net.Conn, r *bufio.Reader, wait time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	if _, err := c.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(start.Add(wait))
	line, err := r.ReadString('\n')
	if err != nil {
		return 0, false
	}
	if line != "ping\n" {
		t.Fatalf("echo %q", line)
	}
	return time.Since(start), true
}

// faultHoldsTheEcho starts an echo through a proxy, applies fault to it and
// checks that the next echo does not come through.
func faultHoldsTheEcho(t *testing.T, fault func(*Proxy)) (*Proxy, net.Conn, *bufio.Reader) {
	t.Helper()
	p, c, r := echoThroughProxy(t)
	roundTrip(t, c, r, time.Second)
	fault(p)
	if _, ok := roundTrip(t, c, r, 200*time.Millisecond); ok {
		t.Fatal("an echo came through the fault")
	}
	return p, c, r
}

// expectHeldEcho reads, within a second, the echo a fault held on c.
func expectHeldEcho(t *testing.T, c net.Conn, r *bufio.Reader) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(time.Second))
	if line, err := r.ReadString('\n'); err != nil || line != "ping\n" {
		t.Fatalf("after healing: %q %v; want the held echo on the same connection", line, err)
	}
}

func TestProxyForwards(t *testing.T) {
	_, c, r := echoThroughProxy(t)
	if _, ok := roundTrip(t, c, r, time.Second); !ok {
		t.Fatal("no echo through the proxy")
	}
}

func TestBlackHoleHoldsBytesAndKeepsTheConnection(t *testing.T) {
	p, c, r := faultHoldsTheEcho(t, (*Proxy).BlackHole)
	p.Forward()
	expectHeldEcho(t, c, r)
}

func TestStallOpenHoldsOpenConnectionsAndPassesNewOnes(t *testing.T) {
	p, c, r := faultHoldsTheEcho(t, (*Proxy).StallOpen)
	fresh, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if _, ok := roundTrip(t, fresh, bufio.NewReader(fresh), time.Second); !ok {
		t.Fatal("a connection opened after StallOpen was held")
	}
	p.Forward()
	expectHeldEcho(t, c, r)
}

func TestDelayAddsLatencyEachWay(t *testing.T) {
	p, c, r := echoThroughProxy(t)
	p.Delay(100 * time.Millisecond)
	took, ok := roundTrip(t, c, r, 2*time.Second)
	if !ok || took < 200*time.Millisecond {
		t.Errorf("round trip %v %v with 100ms each way, want >= 200ms", took, ok)
	}
	p.Forward()
	if took, ok := roundTrip(t, c, r, time.Second); !ok || took > 100*time.Millisecond {
		t.Errorf("round trip %v %v after Forward", took, ok)
	}
}

func TestHoldRepliesDeliversRequestsAndHoldsTheirReplies(t *testing.T) {
	p, c, r, received := echoThroughProxyCounting(t)
	roundTrip(t, c, r, time.Second)
	<-received
	p.HoldReplies()
	if _, ok := roundTrip(t, c, r, 200*time.Millisecond); ok {
		t.Fatal("a reply came through while replies were held")
	}
	select {
	case <-received:
	case <-time.After(time.Second):
		t.Fatal("the request did not reach the server while replies were held")
	}
	p.Forward()
	expectHeldEcho(t, c, r)
}
