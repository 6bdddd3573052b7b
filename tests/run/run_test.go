// Tests of `baton run` with real processes, real signals and the real
// control plane: replicas of `baton run` around a child (cmd/intervals) that
// appends its interval to a shared file every 5ms, under kills, stops, a
// black-holed API-server link and API-server restarts. However leadership
// moves, no two children's intervals overlap, fencing tokens grow, and no
// child starts while an earlier one is alive.
package run

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/cptest"
	"baton/tests/internal/netfault"
	"baton/tests/internal/proc"
	"baton/tests/internal/sidecars"
)

var cp cptest.ControlPlane

func TestMain(m *testing.M) { os.Exit(cptest.Main(m, &cp)) }

// stopGrace is every replica's --stop-grace: it has to fit, with 200ms,
// below --renew-deadline − 1.2 × --retry-period = 1.2s.
const stopGrace = 500 * time.Millisecond

var (
	buildChild sync.Once
	childBin   string
	childErr   error
)

// intervalsBinary builds cmd/intervals once.
func intervalsBinary(t *testing.T) string {
	buildChild.Do(func() {
		childBin = filepath.Join(cptest.Root(), "build", "controlplane", "bin", "intervals")
		build := exec.Command("go", "build", "-o", childBin, "./run/cmd/intervals")
		build.Dir = filepath.Join(cptest.Root(), "tests")
		if out, err := build.CombinedOutput(); err != nil {
			childErr = fmt.Errorf("building intervals: %v: %s", err, out)
		}
	})
	if childErr != nil {
		t.Fatal(childErr)
	}
	return childBin
}

// group is the replicas of one test, campaigning for one Lease, and the
// file their children write.
type group struct {
	t         *testing.T
	election  sidecars.Election
	file      string
	runArgs   []string // baton run flags
	childArgs []string // cmd/intervals flags
	replicas  map[string]*replica
	next      int
}

// replica is one `baton run` process and its own link to the API server.
type replica struct {
	*sidecars.Member
	proxy *netfault.Proxy
}

func newGroup(t *testing.T, runArgs, childArgs []string) *group {
	ns := cp.Namespace(t, "run")
	cp.GrantLeases(t, ns, "get", "create", "update", "watch")
	return &group{t: t, election: sidecars.Election{
		Kubeconfig: cp.TokenKubeconfig(t, ns, "baton"), Namespace: ns, Lease: "job"},
		file: filepath.Join(t.TempDir(), "intervals"), runArgs: runArgs, childArgs: childArgs,
		replicas: map[string]*replica{}}
}

// start starts one more replica, talking to the API server through a proxy
// of its own.
func (g *group) start() *replica {
	t := g.t
	t.Helper()
	name := fmt.Sprintf("r%d", g.next)
	g.next++
	el := g.election
	el.Kubeconfig = filepath.Join(t.TempDir(), name+".kubeconfig")
	proxy, err := netfault.ProxiedKubeconfig(g.election.Kubeconfig, el.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)
	args := append(append([]string{}, g.runArgs...), "--", intervalsBinary(t), "--file="+g.file)
	m := sidecars.StartInTest(t, sidecars.Spec{Kind: sidecars.Baton, Binary: sidecars.BatonBinary(t),
		Name: name, Election: el, Subcommand: "run", Args: append(args, g.childArgs...)})
	r := &replica{Member: m, proxy: proxy}
	g.replicas[name] = r
	return r
}

// interval is one child's life as its lines show it.
type interval struct {
	token      int64
	identity   string
	pid        int
	start, end int64 // CLOCK_BOOTTIME ns
}

// intervals reads the shared file: the children's intervals by start, and
// the ALIVE lines (a child that found an earlier one still running).
func (g *group) intervals() ([]interval, []string) {
	f, err := os.Open(g.file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		g.t.Fatal(err)
	}
	defer f.Close()
	byPid := map[int]*interval{}
	var alive []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] == "ALIVE" {
			alive = append(alive, sc.Text())
			continue
		}
		if len(fields) != 5 {
			continue // a line cut short by SIGKILL
		}
		token, err1 := strconv.ParseInt(fields[0], 10, 64)
		pid, err2 := strconv.Atoi(fields[2])
		start, err3 := strconv.ParseInt(fields[3], 10, 64)
		now, err4 := strconv.ParseInt(fields[4], 10, 64)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil {
			continue
		}
		iv := byPid[pid]
		if iv == nil {
			iv = &interval{token: token, identity: fields[1], pid: pid, start: start}
			byPid[pid] = iv
		}
		iv.end = max(iv.end, now)
	}
	var out []interval
	for _, iv := range byPid {
		out = append(out, *iv)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	return out, alive
}

// waitChild waits until more than `seen` children have started and returns
// the newest.
func (g *group) waitChild(seen int, timeout time.Duration) interval {
	g.t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if ivs, _ := g.intervals(); len(ivs) > seen {
			return ivs[len(ivs)-1]
		}
	}
	g.t.Fatalf("no child number %d within %v", seen+1, timeout)
	return interval{}
}

// waitRunning waits until some child has written a line in the last 100ms.
func (g *group) waitRunning(timeout time.Duration) interval {
	g.t.Helper()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if ivs, _ := g.intervals(); len(ivs) > 0 && proc.Boottime()-ivs[len(ivs)-1].end < int64(100*time.Millisecond) {
			return ivs[len(ivs)-1]
		}
	}
	g.t.Fatalf("no child running within %v", timeout)
	return interval{}
}

// check fails the test if two intervals overlap, a token shrinks, a new
// holder's token does not grow, or a child found an earlier one alive.
func (g *group) check() []interval {
	g.t.Helper()
	ivs, alive := g.intervals()
	for _, a := range alive {
		g.t.Errorf("a child started while an earlier one was alive: %s", a)
	}
	for i := 1; i < len(ivs); i++ {
		prev, cur := ivs[i-1], ivs[i]
		if cur.start <= prev.end {
			g.t.Errorf("children overlap by %v: %+v and %+v", time.Duration(prev.end-cur.start), prev, cur)
		}
		if cur.token < prev.token || (cur.identity != prev.identity && cur.token <= prev.token) {
			g.t.Errorf("token did not grow: %+v then %+v", prev, cur)
		}
	}
	return ivs
}

// gaps collects the time from one child's last line to the next child's
// first, per kind of handover.
type gaps map[string][]time.Duration

func (gs gaps) add(kind string, prev, next interval) {
	gs[kind] = append(gs[kind], time.Duration(next.start-prev.end))
}

func (gs gaps) report(t *testing.T) {
	for kind, ds := range gs {
		sorted := append([]time.Duration{}, ds...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		t.Logf("gap %s: n=%d median=%v max=%v all=%v", kind, len(sorted),
			sorted[len(sorted)/2].Round(time.Millisecond), sorted[len(sorted)-1].Round(time.Millisecond), ds)
	}
}

// TestTwoReplicasHandOverOnSIGTERMAndKill: graceful handovers and crashes of
// the leader's baton. On SIGTERM the child stops first and the release lets
// the other replica's child start at once; after kill -9 the child dies
// with its baton and the next starts once the Lease has expired.
func TestTwoReplicasHandOverOnSIGTERMAndKill(t *testing.T) {
	g := newGroup(t, []string{"--stop-grace=" + stopGrace.String(), "--restart=always"}, nil)
	g.start()
	g.start()
	cur := g.waitChild(0, 20*time.Second)
	measured := gaps{}
	faults := []string{"SIGTERM", "kill -9", "SIGTERM", "kill -9", "SIGTERM", "kill -9", "SIGTERM", "SIGTERM"}
	for round, fault := range faults {
		leader := g.replicas[cur.identity]
		time.Sleep(200 * time.Millisecond) // let the child run a while
		switch fault {
		case "SIGTERM":
			leader.Signal(syscall.SIGTERM)
			sidecars.CheckExitAfterSIGTERM(t, leader.Member)
		case "kill -9":
			killed := time.Now()
			leader.Kill()
			for proc.Alive(cur.pid) && time.Since(killed) < 2*time.Second {
				time.Sleep(time.Millisecond)
			}
			if proc.Alive(cur.pid) {
				t.Fatalf("round %d: the child %d outlived its kill -9'd baton by 2s", round, cur.pid)
			}
			t.Logf("round %d: the child of the kill -9'd baton was gone %v after the kill", round,
				time.Since(killed).Round(time.Millisecond))
		}
		delete(g.replicas, leader.Name)
		next := g.waitChild(round+1, 15*time.Second)
		ivs := g.check()
		measured.add(fault, ivs[len(ivs)-2], next)
		if next.identity == cur.identity {
			t.Fatalf("round %d (%s): %s's child started again", round, fault, cur.identity)
		}
		cur = next
		g.start() // keep two replicas
	}
	g.check()
	measured.report(t)
	// A graceful handover needs no expiry: well under a lease duration.
	for _, d := range measured["SIGTERM"] {
		if d > time.Second {
			t.Errorf("graceful handover gap %v, want < 1s", d)
		}
	}
}

// TestThreeReplicasUnderPauseAndPartition: the leader's baton paused
// (SIGSTOP), its API-server link black-holed, and the API server restarted.
// The watchdog ends the child of the paused baton; the partitioned one stops
// its child when its validity runs low; nobody's child runs past its term.
func TestThreeReplicasUnderPauseAndPartition(t *testing.T) {
	g := newGroup(t, []string{"--stop-grace=" + stopGrace.String(), "--restart=always"}, nil)
	for i := 0; i < 3; i++ {
		g.start()
	}
	cur := g.waitChild(0, 20*time.Second)
	measured := gaps{}
	for _, fault := range []string{"SIGSTOP", "black hole", "SIGSTOP", "black hole"} {
		seen, _ := g.intervals()
		leader := g.replicas[cur.identity]
		time.Sleep(200 * time.Millisecond)
		switch fault {
		case "SIGSTOP":
			leader.Signal(syscall.SIGSTOP)
		case "black hole":
			leader.proxy.BlackHole()
		}
		next := g.waitChild(len(seen), 15*time.Second)
		switch fault {
		case "SIGSTOP":
			leader.Signal(syscall.SIGCONT)
		case "black hole":
			leader.proxy.Forward()
		}
		ivs := g.check()
		measured.add(fault, ivs[len(ivs)-2], next)
		if next.identity == cur.identity {
			t.Fatalf("%s: the faulted replica %s ran the next child too", fault, cur.identity)
		}
		cur = next
	}
	for i := 0; i < 2; i++ {
		if err := cp.RestartAPIServer(); err != nil {
			t.Fatal(err)
		}
		cur = g.waitRunning(20 * time.Second)
		g.check()
	}
	g.check()
	measured.report(t)
}

// TestChildIgnoringTheStopSignalIsKilledAtTheGrace: SIGTERM to baton sends
// SIGTERM to the child, which ignores it; --stop-grace later baton SIGKILLs
// its process group, releases and exits 0.
func TestChildIgnoringTheStopSignalIsKilledAtTheGrace(t *testing.T) {
	g := newGroup(t, []string{"--stop-grace=" + stopGrace.String()}, []string{"--ignore-term"})
	r := g.start()
	child := g.waitChild(0, 20*time.Second)
	time.Sleep(100 * time.Millisecond)
	signaled := proc.Boottime()
	r.Signal(syscall.SIGTERM)
	sidecars.CheckExitAfterSIGTERM(t, r.Member)
	ivs := g.check()
	if len(ivs) != 1 {
		t.Fatalf("%d children, want 1", len(ivs))
	}
	ran := time.Duration(ivs[0].end - signaled)
	t.Logf("the child ran %v after the stop signal (grace %v)", ran, stopGrace)
	if ran < stopGrace-50*time.Millisecond || ran > stopGrace+300*time.Millisecond {
		t.Errorf("the child ran %v after the stop signal, want about --stop-grace=%v", ran, stopGrace)
	}
	if !strings.Contains(r.Log(), "event=child_killed") {
		t.Errorf("no event=child_killed in baton's log")
	}
	if proc.Alive(child.pid) {
		t.Errorf("child %d still runs after baton exited", child.pid)
	}
}

// TestFailedChildIsRunAgainWithOnFailure: a child exiting 3 is run again in
// the same term, one at a time.
func TestFailedChildIsRunAgainWithOnFailure(t *testing.T) {
	g := newGroup(t, []string{"--stop-grace=" + stopGrace.String(), "--restart=on-failure"},
		[]string{"--exit-after=100ms", "--exit-code=3"})
	r := g.start()
	g.waitChild(2, 20*time.Second)
	ivs := g.check()
	for _, iv := range ivs {
		if iv.token != ivs[0].token || iv.identity != r.Name {
			t.Errorf("restarted child %+v, want token %d from %s", iv, ivs[0].token, r.Name)
		}
	}
	if r.Exited() {
		t.Errorf("baton exited; --restart=on-failure keeps running the child")
	}
}

// TestFailedChildWithRestartNeverEndsBatonWithItsCode: with --restart=never
// the leader's baton releases and exits with the child's code, and the other
// replica's child starts without waiting for the Lease to expire.
func TestFailedChildWithRestartNeverEndsBatonWithItsCode(t *testing.T) {
	g := newGroup(t, []string{"--stop-grace=" + stopGrace.String(), "--restart=never"},
		[]string{"--exit-after=300ms", "--exit-code=3"})
	g.start()
	g.start()
	first := g.waitChild(0, 20*time.Second)
	leader := g.replicas[first.identity]
	select {
	case <-leader.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("%s still running 5s after its child exited", leader.Name)
	}
	if code := leader.ExitCode(); code != 3 {
		t.Errorf("%s exited %d, want the child's 3", leader.Name, code)
	}
	second := g.waitChild(1, 5*time.Second)
	g.check()
	if gap := time.Duration(second.start - first.end); gap > time.Second {
		t.Errorf("the next replica's child started %v after the first ended, want < 1s (released)", gap)
	}
	if second.identity == first.identity {
		t.Errorf("the second child is %s's again", second.identity)
	}
}
