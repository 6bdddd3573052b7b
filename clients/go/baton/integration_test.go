package baton_test

// Integration tests against real baton sidecars on a real control plane,
// started by clients/testing/sidecars; $BATON_SIDECARS names its
// sidecars.json. The tests share those sidecars, so none runs in parallel,
// and each starts by waiting for a settled election.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/baton-sidecar/baton/clients/go/baton"
)

type sidecar struct {
	Index    int    `json:"index"`
	Identity string `json:"identity"`
	GRPC     string `json:"grpc"`
	Pid      *int   `json:"pid"`
}

type fixture struct {
	Namespace     string    `json:"namespace"`
	LeaseName     string    `json:"leaseName"`
	Kubeconfig    string    `json:"kubeconfig"` // the control plane's admin
	LeaseDuration float64   `json:"leaseDuration"`
	RenewDeadline float64   `json:"renewDeadline"`
	Sidecars      []sidecar `json:"sidecars"`
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func readFixture(t *testing.T) fixture {
	t.Helper()
	path := os.Getenv("BATON_SIDECARS")
	if path == "" {
		t.Skip("BATON_SIDECARS is not set (clients/test starts the sidecars)")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f fixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return f
}

func newClient(t *testing.T, s sidecar, opts ...baton.Option) *baton.Client {
	t.Helper()
	c, err := baton.New(append([]baton.Option{baton.WithAddr(s.GRPC),
		baton.WithHeartbeatInterval(300 * time.Millisecond),
		baton.WithReconnectBackoff(50*time.Millisecond, 500*time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func signal(t *testing.T, s sidecar, sig syscall.Signal) {
	t.Helper()
	if s.Pid == nil {
		t.Fatalf("sidecar %d is not running", s.Index)
	}
	if err := syscall.Kill(*s.Pid, sig); err != nil {
		t.Fatalf("kill -%v %d: %v", sig, *s.Pid, err)
	}
}

// awaitStopped waits until the SIGSTOP sent to s has taken effect (kill
// returns before the process is stopped, and it may answer meanwhile).
func awaitStopped(t *testing.T, s sidecar) {
	t.Helper()
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", *s.Pid))
		// The state follows the command name in parentheses: "T" is stopped.
		if _, rest, ok := strings.Cut(string(stat), ") "); err == nil && ok && strings.HasPrefix(rest, "T") {
			return
		}
	}
	t.Fatalf("sidecar %d (pid %d) did not stop within 2s", s.Index, *s.Pid)
}

// settled waits until every sidecar runs, has read the Lease and answers
// through the client, and exactly one leads; it returns the fixture and the leader's index.
func settled(t *testing.T) (fixture, int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		f := readFixture(t)
		leader, ok := -1, true
		for i, s := range f.Sidecars {
			if s.Pid == nil {
				ok, last = false, "a sidecar is restarting"
				break
			}
			c := newClient(t, s)
			l, err := c.Leadership(context.Background())
			c.Close()
			if err != nil || l.Identity != s.Identity || !l.Observed {
				ok, last = false, "sidecar not answering yet (or not having read the Lease)"
				break
			}
			if l.IsLeader {
				if leader >= 0 {
					ok, last = false, "two leaders"
				}
				leader = i
			}
		}
		if ok && leader >= 0 {
			return f, leader
		}
		if ok {
			last = "no leader"
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("sidecars did not settle in 20s: %s", last)
	return fixture{}, 0
}

func TestLeadershipReadOnLeaderAndFollowers(t *testing.T) {
	f, li := settled(t)
	ctx := context.Background()
	leader := newClient(t, f.Sidecars[li])
	l, err := leader.Leadership(ctx)
	if err != nil || !l.IsLeader || l.HolderIdentity != l.Identity || l.Remaining() <= 0 ||
		l.ValidFor > seconds(f.RenewDeadline) || !l.Observed || l.LeaseName == "" || l.AcquireTime.IsZero() {
		t.Fatalf("leader's Leadership() = %+v, %v", l, err)
	}
	token, err := leader.RequireLeader(ctx, 500*time.Millisecond)
	if err != nil || token != l.FencingToken {
		t.Errorf("leader's RequireLeader() = %d, %v; want token %d", token, err, l.FencingToken)
	}
	// More validity than the renew deadline can ever give is refused.
	var nl *baton.NotLeaderError
	if _, err := leader.RequireLeader(ctx, seconds(f.RenewDeadline)+time.Second); !errors.As(err, &nl) || !nl.Leadership.IsLeader {
		t.Errorf("RequireLeader(beyond the renew deadline) = %v; want a NotLeaderError for a leader", err)
	}
	for i, s := range f.Sidecars {
		if i == li {
			continue
		}
		c := newClient(t, s)
		fl, err := c.Leadership(ctx)
		if err != nil || fl.IsLeader || fl.HolderIdentity != l.Identity || fl.FencingToken != l.FencingToken || fl.Remaining() != 0 {
			t.Errorf("follower %d: Leadership() = %+v, %v; want follower of %s with token %d", i, fl, err, l.Identity, l.FencingToken)
		}
		if ok, err := c.IsLeader(ctx); ok || err != nil {
			t.Errorf("follower %d: IsLeader() = %v, %v", i, ok, err)
		}
		_, err = c.RequireLeader(ctx, 0)
		if !errors.Is(err, baton.ErrNotLeader) || !errors.As(err, &nl) || nl.Leadership.HolderIdentity != l.Identity {
			t.Errorf("follower %d: RequireLeader() = %v; want ErrNotLeader naming %s", i, err, l.Identity)
		}
		if err := c.Fenced(ctx, 0, func(context.Context, int32) error {
			t.Errorf("follower %d: Fenced ran the write", i)
			return nil
		}); !errors.Is(err, baton.ErrNotLeader) {
			t.Errorf("follower %d: Fenced() = %v; want ErrNotLeader", i, err)
		}
	}
}

// watchAll watches every sidecar and sends what each yields on one channel.
type seen struct {
	index int
	l     baton.Leadership
	err   error
}

func watchAll(t *testing.T, ctx context.Context, f fixture) <-chan seen {
	ch := make(chan seen, 100)
	for i, s := range f.Sidecars {
		c := newClient(t, s)
		go func() {
			for l, err := range c.Watch(ctx) {
				select {
				case ch <- seen{i, l, err}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	return ch
}

func TestWatchSeesResignHandoverWithAHigherToken(t *testing.T) {
	f, li := settled(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	events := watchAll(t, ctx, f)
	leader := newClient(t, f.Sidecars[li])
	before, err := leader.Leadership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Each watch first yields the current state.
	initial := map[int]bool{}
	for len(initial) < len(f.Sidecars) {
		e := <-events
		if e.err != nil || e.l.HolderIdentity != before.Identity || e.l.IsLeader != (e.index == li) {
			t.Fatalf("sidecar %d's first watch state: %+v, %v", e.index, e.l, e.err)
		}
		initial[e.index] = true
	}

	wasLeader, err := leader.Resign(ctx)
	if err != nil || !wasLeader {
		t.Fatalf("Resign() = %v, %v; want true", wasLeader, err)
	}
	if ok, err := leader.IsLeader(ctx); ok || err != nil {
		t.Errorf("after Resign, IsLeader() = %v, %v; want false at once", ok, err)
	}
	oldLeaderStepped, successor := false, -1
	for !oldLeaderStepped || successor < 0 {
		select {
		case e := <-events:
			if e.err != nil {
				t.Fatalf("sidecar %d's watch failed: %v", e.index, e.err)
			}
			if e.index == li && !e.l.IsLeader {
				oldLeaderStepped = true
			}
			if e.index != li && e.l.IsLeader {
				if e.l.FencingToken <= before.FencingToken {
					t.Errorf("successor %d leads with token %d; want above %d", e.index, e.l.FencingToken, before.FencingToken)
				}
				successor = e.index
			}
		case <-ctx.Done():
			t.Fatalf("no handover seen (old leader stepped down: %v, successor: %d)", oldLeaderStepped, successor)
		}
	}
	t.Logf("handover %s -> %s", f.Sidecars[li].Identity, f.Sidecars[successor].Identity)
}

func TestRequireLeaderFailsAfterTheLeaderIsPausedPastItsValidity(t *testing.T) {
	f, li := settled(t)
	s := f.Sidecars[li]
	// A call timeout long enough to outlast the pause: the question is asked
	// while the sidecar is stopped and answered by its first act on waking.
	c := newClient(t, s, baton.WithCallTimeout(20*time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	token, err := c.RequireLeader(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	watch := make(chan baton.Leadership, 10)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	go func() {
		for l, err := range c.Watch(wctx) {
			if err != nil {
				continue
			}
			select {
			case watch <- l:
			case <-wctx.Done():
				return
			}
		}
	}()
	if l := <-watch; !l.IsLeader {
		t.Fatalf("watch starts with %+v; want leader", l)
	}

	signal(t, s, syscall.SIGSTOP)
	paused := time.Now()
	defer signal(t, s, syscall.SIGCONT)
	// The watch gives up the leadership by the clock alone: the paused
	// sidecar cannot say anything.
	select {
	case l := <-watch:
		if l.IsLeader {
			t.Errorf("watch yielded %+v during the pause", l)
		}
		if took := time.Since(paused); took > seconds(f.RenewDeadline)+300*time.Millisecond {
			t.Errorf("watch ended leadership %v after the pause; want within the renew deadline %vs", took, f.RenewDeadline)
		}
	case <-time.After(seconds(f.RenewDeadline) + time.Second):
		t.Error("watch still reports leadership after the guarantee ran out")
	}
	answer := make(chan error, 1)
	go func() {
		_, err := c.RequireLeader(ctx, 0)
		answer <- err
	}()
	time.Sleep(seconds(f.LeaseDuration) + time.Second)
	signal(t, s, syscall.SIGCONT)
	if err := <-answer; !errors.Is(err, baton.ErrNotLeader) {
		t.Fatalf("RequireLeader() asked during the pause = %v; want ErrNotLeader", err)
	}
	if _, err := c.RequireLeader(ctx, 0); !errors.Is(err, baton.ErrNotLeader) {
		t.Errorf("RequireLeader() after waking = %v; want ErrNotLeader", err)
	}
	// Someone else took over, with a higher token.
	f2, li2 := settled(t)
	other := newClient(t, f2.Sidecars[li2])
	t2, err := other.RequireLeader(ctx, 0)
	if li2 == li || err != nil || t2 <= token {
		t.Errorf("new leader %d: token %d, %v; want another sidecar with a token above %d", li2, t2, err, token)
	}
}

func TestWaitUntilLeaderReturnsWhenThisPodTakesOver(t *testing.T) {
	f, li := settled(t)
	want := (li + 1) % len(f.Sidecars)
	c := newClient(t, f.Sidecars[want])
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	type result struct {
		l   baton.Leadership
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := c.WaitUntilLeader(ctx)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		t.Fatalf("WaitUntilLeader returned %+v, %v while another pod leads", r.l, r.err)
	case <-time.After(500 * time.Millisecond):
	}
	// Pause everyone else: this sidecar takes over when the Lease expires.
	for i, s := range f.Sidecars {
		if i != want {
			signal(t, s, syscall.SIGSTOP)
			defer signal(t, s, syscall.SIGCONT)
		}
	}
	r := <-done
	if r.err != nil || !r.l.IsLeader || r.l.Identity != f.Sidecars[want].Identity {
		t.Fatalf("WaitUntilLeader() = %+v, %v", r.l, r.err)
	}
	if _, err := c.RequireLeader(ctx, 100*time.Millisecond); err != nil {
		t.Errorf("RequireLeader() after WaitUntilLeader = %v", err)
	}
}

func TestClientReconnectsAfterTheSidecarRestarts(t *testing.T) {
	f, li := settled(t)
	s := f.Sidecars[li] // the leader: its restart is also a handover
	c := newClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	before, err := c.Leadership(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events := make(chan seen, 100)
	go func() {
		for l, err := range c.Watch(ctx) {
			select {
			case events <- seen{li, l, err}:
			case <-ctx.Done():
				return
			}
		}
	}()
	if e := <-events; e.err != nil || !e.l.IsLeader {
		t.Fatalf("first watch state %+v, %v", e.l, e.err)
	}

	signal(t, s, syscall.SIGKILL)
	// Restarted after 0.5s; the client must notice within its backoff.
	reconnect := time.After(8 * time.Second)
	sawOutage, restarted := false, ""
	for {
		var e seen
		select {
		case e = <-events:
		case <-reconnect:
			t.Fatal("the watch did not reconnect to the restarted sidecar within 8s")
		}
		if e.err != nil {
			if !errors.Is(e.err, baton.ErrSidecarUnavailable) {
				t.Errorf("watch error during the restart: %v; want ErrSidecarUnavailable", e.err)
			}
			if !sawOutage {
				// Unary calls fail fast and clearly meanwhile.
				if _, err := c.Leadership(ctx); err != nil && !errors.Is(err, baton.ErrSidecarUnavailable) {
					t.Errorf("Leadership() during the outage: %v; want ErrSidecarUnavailable", err)
				}
			}
			sawOutage = true
			continue
		}
		if e.l.IsLeader && e.l.Identity == before.Identity {
			t.Fatalf("watch yielded the killed sidecar as leader: %+v", e.l)
		}
		if e.l.Identity != before.Identity {
			if !sawOutage {
				t.Error("watch reconnected without reporting the outage")
			}
			t.Logf("reconnected to %s (holder %s, token %d)", e.l.Identity, e.l.HolderIdentity, e.l.FencingToken)
			restarted = e.l.Identity
			break
		}
	}
	// The same client answers for the new process.
	l, err := c.Leadership(ctx)
	if err != nil || l.Identity == before.Identity {
		t.Errorf("Leadership() after the restart = %+v, %v; want the new process", l, err)
	}
	f2, _ := settled(t)
	if l.Identity != f2.Sidecars[li].Identity || restarted != l.Identity {
		t.Errorf("restarted sidecar answers as %s, watched as %s; fixture says %s", l.Identity, restarted,
			f2.Sidecars[li].Identity)
	}
	passed(t, "restarting-sidecar")
}

// The conformance scenario require-leader-after-pause: while the leader's
// sidecar is stopped for longer than the Lease, its old answer lapses and
// RequireLeader fails as unavailable; afterwards a higher token leads.
func TestRequireLeaderNeverReturnsATokenWhileTheSidecarIsPaused(t *testing.T) {
	f, li := settled(t)
	s := f.Sidecars[li]
	c := newClient(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := c.Leadership(ctx)
	if err != nil || !answer.IsLeader {
		t.Fatalf("Leadership() = %+v, %v; want the leader", answer, err)
	}
	signal(t, s, syscall.SIGSTOP)
	resumed := false
	defer func() {
		if !resumed {
			signal(t, s, syscall.SIGCONT)
		}
	}()
	awaitStopped(t, s)
	pauseEnd := time.Now().Add(seconds(f.LeaseDuration) + 1500*time.Millisecond)
	for time.Now().Before(pauseEnd) {
		if token, err := c.RequireLeader(ctx, 0); !errors.Is(err, baton.ErrSidecarUnavailable) {
			t.Fatalf("RequireLeader() during the pause = %d, %v; want ErrSidecarUnavailable", token, err)
		}
	}
	if left := answer.Remaining(); left != 0 {
		t.Errorf("the answer from before the pause has %v left; want 0", left)
	}
	signal(t, s, syscall.SIGCONT)
	resumed = true

	deadline := time.Now().Add(5 * time.Second)
	pausedOK, higher := false, false
	for time.Now().Before(deadline) && !(pausedOK && higher) {
		l, err := c.Leadership(ctx)
		pausedOK = pausedOK || (err == nil && (!l.IsLeader || l.FencingToken > answer.FencingToken))
		for _, other := range readFixture(t).Sidecars {
			if l, err := newClient(t, other).Leadership(ctx); err == nil && l.IsLeader && l.FencingToken > answer.FencingToken {
				higher = true
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !pausedOK || !higher {
		t.Fatalf("within 5s of SIGCONT: paused sidecar answers not-leader or a higher token: %v; "+
			"some sidecar leads with a token above %d: %v", pausedOK, answer.FencingToken, higher)
	}
	passed(t, "require-leader-after-pause")
}
