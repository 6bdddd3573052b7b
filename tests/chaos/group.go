package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"baton/tests/internal/cptest"
	"baton/tests/internal/netfault"
	"baton/tests/internal/sidecars"
)

// harness is what every group shares.
type harness struct {
	cp          cptest.ControlPlane
	admin       *kubernetes.Clientset // the admin: third-party edits, deletes, tokens
	baton       string                // binaries
	goelector   string
	previous    string                           // the previous release's baton; "" if not given
	logDir      string                           // member logs, credentials, failed rounds' answers
	failed      atomic.Int32                     // rounds that failed; if any, logDir is kept
	keepAnswers bool                             // dump every round's answers, keep logDir
	log         func(format string, args ...any) // progress, to stderr
	fences      *fenceStore                      // the applications' store; nil: no writers
	groupsMu    sync.Mutex
	groups      []*group // every group started, for the fence check at the end
	// The groups run side by side; a round holds rounds shared, a Shared
	// fault's round holds it alone.
	rounds sync.RWMutex
	// Every Shared fault injected so far. Its aftermath can outlast its
	// round in another group (an API server restart takes longer than the
	// defaults' renew deadline), so the next round of every other group
	// leaves its handover out of the table.
	sharedMu sync.Mutex
	shared   []sharedFault
}

// sharedFault is a Shared fault's round: from the fault until the group that
// injected it had a stable leader again (until 0: not yet).
type sharedFault struct {
	group    string // the configuration that injected it
	what     string // fault [configuration]
	from, to Instant
}

// sharedRound records that group's Shared fault what begins now; the
// function it returns records that its round is over.
func (h *harness) sharedRound(group, what string) (over func()) {
	h.sharedMu.Lock()
	defer h.sharedMu.Unlock()
	h.shared = append(h.shared, sharedFault{group: group, what: what, from: Now()})
	i := len(h.shared) - 1
	return func() {
		h.sharedMu.Lock()
		defer h.sharedMu.Unlock()
		h.shared[i].to = Now()
	}
}

// sharedFaultIn names a Shared fault's round of a group other than group's
// that overlaps [from, to), or is "".
func (h *harness) sharedFaultIn(group string, from, to Instant) string {
	h.sharedMu.Lock()
	defer h.sharedMu.Unlock()
	for _, f := range h.shared {
		if f.group != group && f.from < to && (f.to == 0 || f.to > from) {
			return f.what
		}
	}
	return ""
}

// groupConfig is one configuration of the matrix: a Role, a membership and
// the durations its members campaign with.
type groupConfig struct {
	Name      string
	Verbs     []string // the Role's verbs on Leases
	Baton     int
	ClientGo  int
	Args      []string           // more flags for its baton members
	Durations sidecars.Durations // zero: sidecars.Short
	LongOnly  bool               // runs in the long profile only
	// Previous: every other process of a slot runs the previous release
	// (harness.previous), so the group goes through every mix of versions.
	Previous bool
	// Shards: its rows run in this many groups side by side (each with its
	// Lease and members, named Name-1, Name-2, ...), so that the longest
	// plan takes no longer than the others; the table is the same.
	Shards int
}

// shard deals plan's rows to cfg.Shards groups, each row whole, the most
// rounds first to the group with the fewest so far, and returns each
// group's configuration and rows. A cfg with no shards is one group.
func shard(cfg groupConfig, plan []*row) ([]groupConfig, [][]*row) {
	if cfg.Shards <= 1 {
		return []groupConfig{cfg}, [][]*row{plan}
	}
	rounds := make([]int, cfg.Shards)
	group := map[*row]int{}
	byRounds := slices.Clone(plan)
	slices.SortStableFunc(byRounds, func(a, b *row) int { return b.rounds - a.rounds })
	for _, r := range byRounds {
		k := slices.Index(rounds, slices.Min(rounds))
		group[r] = k
		rounds[k] += r.rounds
	}
	// Each group runs its rows in the plan's order.
	plans := make([][]*row, cfg.Shards)
	for _, r := range plan {
		plans[group[r]] = append(plans[group[r]], r)
	}
	cfgs := make([]groupConfig, cfg.Shards)
	for k := range cfgs {
		cfgs[k] = cfg
		cfgs[k].Name = fmt.Sprintf("%s-%d", cfg.Name, k+1)
	}
	return cfgs, plans
}

// timing is the durations c's members run on.
func (c groupConfig) timing() sidecars.Durations {
	return sidecars.Election{Durations: c.Durations}.Timing()
}

// stableWithin bounds how long a group at durations d may take to have one
// stable leader, at start or after a fault: twice lease + 2 retry periods +
// renew deadline, more than any wait of docs/design.md's (an expiry; a
// brand-new Lease's first leader, about 2 retry periods + one renew deadline,
// once also a lease duration more; a term that leads one renew deadline after
// its write), and never less than the 25 s the tight durations have always
// had. 58 s at the defaults.
func stableWithin(d sidecars.Durations) time.Duration {
	return max(25*time.Second, 2*(d.Lease+2*d.Retry+d.Renew))
}

// exitWithin bounds how long a member at durations d may take to exit after
// SIGTERM: twice the default --shutdown-grace (renew deadline + 1 s), once
// for the release and once for closing the servers; at least 15 s.
func exitWithin(d sidecars.Durations) time.Duration {
	return max(15*time.Second, 2*(d.Renew+time.Second))
}

// slot is one member's place in a group: its ServiceAccount, credentials and
// link to the API server outlive the processes that fill it, the way a Pod's
// do across container restarts.
type slot struct {
	index      int
	kind       sidecars.Kind
	sa         string
	tokenFile  string
	kubeconfig string // points at proxy and reads tokenFile
	proxy      *netfault.Proxy
	gen        int
	member     *sidecars.Member
	probe      *probe
	writer     *writer // the application beside a baton member (when the run has writers)
}

// group is members of one configuration campaigning for one Lease, sampled
// by their probes into one Recorder.
type group struct {
	h      *harness
	cfg    groupConfig
	ns     string
	lease  string
	slots  []*slot
	timing sidecars.Durations // cfg.timing()
	// injected is when the latest round's injection ended (its leader
	// stable again), or the group's rounds began.
	injected Instant
	rec      *Recorder
	ackVia   atomic.Int32 // AckVia for this round
	anon     atomic.Int32 // AnonPoll for this round
	disorder atomic.Bool  // this round's fault is Disorderly
	tenures  tenures      // every term seen lead, for the fence check
	spans    []roundSpan  // the rounds run so far, in order
}

func newGroup(h *harness, cfg groupConfig) (*group, error) {
	g := &group{h: h, cfg: cfg, lease: "app", timing: cfg.timing(), rec: &Recorder{}}
	ns, err := h.cp.CreateNamespace("chaos-" + cfg.Name)
	if err != nil {
		return nil, err
	}
	g.ns = ns
	h.groupsMu.Lock()
	h.groups = append(h.groups, g)
	h.groupsMu.Unlock()
	n := cfg.Baton + cfg.ClientGo
	var sas []string
	for i := 0; i < n; i++ {
		sas = append(sas, fmt.Sprintf("member-%d", i))
	}
	if err := h.cp.GrantLeasesTo(ns, sas, cfg.Verbs...); err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		kind := sidecars.Baton
		if i >= cfg.Baton {
			kind = sidecars.ClientGo
		}
		s, err := g.newSlot(i, kind, sas[i])
		if err != nil {
			return nil, err
		}
		if kind == sidecars.Baton && h.fences != nil {
			s.writer = newWriter(g, i)
		}
		g.slots = append(g.slots, s)
		if err := g.fill(s); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// newSlot writes the slot's credentials: a bound token of its
// ServiceAccount (scripts/controlplane token-kubeconfig) moved into a token
// file, and a kubeconfig that reads it and talks through the slot's proxy.
func (g *group) newSlot(i int, kind sidecars.Kind, sa string) (*slot, error) {
	dir := filepath.Join(g.h.logDir, g.ns)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	s := &slot{index: i, kind: kind, sa: sa, tokenFile: filepath.Join(dir, sa+".token"),
		kubeconfig: filepath.Join(dir, sa+".kubeconfig")}
	minted := filepath.Join(dir, sa+".minted.kubeconfig")
	if err := g.h.cp.WriteTokenKubeconfig(g.ns, sa, minted); err != nil {
		return nil, err
	}
	cfg, err := clientcmd.LoadFromFile(minted)
	if err != nil {
		return nil, err
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	server, err := url.Parse(cluster.Server)
	if err != nil {
		return nil, err
	}
	if s.proxy, err = netfault.NewProxy(server.Host); err != nil {
		return nil, err
	}
	if err := writeFileAtomically(s.tokenFile, []byte(user.Token)); err != nil {
		return nil, err
	}
	user.Token, user.TokenFile = "", s.tokenFile
	cluster.Server = "https://" + s.proxy.Addr()
	return s, clientcmd.WriteToFile(*cfg, s.kubeconfig)
}

func writeFileAtomically(path string, b []byte) error {
	tmp := path + ".new"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// fill starts a new process in s (a new identity: a restarted sidecar is a
// new holder) and its probe.
func (g *group) fill(s *slot) error {
	s.gen++
	el := sidecars.Election{Kubeconfig: s.kubeconfig, Namespace: g.ns, Lease: g.lease, Durations: g.timing}
	spec := sidecars.Spec{Kind: s.kind, Binary: g.h.baton,
		Name:     fmt.Sprintf("%s-%d.%d", g.cfg.Name, s.index, s.gen),
		Election: el,
		LogDir:   filepath.Join(g.h.logDir, g.ns), Args: g.cfg.Args}
	switch {
	case s.kind == sidecars.ClientGo:
		spec.Args = nil
		spec.Binary = g.h.goelector
		spec.Name = fmt.Sprintf("%s-go%d.%d", g.cfg.Name, s.index, s.gen)
	case g.cfg.Previous && (s.index+s.gen)%2 == 0:
		spec.Binary = g.h.previous
		spec.Name = fmt.Sprintf("%s-prev%d.%d", g.cfg.Name, s.index, s.gen)
	}
	m, err := sidecars.Start(spec)
	if err != nil {
		return err
	}
	p, err := startProbe(m, g.rec, &g.ackVia, &g.anon, &g.disorder)
	if err != nil {
		m.Kill()
		return err
	}
	s.member, s.probe = m, p
	if s.writer != nil {
		s.writer.run(p)
	}
	return nil
}

// replace waits (at most exitWithin, then kills it) for s's process to exit
// and fills s again, as a kubelet restarts a container.
func (g *group) replace(s *slot) error {
	select {
	case <-s.member.Done():
	case <-time.After(exitWithin(g.timing)):
		g.h.log("%s did not exit within %v; killing it", s.member.Name, exitWithin(g.timing))
		s.member.Kill()
	}
	s.probe.Stop()
	return g.fill(s)
}

// restartFollower replaces a member other than leader, after delay, by a
// new process with no history of the Lease, while a fault is in place; the
// channel yields the outcome. It touches no slot but that member's.
func (g *group) restartFollower(leader *slot, delay time.Duration) <-chan error {
	var s *slot
	for _, c := range g.slots {
		if c != leader {
			s = c // the last one: edit-duration-new-member replaces the first
		}
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(delay)
		s.member.Kill()
		done <- g.replace(s)
	}()
	return done
}

// Close stops every probe, application and process, closes the proxies,
// records the last terms and deletes the namespace.
func (g *group) Close() {
	for _, s := range g.slots {
		if s.member != nil {
			s.member.Kill()
			s.probe.Stop()
		}
		s.proxy.Close()
	}
	// Terms that began after the last round's check wrote too.
	g.tenures.add(g.rec.Snapshot())
	g.h.cp.DeleteNamespace(g.ns)
}

// freshness is how recent a member's latest answer must be for waitStable
// to count it.
const freshness = 300 * time.Millisecond

// waitStable waits (at most stableWithin the group's durations) until
// exactly one member answers leader, every member answers at all, and that
// holds for 200ms; it returns the leader's slot.
func (g *group) waitStable() (*slot, error) {
	timeout := stableWithin(g.timing)
	deadline := time.Now().Add(timeout)
	var candidate *slot
	streak := 0
	for time.Now().Before(deadline) {
		now := Now()
		var leaders []*slot
		fresh := true
		for _, s := range g.slots {
			a := s.probe.last.Load()
			if s.member.Exited() || a == nil || now.Sub(a.Recv) > freshness {
				fresh = false
				continue
			}
			if a.IsLeader {
				leaders = append(leaders, s)
			}
		}
		switch {
		case !fresh || len(leaders) != 1:
			streak = 0
		case leaders[0] == candidate:
			streak++
		default:
			candidate, streak = leaders[0], 1
		}
		if streak >= 5 {
			return candidate, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("no single stable leader within %v", timeout)
}

// awaitLeaderBesides waits until a member other than gone answers leader,
// for as long as waitStable would wait.
func (g *group) awaitLeaderBesides(gone *slot) error {
	timeout := stableWithin(g.timing)
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		for _, s := range g.slots {
			if a := s.probe.last.Load(); s != gone && a != nil && a.IsLeader && Now().Sub(a.Recv) <= freshness {
				return nil
			}
		}
	}
	return fmt.Errorf("no member besides %s led within %v", gone.member.Name, timeout)
}

// signal sends sig to s's process.
func (s *slot) signal(sig syscall.Signal) { s.member.Signal(sig) }

// requestContext bounds one request the harness makes (admin edits, Resign).
func requestContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}
