// End-to-end election tests: three baton sidecars (and client-go electors)
// on one Lease of the real API server, under kills, pauses and SIGTERM.
package e2e

import (
	"regexp"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"
)

var microTime = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

func threeSidecars(e *env) []*member {
	return []*member{e.sidecar("a"), e.sidecar("b"), e.sidecar("c")}
}

func TestExactlyOneLeaderAndTheLeaseShowsIt(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	safe := watchSafety(t, members)
	leader, st := waitLeader(t, members, 10*time.Second)
	first := e.getLease()
	time.Sleep(3 * retryPeriod) // a few renews
	later := e.getLease()
	safe.check()

	if first.holder() != leader.identity || st.HolderIdentity != leader.identity {
		t.Errorf("Lease holder %q, /leader holderIdentity %q; want the leader %q", first.holder(), st.HolderIdentity, leader.identity)
	}
	if int64(first.Spec.LeaseTransitions) != st.FencingToken {
		t.Errorf("fencing token %d, want the Lease's leaseTransitions %d", st.FencingToken, first.Spec.LeaseTransitions)
	}
	if first.Spec.LeaseDurationSeconds != int(leaseDuration.Seconds()) {
		t.Errorf("leaseDurationSeconds %d, want %v", first.Spec.LeaseDurationSeconds, leaseDuration)
	}
	for _, ts := range []string{first.Spec.AcquireTime, first.Spec.RenewTime, later.Spec.RenewTime} {
		if !microTime.MatchString(ts) {
			t.Errorf("time %q is not a MicroTime with six fractional digits", ts)
		}
	}
	// Renewing touched only renewTime.
	if later.Spec.RenewTime == first.Spec.RenewTime {
		t.Errorf("renewTime did not move in %v", 3*retryPeriod)
	}
	if later.holder() != first.holder() || later.Spec.AcquireTime != first.Spec.AcquireTime ||
		later.Spec.LeaseTransitions != first.Spec.LeaseTransitions ||
		later.Spec.LeaseDurationSeconds != first.Spec.LeaseDurationSeconds {
		t.Errorf("renew changed more than renewTime: %+v -> %+v", first.Spec, later.Spec)
	}
	for _, m := range others(members, leader) {
		s, err := m.state()
		if err != nil || s.IsLeader || s.HolderIdentity != leader.identity {
			t.Errorf("follower %s: %+v %v; want isLeader=false holder=%s", m.name, s, err, leader.identity)
		}
	}
}

// handover stops the leader with sig and returns how long until another
// member answers isLeader, the old leader, and the states before and after.
func handover(t *testing.T, members []*member, sig syscall.Signal) (time.Duration, *member, State, State) {
	t.Helper()
	leader, before := waitLeader(t, members, 10*time.Second)
	rest := others(members, leader)
	start := time.Now()
	leader.signal(sig)
	_, after := waitLeader(t, rest, 10*time.Second)
	return time.Since(start), leader, before, after
}

func TestKillNineFailsOverAfterAboutOneLeaseDuration(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	safe := watchSafety(t, members)
	took, _, before, after := handover(t, members, syscall.SIGKILL)
	safe.check()
	t.Logf("crash failover took %v (lease duration %v)", took, leaseDuration)
	// The follower must wait out the dead leader's lease, measured from when
	// it last saw a renew: between lease − retry period and lease + slack.
	if took < leaseDuration-2*retryPeriod || took > leaseDuration+time.Second {
		t.Errorf("failover took %v; want about one lease duration (%v)", took, leaseDuration)
	}
	if after.FencingToken != before.FencingToken+1 {
		t.Errorf("token %d after takeover, want %d", after.FencingToken, before.FencingToken+1)
	}
}

func TestSigtermHandsOverWithinARetryPeriod(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	safe := watchSafety(t, members)
	var took []time.Duration
	for i := 0; i < 2; i++ {
		d, old, before, after := handover(t, members, syscall.SIGTERM)
		took = append(took, d)
		if after.FencingToken != before.FencingToken+1 {
			t.Errorf("token %d after handover, want %d", after.FencingToken, before.FencingToken+1)
		}
		select {
		case <-old.done:
			if code := old.cmd.ProcessState.ExitCode(); code != 0 {
				t.Errorf("%s exited %d after SIGTERM, want 0", old.name, code)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("%s still running 5s after SIGTERM", old.name)
		}
		members = others(members, old)
	}
	safe.check()
	t.Logf("graceful handovers took %v (retry period %v)", took, retryPeriod)
	for _, d := range took {
		if d > retryPeriod {
			t.Errorf("graceful handover took %v, want under the retry period %v", d, retryPeriod)
		}
	}
}

func TestPausedLeaderAnswersFalseFirstThingAfterWaking(t *testing.T) {
	e := withWatch(t)
	members := threeSidecars(e)
	safe := watchSafety(t, members)
	leader, before := waitLeader(t, members, 10*time.Second)
	leader.signal(syscall.SIGSTOP)
	_, after := waitLeader(t, others(members, leader), 10*time.Second)
	time.Sleep(leaseDuration - renewDeadline) // paused past its lease, whatever the handover took
	leader.signal(syscall.SIGCONT)
	s, err := leader.state()
	if err != nil {
		t.Fatal(err)
	}
	if s.IsLeader {
		t.Errorf("first answer after SIGCONT: isLeader=true (paused past its lease)")
	}
	time.Sleep(3 * retryPeriod)
	safe.check()
	if after.FencingToken <= before.FencingToken {
		t.Errorf("token went from %d to %d across the takeover", before.FencingToken, after.FencingToken)
	}
	// The woken sidecar rejoins as a follower.
	if s, err := leader.state(); err != nil || s.IsLeader || s.HolderIdentity == leader.identity {
		t.Errorf("woken sidecar: %+v %v; want a follower of the new leader", s, err)
	}
}

func TestStaleLeaseIsTakenOverAndLiveOneIsLeftAlone(t *testing.T) {
	e := withWatch(t)
	stale := time.Now().Add(-10 * time.Minute).UTC().Format("2006-01-02T15:04:05.000000Z")
	cp.MustKubectl(t, leaseYAML(e.ns, "stale", "gone-holder", 2, stale, 4), "apply", "-f", "-")
	now := time.Now().UTC().Format("2006-01-02T15:04:05.000000Z")
	cp.MustKubectl(t, leaseYAML(e.ns, "live", "live-holder", 86400, now, 7), "apply", "-f", "-")

	e.lease = "stale"
	s := e.sidecar("taker")
	_, st := waitLeader(t, []*member{s}, 10*time.Second)
	if st.FencingToken != 5 {
		t.Errorf("token after taking over a Lease with 4 transitions: %d, want 5", st.FencingToken)
	}
	e.lease = "live"
	l := e.sidecar("waiter")
	time.Sleep(2 * leaseDuration)
	if st, err := l.state(); err != nil || st.IsLeader || st.HolderIdentity != "live-holder" {
		t.Errorf("sidecar on a live foreign Lease: %+v %v; want a follower of live-holder", st, err)
	}
	e.lease = "live"
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
	e := newEnv(t, "get, create, update")
	members := threeSidecars(e)
	safe := watchSafety(t, members)
	took, _, _, _ := handover(t, members, syscall.SIGTERM)
	safe.check()
	t.Logf("graceful handover without watch took %v", took)
	// Polling: the follower sees the release at its next poll.
	if took > 2*retryPeriod+200*time.Millisecond {
		t.Errorf("handover without watch took %v; want within about a retry period", took)
	}
}

func TestInteropWithClientGoLeaderElector(t *testing.T) {
	e := withWatch(t)
	members := []*member{e.goElector("go"), e.sidecar("baton-1"), e.sidecar("baton-2")}
	safe := watchSafety(t, members)
	var tokens []int64
	holders := map[string]bool{}
	for round := 0; round < 4; round++ {
		leader, st := waitLeader(t, members, 15*time.Second)
		tokens = append(tokens, st.FencingToken)
		holders[leader.name] = true
		lease := e.getLease()
		if lease.holder() != leader.identity || int64(lease.Spec.LeaseTransitions) != st.FencingToken {
			t.Errorf("round %d: Lease %+v, leader %s token %d", round, lease.Spec, leader.name, st.FencingToken)
		}
		// Everyone reads the holder the same way.
		time.Sleep(2 * retryPeriod)
		for _, m := range others(members, leader) {
			if s, err := m.state(); err == nil && s.HolderIdentity != leader.identity {
				t.Errorf("round %d: %s sees holder %q, want %q", round, m.name, s.HolderIdentity, leader.identity)
			}
		}
		// Kill the leader and start a fresh member of the same kind in its place.
		leader.signal(syscall.SIGKILL)
		<-leader.done
		replacement := leader.name + "+"
		var fresh *member
		if leader.name[0] == 'g' {
			fresh = e.goElector(replacement)
		} else {
			fresh = e.sidecar(replacement)
		}
		members = append(others(members, leader), fresh)
		safe.watch(members)
	}
	safe.check()
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
