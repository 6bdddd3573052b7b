package baton

import (
	"context"
	"errors"
	"io"
	"iter"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

// Watch follows this pod's leadership until ctx ends or the loop breaks:
//
//	for l, err := range c.Watch(ctx) {
//		if err != nil {
//			log.Print(err) // sidecar unreachable: act as a follower; Watch retries
//			continue
//		}
//		setLeader(l.IsLeader, l.FencingToken)
//	}
//
// It yields the current state first, then each change of isLeader, holder,
// fencing token, stepping-down, observed or Lease UID (not every renew).
// Between changes it also watches the clock: when a leader's guarantee
// (ValidUntilBoottime) runs out before the sidecar confirms it again, Watch
// yields the same state with IsLeader false, so a paused or wedged sidecar
// cannot leave the application believing it leads. It re-reads
// CLOCK_BOOTTIME at least every clockRecheck while a guarantee runs, so
// after a suspend of the machine a lapsed guarantee ends at once.
//
// When the stream breaks, goes silent (see WithHeartbeatInterval) or cannot
// be opened, Watch yields a zero Leadership with the error (matching
// ErrSidecarUnavailable when no sidecar answers, ErrWrongLease when it
// serves another Lease than WithLease's) and reconnects with exponential
// backoff; the first state after a reconnect is always yielded.
func (c *Client) Watch(ctx context.Context) iter.Seq2[Leadership, error] {
	return c.watch(ctx, false)
}

// watch is Watch; with every, it also yields each message that is not news
// (heartbeats), with its fresh deadline.
func (c *Client) watch(ctx context.Context, every bool) iter.Seq2[Leadership, error] {
	return func(yield func(Leadership, error) bool) {
		delay := c.opts.minBackoff
		for {
			connected, err, stop := c.watchStream(ctx, every, yield)
			if stop || ctx.Err() != nil {
				return
			}
			if connected {
				delay = c.opts.minBackoff
			}
			if !yield(Leadership{}, err) {
				return
			}
			jittered := time.Duration(float64(delay) * (0.8 + 0.4*rand.Float64()))
			select {
			case <-ctx.Done():
				return
			case <-time.After(jittered):
			}
			delay = min(2*delay, c.opts.maxBackoff)
		}
	}
}

// clockRecheck bounds how long a watch sleeps on the process's timers
// (which, like CLOCK_MONOTONIC, stop during a suspend) before it compares a
// guarantee with CLOCK_BOOTTIME again.
const clockRecheck = 100 * time.Millisecond

// received is one message of a stream as watchStream yields it: a state,
// or the error that ends the stream (a refused answer, or the transport's).
type received struct {
	l   Leadership
	err error
}

// watchStream runs one WatchLeadership stream until it fails (err), ctx
// ends or yield asks to stop (stop). connected reports whether any message
// arrived. every: yield every message, not only news.
func (c *Client) watchStream(ctx context.Context, every bool, yield func(Leadership, error) bool) (connected bool, err error, stop bool) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := c.api.WatchLeadership(sctx, &batonv1.WatchLeadershipRequest{
		HeartbeatInterval: durationpb.New(c.opts.heartbeat), ClientId: c.opts.clientID})
	if err != nil {
		return false, c.wrap(ctx, err), false
	}
	msgs := make(chan received)
	go func() {
		for {
			m, err := stream.Recv()
			var r received
			switch {
			case errors.Is(err, io.EOF):
				r.err = &UnavailableError{Addr: c.addr, Err: errors.New("the sidecar ended the stream (shutting down)")}
			case err != nil:
				r.err = c.wrap(ctx, err)
			default:
				r.l, r.err = c.answer(m.GetLeadership(), boottime())
			}
			select {
			case msgs <- r:
			case <-sctx.Done():
				return
			}
			if r.err != nil {
				return
			}
		}
	}()

	stallTimeout := 2*c.opts.heartbeat + time.Second
	stall := time.NewTimer(stallTimeout)
	defer stall.Stop()
	expiry := time.NewTimer(time.Hour)
	expiry.Stop()
	defer expiry.Stop()
	var last Leadership
	for {
		select {
		case <-ctx.Done():
			return connected, nil, true
		case <-stall.C:
			return connected, c.wrap(ctx, status.Error(codes.DeadlineExceeded, errStalled.Error())), false
		case <-expiry.C:
			if left := last.Remaining(); left > 0 {
				expiry.Reset(min(left, clockRecheck))
				continue
			}
			last = last.expired()
			if !yield(last, nil) {
				return connected, nil, true
			}
		case r := <-msgs:
			if r.err != nil {
				return connected, r.err, false
			}
			stall.Reset(stallTimeout)
			expiry.Stop()
			if r.l.IsLeader {
				expiry.Reset(min(r.l.Remaining(), clockRecheck))
			}
			news := every || !connected || r.l.key() != last.key()
			connected, last = true, r.l
			if news && !yield(r.l, nil) {
				return connected, nil, true
			}
		}
	}
}
