//go:build linux

package baton_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/baton-sidecar/baton/clients/go/baton"
	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

func boottime(t *testing.T) time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ts.Nano())
}

// journal records what happened, in order, across goroutines.
type journal struct {
	mu     sync.Mutex
	events []string
	notify chan string
}

func newJournal() *journal { return &journal{notify: make(chan string, 100)} }

func (j *journal) add(e string) {
	j.mu.Lock()
	j.events = append(j.events, e)
	j.mu.Unlock()
	j.notify <- e
}

func (j *journal) await(t *testing.T, want string) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case e := <-j.notify:
			if e == want {
				return
			}
		case <-timeout:
			t.Fatalf("no %q within 5s; saw %v", want, j.all())
		}
	}
}

func (j *journal) all() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.events...)
}

// steppingDownSidecar leads with token 5 and a deadline on CLOCK_BOOTTIME
// until stepDown is closed, then says it is stepping down; it records who
// asks and the acknowledgements it gets. Each answer has a deadline of its
// own, as if the sidecar renewed before each; with heartbeats set, its
// watch streams repeat the state that often.
type steppingDownSidecar struct {
	batonv1.UnimplementedLeaderElectionServer
	t          *testing.T
	validFor   time.Duration
	heartbeats time.Duration
	stepDown   chan struct{}
	log        *journal

	mu        sync.Mutex
	deadlines []time.Duration // of the leader answers given, in order
	acked     []time.Duration // the deadline each acknowledgement named (-1: none)
	bounds    []time.Duration // the max_valid_for each question asked for (-1: none)
}

// bound records the max_valid_for a question asked for.
func (s *steppingDownSidecar) bound(d *durationpb.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d == nil {
		s.bounds = append(s.bounds, -1)
		return
	}
	s.bounds = append(s.bounds, d.AsDuration())
}

// asked are the bounds the questions asked for, in order.
func (s *steppingDownSidecar) asked() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.bounds...)
}

func (s *steppingDownSidecar) leader() *batonv1.Leadership {
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := boottime(s.t) + s.validFor
	if n := len(s.deadlines); n > 0 && deadline <= s.deadlines[n-1] {
		deadline = s.deadlines[n-1] + 1
	}
	s.deadlines = append(s.deadlines, deadline)
	return &batonv1.Leadership{IsLeader: true, Identity: "me", HolderIdentity: "me",
		FencingToken: 5, FencingRevision: 4711, Observed: true,
		ValidFor:           durationpb.New(s.validFor),
		ValidUntilBoottime: durationpb.New(deadline)}
}

// lastDeadline is the deadline of the last leader answer given.
func (s *steppingDownSidecar) lastDeadline() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.deadlines[len(s.deadlines)-1]
}

// acks are the deadlines the acknowledgements named.
func (s *steppingDownSidecar) acks() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.acked...)
}

func (s *steppingDownSidecar) GetLeadership(_ context.Context, r *batonv1.GetLeadershipRequest) (*batonv1.Leadership, error) {
	s.bound(r.GetMaxValidFor())
	s.log.add("get " + r.GetClientId())
	return s.leader(), nil
}

func (s *steppingDownSidecar) WatchLeadership(r *batonv1.WatchLeadershipRequest, stream grpc.ServerStreamingServer[batonv1.WatchLeadershipResponse]) error {
	s.bound(r.GetMaxValidFor())
	s.log.add("watch " + r.GetClientId())
	if err := stream.Send(&batonv1.WatchLeadershipResponse{Leadership: s.leader()}); err != nil {
		return err
	}
	var tick <-chan time.Time
	if s.heartbeats > 0 {
		ticker := time.NewTicker(s.heartbeats)
		defer ticker.Stop()
		tick = ticker.C
	}
wait:
	for {
		select {
		case <-s.stepDown:
			break wait
		case <-stream.Context().Done():
			return nil
		case <-tick:
			err := stream.Send(&batonv1.WatchLeadershipResponse{
				Event: batonv1.WatchLeadershipResponse_EVENT_HEARTBEAT, Leadership: s.leader()})
			if err != nil {
				return err
			}
		}
	}
	s.log.add("stepping down")
	err := stream.Send(&batonv1.WatchLeadershipResponse{Leadership: &batonv1.Leadership{
		Identity: "me", HolderIdentity: "me", FencingToken: 5, Observed: true, SteppingDown: true}})
	if err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (s *steppingDownSidecar) AcknowledgeStepDown(_ context.Context, r *batonv1.AcknowledgeStepDownRequest) (*batonv1.AcknowledgeStepDownResponse, error) {
	s.mu.Lock()
	if r.ValidUntilBoottime != nil {
		s.acked = append(s.acked, r.GetValidUntilBoottime().AsDuration())
	} else {
		s.acked = append(s.acked, -1)
	}
	s.mu.Unlock()
	s.log.add(fmt.Sprintf("ack %s %d", r.GetClientId(), r.GetFencingToken()))
	return &batonv1.AcknowledgeStepDownResponse{Acknowledged: true}, nil
}

func startRunWhileLeader(t *testing.T, c *baton.Client, log *journal) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		result <- c.RunWhileLeader(ctx, func(ctx context.Context, l baton.Leadership) error {
			log.add("work started")
			if l.FencingToken != 5 || l.FencingRevision.String() != "4711" || l.Remaining() <= 0 {
				t.Errorf("work got %+v; want the leader state with token 5, revision 4711", l)
			}
			<-ctx.Done()
			log.add("work cancelled")
			time.Sleep(100 * time.Millisecond) // winding down takes a while
			log.add("work returned")
			return ctx.Err()
		})
	}()
	return func() error {
		cancel()
		select {
		case err := <-result:
			return err
		case <-time.After(5 * time.Second):
			t.Fatal("RunWhileLeader did not return 5s after its context ended")
			return nil
		}
	}
}

func TestRunWhileLeaderCancelsWaitsThenAcknowledgesOnSteppingDown(t *testing.T) {
	log := newJournal()
	fake := &steppingDownSidecar{t: t, validFor: 10 * time.Second, stepDown: make(chan struct{}), log: log}
	c, err := baton.New(baton.WithAddr(serve(t, fake)), baton.WithClientID("app-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := startRunWhileLeader(t, c, log)
	log.await(t, "work started")
	close(fake.stepDown)
	log.await(t, "ack app-1 5")
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("RunWhileLeader() = %v; want context.Canceled", err)
	}
	want := []string{"watch app-1", "work started", "stepping down", "work cancelled", "work returned", "ack app-1 5"}
	if got := log.all(); len(got) != len(want) || got[3] != want[3] || got[4] != want[4] || got[5] != want[5] {
		t.Errorf("events %v; want %v", got, want)
	}
}

func TestRunWhileLeaderAcknowledgesUpToTheLastDeadlineItReceived(t *testing.T) {
	log := newJournal()
	fake := &steppingDownSidecar{t: t, validFor: 10 * time.Second, heartbeats: 20 * time.Millisecond,
		stepDown: make(chan struct{}), log: log}
	c, err := baton.New(baton.WithAddr(serve(t, fake)), baton.WithClientID("app-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := startRunWhileLeader(t, c, log)
	log.await(t, "work started")
	time.Sleep(100 * time.Millisecond) // heartbeats, each a later promise
	close(fake.stepDown)
	log.await(t, "ack app-1 5")
	stop()
	// Heartbeats stop before the stepping-down message, so the last one
	// given is the last one the client received before it acknowledged.
	if acks, last := fake.acks(), fake.lastDeadline(); len(acks) != 1 || acks[0] != last {
		t.Errorf("acknowledgements named %v; want just the deadline of the last answer, %v (of %d)",
			acks, last, len(fake.deadlines))
	}
	if len(fake.deadlines) < 3 {
		t.Errorf("only %d answers given; want heartbeats too", len(fake.deadlines))
	}
}

func TestAcknowledgeStepDownNamesTheLatestDeadlineThisClientReceived(t *testing.T) {
	log := newJournal()
	fake := &steppingDownSidecar{t: t, validFor: 10 * time.Second, stepDown: make(chan struct{}), log: log}
	addr := serve(t, fake)
	c, err := baton.New(baton.WithAddr(addr), baton.WithClientID("shared"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for range 2 {
		if _, err := c.Leadership(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	mine := fake.lastDeadline()
	// Another process with the same client ID is answered later: this
	// Client's acknowledgement must not cover that.
	other, _ := baton.New(baton.WithAddr(addr), baton.WithClientID("shared"))
	defer other.Close()
	if _, err := other.Leadership(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AcknowledgeStepDown(context.Background(), 5); err != nil {
		t.Fatal(err)
	}
	// Of a term it was never answered in, it names nothing (zero).
	if _, err := c.AcknowledgeStepDown(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	if acks := fake.acks(); len(acks) != 2 || acks[0] != mine || acks[1] != 0 {
		t.Errorf("acknowledgements named %v; want [%v 0]", acks, mine)
	}
}

// scriptedSidecar streams the leader answers sent on its script, and fails
// every acknowledgement after recording it (a call that timed out on the
// client, which the sidecar may still process later).
type scriptedSidecar struct {
	batonv1.UnimplementedLeaderElectionServer
	script chan *batonv1.Leadership
	log    *journal
}

func (s *scriptedSidecar) WatchLeadership(_ *batonv1.WatchLeadershipRequest, stream grpc.ServerStreamingServer[batonv1.WatchLeadershipResponse]) error {
	for {
		select {
		case m := <-s.script:
			if err := stream.Send(&batonv1.WatchLeadershipResponse{Leadership: m}); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return nil
		}
	}
}

func (s *scriptedSidecar) AcknowledgeStepDown(_ context.Context, r *batonv1.AcknowledgeStepDownRequest) (*batonv1.AcknowledgeStepDownResponse, error) {
	s.log.add(fmt.Sprintf("ack %v", r.GetValidUntilBoottime().AsDuration()))
	return nil, status.Error(codes.Unavailable, "paused")
}

func TestRunWhileLeaderStartsNoWorkOnAnAnswerALateAcknowledgementWouldVoid(t *testing.T) {
	log := newJournal()
	fake := &scriptedSidecar{script: make(chan *batonv1.Leadership), log: log}
	c, err := baton.New(baton.WithAddr(serve(t, fake)), baton.WithHeartbeatInterval(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first := boottime(t) + 10*time.Second
	answer := func(leader bool, deadline time.Duration) *batonv1.Leadership {
		m := &batonv1.Leadership{IsLeader: leader, Identity: "me", HolderIdentity: "me",
			FencingToken: 5, Observed: true}
		if leader {
			m.ValidFor = durationpb.New(deadline - boottime(t))
			m.ValidUntilBoottime = durationpb.New(deadline)
		}
		return m
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- c.RunWhileLeader(ctx, func(ctx context.Context, l baton.Leadership) error {
			log.add(fmt.Sprintf("work on %v", l.ValidUntilBoottime))
			return nil // done for now: the term is acknowledged
		})
	}()
	fake.script <- answer(true, first)
	log.await(t, fmt.Sprintf("work on %v", first))
	log.await(t, fmt.Sprintf("ack %v", first)) // fails: it may still land
	// A blip (not leader), then leader again on an answer given between the
	// same two renews: the acknowledgement in doubt would void its promise.
	fake.script <- answer(false, 0)
	// The blip ends the finished term, acknowledged again (in doubt too)
	// before the next answers arrive, so it names the only deadline heard.
	log.await(t, fmt.Sprintf("ack %v", first))
	fake.script <- answer(true, first)
	// After the next renew a later answer is safe to work on.
	second := first + 2*time.Second
	fake.script <- answer(true, second)
	log.await(t, fmt.Sprintf("work on %v", second))
	cancel()
	<-done
	runs := 0
	for _, e := range log.all() {
		if e == fmt.Sprintf("work on %v", first) {
			runs++
		}
	}
	if runs != 1 {
		t.Errorf("work ran %d times on the first deadline; want once, not again on the voidable answer: %v",
			runs, log.all())
	}
}

func TestRunWhileLeaderEndsTheWorkWhenTheGuaranteeRunsOut(t *testing.T) {
	log := newJournal()
	fake := &steppingDownSidecar{t: t, validFor: 300 * time.Millisecond, stepDown: make(chan struct{}), log: log}
	c, err := baton.New(baton.WithAddr(serve(t, fake)), baton.WithClientID("app-2"),
		baton.WithHeartbeatInterval(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := startRunWhileLeader(t, c, log)
	log.await(t, "work started")
	start := time.Now()
	log.await(t, "work cancelled")
	if took := time.Since(start); took > 400*time.Millisecond {
		t.Errorf("work cancelled %v after it started; want at the 300ms guarantee", took)
	}
	log.await(t, "ack app-2 5")
	stop()
}

func TestRunWhileLeaderAcknowledgesWhenItsContextEnds(t *testing.T) {
	log := newJournal()
	fake := &steppingDownSidecar{t: t, validFor: 10 * time.Second, stepDown: make(chan struct{}), log: log}
	c, err := baton.New(baton.WithAddr(serve(t, fake)), baton.WithClientID("app-3"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	stop := startRunWhileLeader(t, c, log)
	log.await(t, "work started")
	if err := stop(); !errors.Is(err, context.Canceled) {
		t.Errorf("RunWhileLeader() = %v; want context.Canceled", err)
	}
	got := log.all()
	if n := len(got); n < 3 || got[n-3] != "work cancelled" || got[n-2] != "work returned" || got[n-1] != "ack app-3 5" {
		t.Errorf("events %v; want the work cancelled, returned, then acknowledged", got)
	}
}

func TestEveryQuestionCarriesTheClientID(t *testing.T) {
	log := newJournal()
	fake := &steppingDownSidecar{t: t, validFor: time.Second, stepDown: make(chan struct{}), log: log}
	addr := serve(t, fake)
	c, err := baton.New(baton.WithAddr(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if id := c.ClientID(); len(id) != 16 {
		t.Errorf("default ClientID() = %q; want 16 hex digits", id)
	}
	other, _ := baton.New(baton.WithAddr(addr))
	defer other.Close()
	if other.ClientID() == c.ClientID() {
		t.Errorf("two clients share the ID %q", c.ClientID())
	}
	if _, err := c.Leadership(context.Background()); err != nil {
		t.Fatal(err)
	}
	log.await(t, "get "+c.ClientID())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for range c.Watch(ctx) {
		break
	}
	log.await(t, "watch "+c.ClientID())
	if ok, err := c.AcknowledgeStepDown(context.Background(), 5); !ok || err != nil {
		t.Errorf("AcknowledgeStepDown(5) = %v, %v", ok, err)
	}
	log.await(t, "ack "+c.ClientID()+" 5")
	for _, bad := range []string{"has space", "ü", string(make([]byte, 65))} {
		if _, err := baton.New(baton.WithAddr(addr), baton.WithClientID(bad)); err == nil {
			t.Errorf("WithClientID(%q) accepted", bad)
		}
	}
}

func TestRequireLeaderAsksForMinValidityPlusTheSlackAndNothingElseDoes(t *testing.T) {
	log := newJournal()
	fake := &steppingDownSidecar{t: t, validFor: 10 * time.Second, stepDown: make(chan struct{}), log: log}
	c, err := baton.New(baton.WithAddr(serve(t, fake)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if _, err := c.RequireLeader(ctx, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RequireLeader(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Leadership(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.IsLeader(ctx); err != nil {
		t.Fatal(err)
	}
	var writeFor time.Duration
	err = c.Fenced(ctx, 2*time.Second, func(ctx context.Context, _ int32) error {
		d, _ := ctx.Deadline()
		writeFor = time.Until(d)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if writeFor < 9*time.Second {
		t.Errorf("Fenced gave the write %v; want the whole 10s promise", writeFor)
	}
	wctx, cancel := context.WithCancel(ctx)
	for range c.Watch(wctx) {
		break
	}
	cancel()
	log.await(t, "watch "+c.ClientID())
	want := []time.Duration{2*time.Second + baton.RequireLeaderSlack, baton.RequireLeaderSlack, -1, -1, -1, -1}
	if got := fake.asked(); !slices.Equal(got, want) {
		t.Errorf("max_valid_for of RequireLeader(2s), RequireLeader(0), Leadership, IsLeader, Fenced, Watch = %v; want %v (-1: none)",
			got, want)
	}
}

// queuedSidecar produces its answer, then holds it for delay before sending
// it: an answer that sat in a queue.
type queuedSidecar struct {
	batonv1.UnimplementedLeaderElectionServer
	t                 *testing.T
	validFor, delay   time.Duration
	omitBoottimeField bool
}

func (s *queuedSidecar) answer() *batonv1.Leadership {
	m := &batonv1.Leadership{IsLeader: true, Identity: "me", HolderIdentity: "me", FencingToken: 1,
		Observed: true, ValidFor: durationpb.New(s.validFor)}
	if !s.omitBoottimeField {
		m.ValidUntilBoottime = durationpb.New(boottime(s.t) + s.validFor)
	}
	time.Sleep(s.delay)
	return m
}

func (s *queuedSidecar) GetLeadership(context.Context, *batonv1.GetLeadershipRequest) (*batonv1.Leadership, error) {
	return s.answer(), nil
}

func (s *queuedSidecar) WatchLeadership(_ *batonv1.WatchLeadershipRequest, stream grpc.ServerStreamingServer[batonv1.WatchLeadershipResponse]) error {
	if err := stream.Send(&batonv1.WatchLeadershipResponse{Leadership: s.answer()}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func TestAnAnswerThatSatInAQueueDoesNotOverPromise(t *testing.T) {
	fake := &queuedSidecar{t: t, validFor: time.Second, delay: 400 * time.Millisecond}
	c, err := baton.New(baton.WithAddr(serve(t, fake)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	l, err := c.Leadership(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := l.Remaining(); r > 600*time.Millisecond || r < 400*time.Millisecond {
		t.Errorf("unary: Remaining() = %v; want the 1s promise less the 400ms it sat, not counted from arrival", r)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for l, err := range c.Watch(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if r := l.Remaining(); r > 600*time.Millisecond || r < 400*time.Millisecond {
			t.Errorf("watch: Remaining() = %v; want the 1s promise less the 400ms it sat", r)
		}
		if until := time.Until(l.ValidUntil); until > 600*time.Millisecond {
			t.Errorf("watch: ValidUntil is %v away; want within the promise", until)
		}
		break
	}
}

func TestAnOlderSidecarsAnswerCountsFromWhenTheRequestWasSent(t *testing.T) {
	fake := &queuedSidecar{t: t, validFor: time.Second, delay: 300 * time.Millisecond, omitBoottimeField: true}
	c, err := baton.New(baton.WithAddr(serve(t, fake)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sent := boottime(t)
	l, err := c.Leadership(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if d := l.ValidUntilBoottime - sent; d < time.Second || d > time.Second+50*time.Millisecond {
		t.Errorf("ValidUntilBoottime = sent + %v; want sent + validFor (1s)", d)
	}
}
