//go:build linux

package baton_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
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
// asks and the acknowledgements it gets.
type steppingDownSidecar struct {
	batonv1.UnimplementedLeaderElectionServer
	t        *testing.T
	validFor time.Duration
	stepDown chan struct{}
	log      *journal
}

func (s *steppingDownSidecar) leader() *batonv1.Leadership {
	return &batonv1.Leadership{IsLeader: true, Identity: "me", HolderIdentity: "me",
		FencingToken: 5, FencingRevision: 4711, Observed: true,
		ValidFor:           durationpb.New(s.validFor),
		ValidUntilBoottime: durationpb.New(boottime(s.t) + s.validFor)}
}

func (s *steppingDownSidecar) GetLeadership(_ context.Context, r *batonv1.GetLeadershipRequest) (*batonv1.Leadership, error) {
	s.log.add("get " + r.GetClientId())
	return s.leader(), nil
}

func (s *steppingDownSidecar) WatchLeadership(r *batonv1.WatchLeadershipRequest, stream grpc.ServerStreamingServer[batonv1.WatchLeadershipResponse]) error {
	s.log.add("watch " + r.GetClientId())
	if err := stream.Send(&batonv1.WatchLeadershipResponse{Leadership: s.leader()}); err != nil {
		return err
	}
	select {
	case <-s.stepDown:
	case <-stream.Context().Done():
		return nil
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
	s.log.add(fmt.Sprintf("ack %s %d", r.GetClientId(), r.GetFencingToken()))
	return &batonv1.AcknowledgeStepDownResponse{Acknowledged: true}, nil
}

func startRunWhileLeader(t *testing.T, c *baton.Client, log *journal) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	result := make(chan error, 1)
	go func() {
		result <- c.RunWhileLeader(ctx, func(ctx context.Context, l baton.Leadership) error {
			log.add("work started")
			if l.FencingToken != 5 || l.FencingRevision != 4711 || l.Remaining() <= 0 {
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
