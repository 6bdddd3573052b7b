//go:build linux

package baton_test

// The step-down handshake against real sidecars (see integration_test.go):
// a handover's new fields, the promises of an application that never
// acknowledges, and the fast handover of one that does (RunWhileLeader).

import (
	"context"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/baton-sidecar/baton/clients/go/baton"
)

// lastPromise asks the sidecar of c over and over until ctx ends and
// returns the latest deadline (CLOCK_BOOTTIME) of the leader answers it got:
// an application that polls and never acknowledges.
func lastPromise(ctx context.Context, c *baton.Client) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		var latest time.Duration
		for ctx.Err() == nil {
			if l, err := c.Leadership(ctx); err == nil && l.IsLeader {
				latest = max(latest, l.ValidUntilBoottime)
			}
			time.Sleep(5 * time.Millisecond)
		}
		out <- latest
	}()
	return out
}

func TestHandoverOnSIGTERMCarriesRevisionsAndKeepsAPollersPromises(t *testing.T) {
	f, li := settled(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	leader := newClient(t, f.Sidecars[li])
	before, err := leader.Leadership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	now := boottime(t)
	if before.ValidUntilBoottime <= now || before.ValidUntilBoottime > now+seconds(f.RenewDeadline) {
		t.Errorf("leader's answer %+v: want a deadline within the renew deadline of now (%v)", before, now)
	}
	if before.FencingRevision == (baton.Revision{}) {
		t.Errorf("leader's answer %+v: want a fencing revision", before)
	}
	events := watchAll(t, ctx, f)
	for range f.Sidecars { // each watch's current state
		if e := <-events; e.err != nil {
			t.Fatalf("sidecar %d's watch: %v", e.index, e.err)
		}
	}
	pollCtx, stopPolling := context.WithCancel(ctx)
	promised := lastPromise(pollCtx, newClient(t, f.Sidecars[li]))
	time.Sleep(200 * time.Millisecond)

	signal(t, f.Sidecars[li], syscall.SIGTERM)
	steppedDown, successor := false, -1
	var took, oldPromise time.Duration // the old leader's watch's last promise
	var next baton.Leadership
	for !steppedDown || successor < 0 {
		select {
		case e := <-events:
			switch {
			case e.err != nil:
				// The old leader's stream ends when it exits.
			case e.index == li && e.l.SteppingDown && !e.l.IsLeader:
				steppedDown = true
			case e.index == li && e.l.IsLeader && e.l.Identity == before.Identity:
				oldPromise = max(oldPromise, e.l.ValidUntilBoottime)
			case e.index != li && e.l.IsLeader && successor < 0:
				successor, next, took = e.index, e.l, boottime(t)
			}
		case <-ctx.Done():
			t.Fatalf("no handover seen (stepping down seen: %v, successor: %d)", steppedDown, successor)
		}
	}
	stopPolling()
	last := <-promised
	if next.FencingToken <= before.FencingToken || next.FencingRevision.Compare(before.FencingRevision) <= 0 {
		t.Errorf("successor leads with token %d, revision %v; want above %d, %v",
			next.FencingToken, next.FencingRevision, before.FencingToken, before.FencingRevision)
	}
	// The poller never acknowledged: its last promise had to lapse first;
	// and so did the last one the old leader's watch delivered.
	if took < last {
		t.Errorf("successor led %v before the old leader's last promise to a poller lapsed", last-took)
	}
	if took < oldPromise {
		t.Errorf("successor's first leader state came %v before the old leader's watched promise lapsed",
			oldPromise-took)
	}
	t.Logf("handover to %s: token %d -> %d, revision %v -> %v",
		next.Identity, before.FencingToken, next.FencingToken, before.FencingRevision, next.FencingRevision)
	passed(t, "watch-through-handover")
}

// term is one leader work's life as the test saw it (CLOCK_BOOTTIME).
type term struct {
	index             int
	l                 baton.Leadership
	started, returned time.Duration
}

func TestRunWhileLeaderAcknowledgesSoTheHandoverIsFast(t *testing.T) {
	f, li := settled(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var mu sync.Mutex // guards each term's returned
	started := make(chan *term, 10)
	var wg sync.WaitGroup
	runCtx, stopRunning := context.WithCancel(ctx)
	defer func() { stopRunning(); wg.Wait() }()
	clients := make([]*baton.Client, len(f.Sidecars))
	for i, s := range f.Sidecars {
		c := newClient(t, s)
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.RunWhileLeader(runCtx, func(ctx context.Context, l baton.Leadership) error {
				tm := &term{index: i, l: l, started: boottime(t)}
				started <- tm
				<-ctx.Done()
				time.Sleep(20 * time.Millisecond) // the work winds down
				mu.Lock()
				tm.returned = boottime(t)
				mu.Unlock()
				return ctx.Err()
			})
		}()
	}
	first := <-started
	if first.index != li {
		t.Fatalf("work started beside sidecar %d; the leader is %d", first.index, li)
	}
	// Let the promises settled() was given lapse: those clients never
	// acknowledge.
	time.Sleep(seconds(f.RenewDeadline) + 200*time.Millisecond)
	// A fresh promise to the client that runs the work: only its
	// acknowledgement lets the next leader start before it lapses.
	promise, err := clients[li].Leadership(ctx)
	if err != nil || !promise.IsLeader {
		t.Fatalf("Leadership() of the working client = %+v, %v; want leader", promise, err)
	}

	sent := boottime(t)
	signal(t, f.Sidecars[li], syscall.SIGTERM)
	var next *term
	select {
	case next = <-started:
	case <-ctx.Done():
		t.Fatal("no other sidecar's work started after SIGTERM of the leader")
	}
	handover := next.started - sent
	mu.Lock()
	returned := first.returned
	mu.Unlock()
	if returned == 0 || returned > next.started {
		t.Errorf("the new leader's work started before the old one's returned (%v, %v)", returned, next.started)
	}
	if next.index == li || next.l.FencingToken <= first.l.FencingToken ||
		next.l.FencingRevision.Compare(first.l.FencingRevision) <= 0 {
		t.Errorf("new term %+v; want another sidecar with a higher token and revision than %+v", next.l, first.l)
	}
	if handover > seconds(f.RenewDeadline)/2 || next.started >= promise.ValidUntilBoottime {
		t.Errorf("handover took %v, the new work started %v after the acknowledged promise's end; want well "+
			"under the renew deadline (%vs), before that end", handover, next.started-promise.ValidUntilBoottime,
			f.RenewDeadline)
	}
	t.Logf("SIGTERM -> new leader's work started: %v", handover)
	passed(t, "step-down-ack")
}

func TestAcknowledgeStepDownGivesBackThisClientsPromisesOnly(t *testing.T) {
	f, li := settled(t)
	ctx := context.Background()
	c := newClient(t, f.Sidecars[li])
	l, err := c.Leadership(ctx)
	if err != nil || !l.IsLeader {
		t.Fatalf("Leadership() = %+v, %v; want the leader", l, err)
	}
	if ok, err := c.AcknowledgeStepDown(ctx, l.FencingToken+1); ok || err != nil {
		t.Errorf("AcknowledgeStepDown(another term) = %v, %v; want false: ignored", ok, err)
	}
	if ok, err := c.AcknowledgeStepDown(ctx, l.FencingToken); !ok || err != nil {
		t.Errorf("AcknowledgeStepDown(%d) = %v, %v; want true: a promise was outstanding", l.FencingToken, ok, err)
	}
	if ok, err := c.AcknowledgeStepDown(ctx, l.FencingToken); ok || err != nil {
		t.Errorf("second AcknowledgeStepDown(%d) = %v, %v; want false: nothing left", l.FencingToken, ok, err)
	}
	other := newClient(t, f.Sidecars[li])
	if ok, err := other.AcknowledgeStepDown(ctx, l.FencingToken); ok || err != nil {
		t.Errorf("AcknowledgeStepDown by a client never answered = %v, %v; want false", ok, err)
	}
}
