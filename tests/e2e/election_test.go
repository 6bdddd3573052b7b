// End-to-end election tests: three baton sidecars (and client-go electors)
// on one Lease of the real API server, under kills, pauses and SIGTERM.
package e2e

import (
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/sidecars"
)

var microTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

func threeSidecars(e *env) []*sidecars.Member {
	return []*sidecars.Member{e.sidecar("a"), e.sidecar("b"), e.sidecar("c")}
}

func TestExactlyOneLeaderAndTheLeaseShowsIt(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	safe := sidecars.WatchSafety(t, members)
	leader, st := sidecars.WaitLeader(t, members, 10*time.Second)
	first := e.getLease()
	time.Sleep(3 * sidecars.RetryPeriod) // a few renews
	later := e.getLease()
	safe.Check()

	if first.holder() != leader.Name || st.HolderIdentity != leader.Name {
		t.Errorf("Lease holder %q, /leader holderIdentity %q; want the leader %q", first.holder(), st.HolderIdentity, leader.Name)
	}
	// Three candidates racing for a Lease that does not exist yet: one creates
	// it, the others follow, and nobody's stale first read unseats the winner.
	// A winner that really missed its renew deadline (a loaded machine can
	// stall a renew past the tests' 1.5 s) says so in its log and may be
	// succeeded; a winner that renewed in time must still hold the term.
	if later.Spec.LeaseTransitions != 0 {
		if !strings.Contains(leader.Log(), "reason=renew_deadline_passed") {
			t.Fatalf("leaseTransitions %d after the first election, want 0 (no spurious handover): the first leader %s never missed its renew deadline", later.Spec.LeaseTransitions, leader.Name)
		}
		t.Skipf("the first leader %s missed its renew deadline (a stalled renew on a loaded machine) and was succeeded; the renew checks need an undisturbed term", leader.Name)
	}
	if int64(first.Spec.LeaseTransitions) != st.FencingToken {
		t.Errorf("fencing token %d, want the Lease's leaseTransitions %d", st.FencingToken, first.Spec.LeaseTransitions)
	}
	if first.Spec.LeaseDurationSeconds != int(sidecars.LeaseDuration.Seconds()) {
		t.Errorf("leaseDurationSeconds %d, want %v", first.Spec.LeaseDurationSeconds, sidecars.LeaseDuration)
	}
	for _, ts := range []string{first.Spec.AcquireTime, first.Spec.RenewTime, later.Spec.RenewTime} {
		if !microTime.MatchString(ts) {
			t.Errorf("time %q is not a MicroTime with six fractional digits", ts)
		}
	}
	// Renewing touched only renewTime.
	if later.Spec.RenewTime == first.Spec.RenewTime {
		t.Errorf("renewTime did not move in %v", 3*sidecars.RetryPeriod)
	}
	if later.holder() != first.holder() || later.Spec.AcquireTime != first.Spec.AcquireTime ||
		later.Spec.LeaseTransitions != first.Spec.LeaseTransitions ||
		later.Spec.LeaseDurationSeconds != first.Spec.LeaseDurationSeconds {
		t.Errorf("renew changed more than renewTime: %+v -> %+v", first.Spec, later.Spec)
	}
	for _, m := range sidecars.Others(members, leader) {
		s, err := m.State()
		if err != nil || s.IsLeader || s.HolderIdentity != leader.Name {
			t.Errorf("follower %s: %+v %v; want isLeader=false holder=%s", m.Name, s, err, leader.Name)
		}
	}
}

// handover stops the leader with sig and returns how long until another
// member answers isLeader, the old leader, and the states before and after.
// Like a cooperating application, the test acknowledges the step-down as soon
// as the old leader stops answering leader (the step-down handshake).
func handover(t *testing.T, members []*sidecars.Member, sig syscall.Signal) (time.Duration, *sidecars.Member, sidecars.State, sidecars.State) {
	t.Helper()
	leader, before := sidecars.WaitLeader(t, members, 10*time.Second)
	rest := sidecars.Others(members, leader)
	start := time.Now()
	leader.Signal(sig)
	if sig != syscall.SIGKILL {
		go leader.AcknowledgeOnceSteppedDown(before.FencingToken)
	}
	_, after := sidecars.WaitLeader(t, rest, 10*time.Second)
	return time.Since(start), leader, before, after
}

func TestKillNineFailsOverAfterAboutOneLeaseDuration(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	safe := sidecars.WatchSafety(t, members)
	took, _, before, after := handover(t, members, syscall.SIGKILL)
	safe.Check()
	t.Logf("crash failover took %v (lease duration %v)", took, sidecars.LeaseDuration)
	// The follower must wait out the dead leader's lease, measured from when
	// it last saw a renew: between lease − retry period and lease + slack.
	if took < sidecars.LeaseDuration-2*sidecars.RetryPeriod || took > sidecars.LeaseDuration+time.Second {
		t.Errorf("failover took %v; want about one lease duration (%v)", took, sidecars.LeaseDuration)
	}
	if after.FencingToken != before.FencingToken+1 {
		t.Errorf("token %d after takeover, want %d", after.FencingToken, before.FencingToken+1)
	}
}

func TestSigtermHandsOverWithinARetryPeriod(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	safe := sidecars.WatchSafety(t, members)
	var took []time.Duration
	for i := 0; i < 2; i++ {
		d, old, before, after := handover(t, members, syscall.SIGTERM)
		took = append(took, d)
		if after.FencingToken != before.FencingToken+1 {
			t.Errorf("token %d after handover, want %d", after.FencingToken, before.FencingToken+1)
		}
		sidecars.CheckExitAfterSIGTERM(t, old)
		members = sidecars.Others(members, old)
	}
	safe.Check()
	t.Logf("graceful handovers took %v (retry period %v)", took, sidecars.RetryPeriod)
	for _, d := range took {
		if d > sidecars.RetryPeriod {
			t.Errorf("graceful handover took %v, want under the retry period %v", d, sidecars.RetryPeriod)
		}
	}
}

func TestSigtermWithoutAcknowledgementHandsOverOnlyOnceThePromiseLapsed(t *testing.T) {
	members := threeSidecars(withWatch(t))
	leader, _ := sidecars.WaitLeader(t, members, 10*time.Second)
	// An application that polls without a client_id: only time ends its promise.
	promised, err := leader.AnonymousState()
	if err != nil || !promised.IsLeader {
		t.Fatalf("leader's anonymous answer: %+v %v", promised, err)
	}
	asked := time.Now()
	validFor, err := time.ParseDuration(promised.ValidFor)
	if err != nil {
		t.Fatalf("validFor %q: %v", promised.ValidFor, err)
	}
	leader.Signal(syscall.SIGTERM)
	sidecars.WaitLeader(t, sidecars.Others(members, leader), 10*time.Second)
	if took := time.Since(asked); took < validFor {
		t.Errorf("a new leader %v after a promise of %v: before it lapsed", took, validFor)
	}
}

func TestPausedLeaderAnswersFalseFirstThingAfterWaking(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	safe := sidecars.WatchSafety(t, members)
	leader, before := sidecars.WaitLeader(t, members, 10*time.Second)
	leader.Signal(syscall.SIGSTOP)
	_, after := sidecars.WaitLeader(t, sidecars.Others(members, leader), 10*time.Second)
	time.Sleep(sidecars.LeaseDuration - sidecars.RenewDeadline) // paused past its lease, whatever the handover took
	leader.Signal(syscall.SIGCONT)
	s, err := leader.State()
	if err != nil {
		t.Fatal(err)
	}
	if s.IsLeader {
		t.Errorf("first answer after SIGCONT: isLeader=true (paused past its lease)")
	}
	time.Sleep(3 * sidecars.RetryPeriod)
	safe.Check()
	if after.FencingToken <= before.FencingToken {
		t.Errorf("token went from %d to %d across the takeover", before.FencingToken, after.FencingToken)
	}
	// The woken sidecar rejoins as a follower of the new leader once it has
	// read the Lease again: within a few retry periods, later while the API
	// server is slow to answer (its reads then time out and are retried).
	following := func(s sidecars.State) bool { return !s.IsLeader && s.HolderIdentity != leader.Name }
	if s, ok, err := sidecars.AwaitState(leader, 10*time.Second, following); !ok {
		t.Errorf("woken sidecar after 10s: %+v %v; want a follower of the new leader", s, err)
	}
}

func TestStaleLeaseIsTakenOverAndLiveOneIsLeftAlone(t *testing.T) {
	e := withWatch(t)
	stale := time.Now().Add(-10 * time.Minute).UTC().Format("2006-01-02T15:04:05.000000Z")
	cp.MustKubectl(t, leaseYAML(e.Namespace, "stale", "gone-holder", 2, stale, 4), "apply", "-f", "-")
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	cp.MustKubectl(t, leaseYAML(e.Namespace, "live", "live-holder", 86400, now, 7), "apply", "-f", "-")

	e.Lease = "stale"
	s := e.sidecar("taker")
	_, st := sidecars.WaitLeader(t, []*sidecars.Member{s}, 10*time.Second)
	if st.FencingToken != 5 {
		t.Errorf("token after taking over a Lease with 4 transitions: %d, want 5", st.FencingToken)
	}
	e.Lease = "live"
	l := e.sidecar("waiter")
	time.Sleep(2 * sidecars.LeaseDuration)
	if st, err := l.State(); err != nil || st.IsLeader || st.HolderIdentity != "live-holder" {
		t.Errorf("sidecar on a live foreign Lease: %+v %v; want a follower of live-holder", st, err)
	}
	e.Lease = "live"
	if got := e.getLease(); got.holder() != "live-holder" || got.Spec.LeaseTransitions != 7 {
		t.Errorf("live Lease was modified: %+v", got.Spec)
	}
}

func leaseYAML(ns, name, holder string, duration int, renew string, transitions int) string {
	return "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: " + name + ", namespace: " + ns + "}\n" +
		"spec: {holderIdentity: " + holder + ", leaseDurationSeconds: " + strconv.Itoa(duration) +
		", acquireTime: \"" + renew + "\", renewTime: \"" + renew + "\", leaseTransitions: " + strconv.Itoa(transitions) + "}\n"
}

func TestMinimalRoleWithoutWatchFallsBackToPolling(t *testing.T) {
	e := newEnv(t, "get", "create", "update") // no watch: baton must poll
	members := threeSidecars(e)
	safe := sidecars.WatchSafety(t, members)
	took, _, _, _ := handover(t, members, syscall.SIGTERM)
	safe.Check()
	t.Logf("graceful handover without watch took %v", took)
	// Polling: the follower sees the release at its next poll.
	if took > 2*sidecars.RetryPeriod+200*time.Millisecond {
		t.Errorf("handover without watch took %v; want within about a retry period", took)
	}
}

func TestInteropWithClientGoLeaderElector(t *testing.T) {
	e := withWatch(t)
	members := []*sidecars.Member{e.goElector("go"), e.sidecar("baton-1"), e.sidecar("baton-2")}
	safe := sidecars.WatchSafety(t, members)
	var tokens []int64
	holders := map[string]bool{}
	for round := 0; round < 4; round++ {
		leader, st := sidecars.WaitLeader(t, members, 15*time.Second)
		tokens = append(tokens, st.FencingToken)
		holders[leader.Name] = true
		lease := e.getLease()
		if lease.holder() != leader.Name || int64(lease.Spec.LeaseTransitions) != st.FencingToken {
			t.Errorf("round %d: Lease %+v, leader %s token %d", round, lease.Spec, leader.Name, st.FencingToken)
		}
		// Everyone reads the holder the same way, once it has read the Lease
		// since the takeover: within a few retry periods, later while the
		// API server is slow to answer.
		holds := func(s sidecars.State) bool { return s.HolderIdentity == leader.Name }
		for _, m := range sidecars.Others(members, leader) {
			if s, ok, err := sidecars.AwaitState(m, 10*time.Second, holds); !ok {
				t.Errorf("round %d: %s sees holder %q after 10s (%v), want %q", round, m.Name, s.HolderIdentity, err, leader.Name)
			}
		}
		// Kill the leader and start a fresh member of the same kind in its place.
		leader.Signal(syscall.SIGKILL)
		<-leader.Done()
		replacement := leader.Name + "+"
		var fresh *sidecars.Member
		if leader.Name[0] == 'g' {
			fresh = e.goElector(replacement)
		} else {
			fresh = e.sidecar(replacement)
		}
		members = append(sidecars.Others(members, leader), fresh)
		safe.Watch(members)
	}
	safe.Check()
	for i := 1; i < len(tokens); i++ {
		if tokens[i] != tokens[i-1]+1 {
			t.Errorf("tokens across handovers %v: want each handover to add exactly 1", tokens)
			break
		}
	}
	names := make([]string, 0, len(holders))
	for n := range holders {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("leaders over 4 rounds: %v, tokens %v", names, tokens)
}
