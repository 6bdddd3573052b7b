package main

import (
	"time"

	"golang.org/x/sys/unix"
)

// Instant is a reading of CLOCK_BOOTTIME in nanoseconds: the clock baton's
// validUntilBoottime is written on. Every process on the machine shares it,
// so a sidecar's deadline and the harness's readings compare exactly.
type Instant int64

// Now reads CLOCK_BOOTTIME.
func Now() Instant {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		panic(err) // Linux has had CLOCK_BOOTTIME since 2.6.39
	}
	return Instant(ts.Nano())
}

// Add is i + d.
func (i Instant) Add(d time.Duration) Instant { return i + Instant(d) }

// Sub is i - j.
func (i Instant) Sub(j Instant) time.Duration { return time.Duration(i - j) }

// Surface is how an answer was asked for.
type Surface int

const (
	HTTP     Surface = iota // baton GET /leader?client_id=…
	GRPC                    // baton GetLeadership with client_id
	Watch                   // a baton WatchLeadership message (client_id set)
	Health                  // baton grpc.health.v1 Check, service "leader"
	AnonHTTP                // baton GET /leader without client_id (never acknowledged)
	ClientGo                // goelector GET /leader (isLeader and fencingToken only)
	// baton GET /leader?client_id= by a second process that shares the
	// application's client_id and never acknowledges (acks rounds)
	SharedHTTP
	// baton GET /leader?client_id= with an id used once, as an application
	// that makes a client per request does (acks rounds); never acknowledged
	OneOffHTTP
)

var surfaceNames = [...]string{"http", "grpc", "watch", "health", "anon-http", "client-go", "shared-http", "one-off-http"}

func (s Surface) String() string { return surfaceNames[s] }

// hasToken says whether answers on s carry the fencing token.
func (s Surface) hasToken() bool { return s != Health }

// application says whether s is how the application beside a baton member
// asks: the answers its leader work follows and its acknowledgements cover.
func (s Surface) application() bool { return s == HTTP || s == GRPC || s == Watch }

// promises says whether a leader answer on s carries a validity promise.
func (s Surface) promises() bool { return s != Health && s != ClientGo }

// Answer is one recorded answer to "am I the leader?".
type Answer struct {
	Member  string  // the process that answered (its holder identity)
	Surface Surface // how it was asked
	Client  string  // the client_id asked with; "" when anonymous
	// Send and Recv bracket the question on the harness's clock. For a watch
	// message Send is when the stream was opened: a message may have waited
	// in a queue, so nothing later bounds when it was produced.
	Send, Recv   Instant
	IsLeader     bool
	SteppingDown bool
	Token        int32
	Revision     int64
	ValidFor     time.Duration
	ValidUntil   Instant // validUntilBoottime; 0 when absent
}

// Window is when the answer was produced, as tightly as is known. A baton
// gRPC or watch leader answer carrying validUntilBoottime was produced at
// exactly validUntilBoottime − validFor (one instant). An HTTP answer's
// validFor is counted from the end of the sidecar's short response cache,
// so there that instant only bounds the production from above: [Send,
// min(Recv, it)]. Every other answer lies in [Send, Recv].
func (a *Answer) Window() (lo, hi Instant) {
	if !a.IsLeader || a.ValidUntil == 0 || !a.Surface.promises() {
		return a.Send, a.Recv
	}
	t := a.ValidUntil.Add(-a.ValidFor)
	switch {
	case t < a.Send || t > a.Recv && (a.Surface == GRPC || a.Surface == Watch):
		return a.Send, a.Recv // not what the sidecar says it does: trust only the bracket
	case a.Surface == GRPC || a.Surface == Watch:
		return t, t
	default:
		return a.Send, min(a.Recv, t)
	}
}

// At is the instant used to order and time answers (terms, handover): the
// latest instant it may have been produced.
func (a *Answer) At() Instant {
	_, hi := a.Window()
	return hi
}

// Promise is the interval an answer "leader, validFor = v" certainly
// guarantees that nobody else leads: from the latest instant it may have been
// produced until validUntilBoottime. Without validUntilBoottime (a sidecar
// that does not send it) the answer's v counts from somewhere in [Send,
// Recv], so what it certainly promised is [Recv, Send+v): never more than
// the sidecar meant, which keeps the checker from reporting a violation the
// sidecar did not commit. ok is false for answers that promise nothing.
func (a *Answer) Promise() (from, until Instant, ok bool) {
	if !a.IsLeader || a.ValidFor <= 0 || !a.Surface.promises() {
		return 0, 0, false
	}
	if a.ValidUntil > 0 {
		_, from = a.Window()
		until = a.ValidUntil
	} else {
		from, until = a.Recv, a.Send.Add(a.ValidFor)
	}
	return from, until, from < until
}

// Ack is one acknowledgement the harness (acting as the application) sent
// after its leader work for term Token ended.
type Ack struct {
	Member       string
	Client       string
	Token        int32
	At           Instant // when it was sent: the application had stopped by then
	Done         Instant // when the sidecar's answer came back
	Acknowledged bool    // what the sidecar answered; false also on an error
}
