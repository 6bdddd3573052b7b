// Command chaos is baton's fault harness (bench/chaos runs it): real baton
// sidecars, optionally beside client-go LeaderElectors, on one Lease of the
// real control plane, every surface an application can ask sampled at
// >= 100 Hz, faults injected round after round, and the safety properties
// of docs/design.md (P1 one leader, P2 validity, P3 tokens) checked exactly
// over every recorded answer. See bench/README.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"baton/tests/internal/cptest"
	"baton/tests/internal/sidecars"
)

// The matrix: configurations, and how many rounds of which fault each runs
// in the short profile. The long profile runs longFactor times as many.
var (
	watchRole   = []string{"get", "create", "update", "watch"}
	minimalRole = []string{"get", "create", "update"}

	configs = []groupConfig{
		// Two groups: its plan has twice the rounds of any other.
		{Name: "watch", Verbs: watchRole, Baton: 3, Shards: 2},
		// A shutdown grace shorter than the promises the anonymous poller
		// asks for in AnonLong rounds: a SIGTERM then ends without a
		// release, and the Lease must expire. In AnonBounded rounds the
		// poller's promises (200ms) end within it, and the Lease is released.
		{Name: "nowatch", Verbs: minimalRole, Baton: 3, Args: []string{"--shutdown-grace=300ms", "--max-unnamed-valid-for=200ms"}},
		// baton's default durations and flags, as deployed: the handovers an
		// application polling GET /leader without client_id waits for. In
		// AnonBounded rounds the poller's promises (the default 1s bound) hold
		// a SIGTERM up for about 1s; in AnonLong rounds (10s asked) up to the
		// renew deadline, within the default shutdown grace (renew deadline
		// + 1s), so the Lease is still released. Long profile only: beside
		// the other groups on a 2-core CI machine, three more members
		// sampled at ~120 Hz for its long rounds starved the API server
		// (a restart of it was not ready within a minute).
		{Name: "defaults", Verbs: watchRole, Baton: 3, Durations: sidecars.Defaults, LongOnly: true},
		{Name: "mixed", Verbs: watchRole, Baton: 2, ClientGo: 2}, // with --mixed
		// A rolling upgrade and its rollback, over and over: each member
		// alternates between this build and the previous release at every
		// restart. With --previous.
		{Name: "release", Verbs: watchRole, Baton: 3, Previous: true},
	}

	shortPlan = map[string][]planned{
		"watch": {
			{"kill9", 3}, {"sigterm", 3}, {"sigterm-anon", 2}, {"resign-grpc", 3}, {"resign-http", 3},
			{"sigstop", 3}, {"blackhole", 3}, {"latency", 2}, {"apiserver-restart", 2}, {"delete", 3},
			{"edit-holder", 3}, {"edit-duration", 2}, {"edit-annotations", 3}, {"conflicts", 3},
			{"token-rotation", 3}, {"reapply-cut-off", 2}, {"edit-duration-new-member", 2},
			{"lost-replies", 2}, {"watch-stall", 2}, {"acks", 2}, {"clock-step", 2},
		},
		"nowatch": {
			{"delete", 4}, {"kill9", 3}, {"sigterm", 3}, {"sigterm-anon", 2}, {"resign-grpc", 3},
			{"sigstop", 2}, {"blackhole", 3}, {"edit-holder", 2}, {"reapply-cut-off", 2},
			{"lost-replies", 2}, {"clock-step", 1},
		},
		"defaults": {{"sigterm-anon", 2}, {"sigterm", 1}, {"resign-http", 1}},
		"mixed": {
			{"kill9", 4}, {"sigterm", 4}, {"sigstop", 2}, {"blackhole", 2}, {"apiserver-restart", 1},
			{"lost-replies", 2}, {"latency", 2}, {"clock-step", 1},
		},
		// The classes docs/design.md claims for groups with an older baton:
		// those of "mixed", and the graceful handovers both versions have.
		"release": {
			{"kill9", 3}, {"sigterm", 2}, {"resign-http", 2}, {"resign-grpc", 1}, {"sigstop", 1},
			{"blackhole", 1}, {"lost-replies", 1}, {"latency", 1},
		},
	}
)

const longFactor = 17

type planned struct {
	fault  string
	rounds int
}

// horizon is how far back a round's check looks, in a group at durations d,
// for answers that can bear on findings inside the round: longer than any
// promise (at most one renew deadline) or segment gap.
func horizon(d sidecars.Durations) time.Duration { return max(10*time.Second, 2*d.Renew) }

// row is one line of the table: one fault in one configuration.
type row struct {
	fault     *fault
	config    string
	timing    sidecars.Durations // the configuration's
	rounds    int
	overlaps  int
	broken    int
	tokensOK  int
	tokensBad int
	stalls    int // rounds without a stable leader afterwards, or whose fault failed
	// Fenced writes begun in the row's rounds (see writers.go): accepted,
	// stale ones the fence refused, stale ones it accepted (fencecheck's
	// term-order and fence-order findings) and fencecheck's other findings.
	writes, staleRefused, staleAccepted, fenceOther int
	handovers                                       []time.Duration
	leftOut                                         []string  // handovers not in handovers: rounds another group's Shared fault disturbed
	rates                                           []float64 // per round: median answers per second of a polled surface
}

func (r *row) name() string { return r.fault.Name + " [" + r.config + "]" }

func (r *row) failed() bool {
	return r.overlaps > 0 || r.broken > 0 || r.tokensBad > 0 || r.stalls > 0 || r.staleAccepted > 0 || r.fenceOther > 0
}

func main() {
	profile := flag.String("profile", "short", "short (>= 60 rounds, < 5 min) or long (>= 1,000 rounds)")
	rounds := flag.Int("rounds", 0, "rounds of each fault in each configuration (default: the profile's)")
	only := flag.String("faults", "", "comma-separated fault names to run (default: all)")
	mixed := flag.Bool("mixed", false, "also run the mixed group: baton sidecars and client-go LeaderElectors on one Lease")
	previous := flag.String("previous", "", "the previous release's baton binary: also run the release group, whose members alternate between it and this build at every restart")
	keep := flag.Bool("keep-answers", false, "keep every round's answers (not only failed rounds'), and the member logs")
	again := flag.Bool("recheck", false, "run no faults: check the kept rounds (TSV files) given as arguments again")
	writers := flag.Bool("writers", true, "an application beside every baton member writes into one PostgreSQL through the fence")
	bypass := flag.Bool("bypass-fence", false, "the applications write without the fence: stale writes land, and the run must fail")
	flag.Parse()
	if *again {
		os.Exit(min(recheck(flag.Args()), 1))
	}
	os.Exit(run(runOptions{profile: *profile, rounds: *rounds, only: *only, mixed: *mixed, previous: *previous,
		keepAnswers: *keep, writes: writeOptions{enabled: *writers, bypass: *bypass}}))
}

// runOptions are the command line's choices for a run.
type runOptions struct {
	profile     string
	rounds      int    // of each planned fault; 0: the profile's
	only        string // comma-separated faults; "": all
	mixed       bool   // run the mixed group
	previous    string // the previous release's binary; "": no release group
	keepAnswers bool
	writes      writeOptions
}

// writeOptions says whether the applications write, and how.
type writeOptions struct{ enabled, bypass bool }

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "chaos %s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(o runOptions) int {
	factor := 1
	limit := 8 * time.Minute
	switch o.profile {
	case "short":
	case "long":
		factor, limit = longFactor, 6*time.Hour
	default:
		logf("unknown --profile %q (short or long)", o.profile)
		return 2
	}
	var want []string
	if o.only != "" {
		want = strings.Split(o.only, ",")
		for _, f := range want {
			if faultNamed(f) == nil {
				logf("unknown fault %q", f)
				return 2
			}
		}
	}
	// The clock-step fault needs CAP_SYS_TIME; without it the run goes on
	// without that fault and says so.
	canStep := wall.CanStep()
	if canStep != nil {
		logf("clock-step left out: setting the wall clock: %v", canStep)
	}
	if err := selfCheck(); err != nil {
		logf("checker self-check failed: %v", err)
		return 1
	}

	h := &harness{log: logf, keepAnswers: o.keepAnswers}
	var err error
	if h.baton, err = sidecars.BatonBinaryPath(); err != nil {
		logf("%v", err)
		return 1
	}
	if o.mixed {
		if h.goelector, err = sidecars.BuildGoElector(); err != nil {
			logf("%v", err)
			return 1
		}
	}
	if o.previous != "" {
		if h.previous, err = filepath.Abs(o.previous); err != nil {
			logf("%v", err)
			return 1
		}
		if _, err = os.Stat(h.previous); err != nil {
			logf("--previous: %v", err)
			return 2
		}
	}
	if h.logDir, err = os.MkdirTemp("", "baton-chaos-"); err != nil {
		logf("%v", err)
		return 1
	}
	if o.writes.enabled {
		if h.fences, err = startFenceStore(h.logDir, o.writes.bypass); err != nil {
			logf("%v", err)
			os.RemoveAll(h.logDir)
			return 1
		}
	}
	// Stops the applications' PostgreSQL, which lives in logDir: before
	// logDir is removed (once its data is gone it cannot be stopped).
	closeStore := func() {
		if h.fences != nil {
			h.fences.Close()
		}
	}
	cp, stopCP, err := cptest.Acquire(os.Stderr)
	if err != nil {
		logf("%v", err)
		return 1
	}
	h.cp = cp
	restCfg, err := clientcmd.BuildConfigFromFlags("", cp.Kubeconfig())
	if err == nil {
		h.admin, err = kubernetes.NewForConfig(restCfg)
	}
	if err != nil {
		stopCP()
		logf("admin client: %v", err)
		return 1
	}

	// Everything below ends by itself; these only make an interrupted or
	// overrunning run end at once. Members die with this process (Pdeathsig)
	// and so does a control plane it started (owner pid).
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		select {
		case s := <-signals:
			logf("%v: stopping", s)
		case <-time.After(limit):
			logf("the %s profile overran %v: stopping", o.profile, limit)
		}
		if err := wall.Restore(); err != nil {
			logf("%v", err)
		}
		stopCP()
		closeStore()
		if h.failed.Load() == 0 {
			os.RemoveAll(h.logDir)
		}
		os.Exit(1)
	}()

	start := time.Now()
	var rows []*row
	var groups sync.WaitGroup
	var groupErr atomic.Value
	for _, cfg := range configs {
		if (cfg.Name == "mixed" && !o.mixed) || (cfg.Previous && h.previous == "") || (cfg.LongOnly && factor == 1) {
			continue
		}
		var plan []*row
		for _, p := range shortPlan[cfg.Name] {
			if (len(want) > 0 && !slices.Contains(want, p.fault)) || (p.fault == "clock-step" && canStep != nil) {
				continue
			}
			n := p.rounds * factor
			if o.rounds > 0 {
				n = o.rounds
			}
			plan = append(plan, &row{fault: faultNamed(p.fault), config: cfg.Name, timing: cfg.timing(), rounds: n})
		}
		if len(plan) == 0 {
			continue
		}
		rows = append(rows, plan...)
		cfgs, plans := shard(cfg, plan)
		for k, cfg := range cfgs {
			groups.Add(1)
			go func() {
				defer groups.Done()
				if err := runGroup(h, cfg, plans[k]); err != nil {
					logf("%s: %v", cfg.Name, err)
					groupErr.Store(err)
				}
			}()
		}
	}
	groups.Wait()
	if groupErr.Load() != nil {
		stopCP()
		closeStore()
		return 1
	}
	stopCP()
	if h.fences != nil {
		ok := checkFences(h)
		closeStore()
		if !ok {
			return 1
		}
	}
	if h.failed.Load() > 0 || o.keepAnswers {
		logf("member logs and recorded answers: %s", h.logDir)
	} else {
		os.RemoveAll(h.logDir)
	}
	total := 0
	for _, r := range rows {
		total += r.rounds
	}
	logf("%d rounds in %v", total, time.Since(start).Round(time.Second))
	return report(rows, h.fences != nil)
}

// runGroup runs plan's rounds in one group, interleaving the faults so that
// each follows many different others.
func runGroup(h *harness, cfg groupConfig, plan []*row) error {
	logf("%s: starting %d baton and %d client-go members (Role: %s)", cfg.Name, cfg.Baton, cfg.ClientGo,
		strings.Join(cfg.Verbs, ","))
	g, err := newGroup(h, cfg)
	if err != nil {
		return err
	}
	defer g.Close()
	var order []*row
	left := map[*row]int{}
	for _, r := range plan {
		left[r] = r.rounds
	}
	for more := true; more; {
		more = false
		for _, r := range plan {
			if left[r] > 0 {
				order = append(order, r)
				left[r]--
				more = true
			}
		}
	}
	// The first round's check covers the start-up too.
	windowStart := Now()
	g.injected = windowStart
	started := time.Now()
	if _, err := g.waitStable(); err != nil {
		return fmt.Errorf("at start: %v", err)
	}
	logf("%s: first leader after %v (%v)", cfg.Name, time.Since(started).Round(100*time.Millisecond), g.timing)
	ran := map[*row]int{}
	for i, r := range order {
		g.spans = append(g.spans, roundSpan{row: r, from: windowStart})
		windowStart = g.runRound(r, i, ran[r], windowStart)
		ran[r]++
	}
	return nil
}

// runRound runs round i of the group, the nth of r's fault, and checks
// everything recorded since from; it returns up to when it checked, where the
// next round's check begins.
func (g *group) runRound(r *row, i, nth int, from Instant) (to Instant) {
	f := r.fault
	fault, leaderName, stall, restarted := g.inject(f, i, nth)
	// Another group's Shared fault since the previous round's injection
	// (in its wait below, its check, or this round) may have disturbed this
	// round's handover.
	injected := Now()
	other := g.h.sharedFaultIn(g.cfg.Name, g.injected, injected)
	g.injected = injected
	if f.Anon {
		// The anonymous promises the poller got from the new leader lapse
		// before the next round, whose handover they would otherwise hold
		// up. Outside the round's hold on h.rounds: a shared fault of
		// another group need not wait for this.
		time.Sleep(g.timing.Renew)
	}
	to = Now()
	time.Sleep(250 * time.Millisecond) // answers produced before `to` arrive
	answers, acks := g.rec.Snapshot()
	res := Check(answers, acks, from, to)
	g.tenures.add(answers, acks)
	g.rec.Prune(to.Add(-horizon(g.timing)))

	line := fmt.Sprintf("%s round %d: %s", r.name(), i+1, leaderName)
	if f.Anon {
		line += ", " + anonPoll(nth).String()
	}
	if restarted {
		line += ", a follower restarted mid-fault"
	}
	if fault != 0 {
		if handover, ok := Handover(answers, fault); ok {
			line += fmt.Sprintf(", handover %v", handover.Round(time.Millisecond))
			if other != "" {
				line += " (left out of the table: " + other + " in the round)"
				r.leftOut = append(r.leftOut, fmt.Sprintf("%s round %d: %v (%s)", r.name(), i+1,
					handover.Round(time.Millisecond), other))
			} else {
				r.handovers = append(r.handovers, handover)
			}
		}
	}
	rate := sampleRate(answers, from, to)
	r.rates = append(r.rates, rate)
	line += fmt.Sprintf(", %d answers, %.0f Hz per surface", countSince(answers, from), rate)
	failed := r.add(res, stall)
	if (failed && g.h.failed.Add(1) <= maxDumps) || g.h.keepAnswers {
		dump := filepath.Join(g.h.logDir, fmt.Sprintf("%s-round%d-%s.tsv", g.cfg.Name, i+1, f.Name))
		if err := dumpRound(dump, answers, acks, fault); err != nil {
			logf("  writing %s: %v", dump, err)
		}
		line += " (answers in " + dump + ")"
	}
	if !failed {
		logf("%s, ok", line)
		return to
	}
	logf("%s, FAILED", line)
	if stall != "" {
		logf("  no recovery: %s", stall)
	}
	logFindings(res, fault)
	return to
}

// inject waits for a stable leader, injects f (round i of the group, the
// nth of f) and waits for a stable leader again. Every second round of a
// fault, a follower is replaced by a new process while the fault is in place,
// so members with no history of the term decide in the middle of it. It
// returns when the fault began (0 if it did not), the leader it hit, why the
// round stalled, if it did, and whether a follower restarted.
func (g *group) inject(f *fault, i, nth int) (fault Instant, leaderName, stall string, restarted bool) {
	if f.Shared {
		g.h.rounds.Lock()
		defer g.h.rounds.Unlock()
	} else {
		g.h.rounds.RLock()
		defer g.h.rounds.RUnlock()
	}
	g.ackVia.Store(int32(f.AckVia))
	if alternate(nth) && f.AckVia == AckGRPC && !f.Anon {
		g.ackVia.Store(int32(AckHTTP)) // both ways of acknowledging, in turn
	}
	if f.Disorderly {
		g.disorder.Store(true)
		defer g.disorder.Store(false)
	}
	if f.Anon {
		g.anon.Store(int32(anonPoll(nth)))
		defer g.anon.Store(int32(AnonOff)) // runRound waits for its promises to lapse
	}
	leaderName = "no leader"
	leader, err := g.waitStable()
	if err == nil {
		leaderName = "leader " + leader.member.Name
		if leader.kind == sidecars.ClientGo && !f.ClientGo {
			err = fmt.Errorf("the leader is a client-go elector; %s needs a baton leader", f.Name)
		}
	}
	if err == nil {
		if f.Anon {
			time.Sleep(300 * time.Millisecond) // anonymous promises outstanding
		}
		var newMember <-chan error
		if restarted = nth%2 == 1 && !f.NewMember; restarted {
			newMember = g.restartFollower(leader, time.Duration(1+nth%4)*g.timing.Retry)
		}
		if f.Shared {
			defer g.h.sharedRound(g.cfg.Name, f.Name+" ["+g.cfg.Name+"]")() // before the unlock
		}
		fault, err = f.Inject(g, leader, i)
		if newMember != nil {
			if rerr := <-newMember; err == nil {
				err = rerr
			}
		}
		if err == nil {
			_, err = g.waitStable()
		}
	}
	if err != nil {
		stall = err.Error()
	}
	return fault, leaderName, stall, restarted
}

// add counts one round's findings into r and says whether the round failed.
func (r *row) add(res Result, stall string) bool {
	r.overlaps += len(res.Overlaps)
	r.broken += len(res.Broken)
	bad := 0
	for _, t := range res.Transitions {
		if t.OK() {
			r.tokensOK++
		} else {
			bad++
		}
	}
	r.tokensBad += bad
	if stall != "" {
		r.stalls++
	}
	return len(res.Overlaps)+len(res.Broken)+bad > 0 || stall != ""
}

// logFindings prints what a failed round found.
func logFindings(res Result, fault Instant) {
	for k, o := range res.Overlaps {
		if k == 3 {
			logf("  … %d overlaps in all", len(res.Overlaps))
			break
		}
		length := "at one instant"
		if o.Length > 0 {
			length = "for " + roundMs(o.Length)
		}
		logf("  overlap: %s and %s both leader %v after the fault, %s", o.A, o.B,
			o.At.Sub(fault).Round(time.Millisecond), length)
	}
	if len(res.Broken) > 0 {
		worst := res.Broken[0]
		for _, b := range res.Broken {
			if b.Excess > worst.Excess {
				worst = b
			}
		}
		logf("  broken promises: %d; worst: %s's %s answer (validFor %v) broken by %s %v before it lapsed",
			len(res.Broken), worst.Promise.Member, worst.Promise.Surface, worst.Promise.ValidFor,
			worst.By, worst.Excess.Round(time.Millisecond))
	}
	for _, t := range res.Transitions {
		if !t.OK() {
			logf("  token order: %s, then %s", t.Prev, t.Next)
		}
	}
}

func countSince(answers []Answer, from Instant) int {
	n := 0
	for i := range answers {
		if answers[i].Recv >= from {
			n++
		}
	}
	return n
}

// sampleRate is the median, over every member's polled surfaces, of how
// often that surface answered in [from, to).
func sampleRate(answers []Answer, from, to Instant) float64 {
	type key struct {
		member  string
		surface Surface
	}
	type span struct {
		n           int
		first, last Instant
	}
	spans := map[key]*span{}
	for i := range answers {
		a := &answers[i]
		if a.Recv < from || a.Recv >= to || a.Surface == Watch || a.Surface == AnonHTTP ||
			a.Surface == SharedHTTP || a.Surface == OneOffHTTP {
			continue
		}
		k := key{a.Member, a.Surface}
		if s := spans[k]; s == nil {
			spans[k] = &span{1, a.Recv, a.Recv}
		} else {
			s.n++
			s.first, s.last = min(s.first, a.Recv), max(s.last, a.Recv)
		}
	}
	var rates []float64
	for _, s := range spans {
		if s.n >= 10 {
			rates = append(rates, float64(s.n-1)/s.last.Sub(s.first).Seconds())
		}
	}
	if len(rates) == 0 {
		return 0
	}
	sort.Float64s(rates)
	return rates[len(rates)/2]
}

// maxDumps is how many failed rounds' answers a run keeps.
const maxDumps = 10

// dumpRound writes answers and acks as tab-separated lines, times in
// milliseconds relative to the fault, for reading a failed round.
func dumpRound(path string, answers []Answer, acks []Ack, fault Instant) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	rel := func(t Instant) string {
		if t == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", float64(t-fault)/1e6)
	}
	fmt.Fprintln(f, "member\tsurface\tclient\tsend_ms\trecv_ms\tleader\tstepping_down\ttoken\trevision\tvalid_for\tvalid_until_ms")
	for _, a := range answers {
		fmt.Fprintf(f, "%s\t%s\t%s\t%s\t%s\t%v\t%v\t%d\t%d\t%v\t%s\n", a.Member, a.Surface, a.Client,
			rel(a.Send), rel(a.Recv), a.IsLeader, a.SteppingDown, a.Token, a.Revision, a.ValidFor, rel(a.ValidUntil))
	}
	for _, a := range acks {
		fmt.Fprintf(f, "%s\tack\t%s\t%s\t%s\t%v\t-\t%d\t-\t-\t-\n", a.Member, a.Client, rel(a.At), rel(a.Done),
			a.Acknowledged, a.Token)
	}
	return f.Close()
}

// selfCheck makes sure the checker counts what it must before any result
// of it is trusted: a synthetic pair of overlapping leaders, and a promise
// broken by the next leader.
func selfCheck() error {
	var answers []Answer
	for t := Instant(0); t < Instant(time.Second); t += Instant(10 * time.Millisecond) {
		answers = append(answers,
			Answer{Member: "x", Surface: HTTP, Send: t, Recv: t + 1, IsLeader: true, Token: 1,
				ValidFor: 2 * time.Second, ValidUntil: t.Add(2 * time.Second)},
			Answer{Member: "y", Surface: Health, Send: t + 2, Recv: t + 3, IsLeader: t > Instant(500*time.Millisecond)})
	}
	r := Check(answers, nil, 0, Instant(time.Hour))
	if len(r.Overlaps) != 1 || len(r.Broken) == 0 {
		return fmt.Errorf("synthetic overlap: %d overlaps (want 1), %d broken promises (want > 0)",
			len(r.Overlaps), len(r.Broken))
	}
	return nil
}

// report prints the table and the final line; it returns the exit code.
func report(rows []*row, writers bool) int {
	w := os.Stdout
	lowest := 0.0
	for i, r := range rows {
		for j, rate := range r.rates {
			if (i == 0 && j == 0) || rate < lowest {
				lowest = rate
			}
		}
	}
	fmt.Fprintf(w, "\n%severy surface asked every %v (lowest round median: %.0f Hz)\n",
		durationsHeader(rows), samplePeriod, lowest)
	fmt.Fprintf(w, "%-34s %6s %8s %8s %10s %9s %9s %9s %6s %9s %9s\n", "fault [config]", "rounds", "overlaps",
		"broken", "tokens", "hand p50", "hand p99", "hand max", "stalls", "stale acc", "stale ref")
	passed, failed := 0, 0
	for _, r := range rows {
		p50, p99, pmax := "-", "-", "-"
		if len(r.handovers) > 0 {
			p50, p99, pmax = roundMs(pct(r.handovers, 50)), roundMs(pct(r.handovers, 99)), roundMs(pct(r.handovers, 100))
		}
		verdict := "ok"
		if r.failed() {
			verdict = "FAIL"
			failed++
		} else {
			passed++
		}
		staleAcc, staleRef := "-", "-"
		if writers {
			staleAcc, staleRef = strconv.Itoa(r.staleAccepted+r.fenceOther), strconv.Itoa(r.staleRefused)
		}
		fmt.Fprintf(w, "%-34s %6d %8d %8d %10s %9s %9s %9s %6d %9s %9s  %s\n", r.name(), r.rounds, r.overlaps,
			r.broken, fmt.Sprintf("%d/%d", r.tokensOK, r.tokensBad), p50, p99, pmax, r.stalls, staleAcc, staleRef, verdict)
	}
	fmt.Fprintln(w, "tokens: term changes with token (and revision) increasing / not; hand: fault to the next leader's first answer")
	if writers {
		writes, refused := 0, 0
		for _, r := range rows {
			writes, refused = writes+r.writes, refused+r.staleRefused
		}
		fmt.Fprintf(w, "stale acc/ref: fenced writes into PostgreSQL of a term older than one the store had accepted, accepted (fencecheck's findings) / refused by the fence; %d writes accepted, %d refused in all\n",
			writes, refused)
	}
	var leftOut []string
	for _, r := range rows {
		leftOut = append(leftOut, r.leftOut...)
	}
	if len(leftOut) > 0 {
		fmt.Fprintln(w, "hand left out where another group's shared fault fell in the round:")
		for _, l := range leftOut {
			fmt.Fprintf(w, "  %s\n", l)
		}
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return 1
	}
	return 0
}

// durationsHeader says at which durations the rows' groups ran: "lease …,
// renew deadline …, retry period …; " if all at the same, else one line of
// them per durations, naming the groups.
func durationsHeader(rows []*row) string {
	var order []sidecars.Durations
	groups := map[sidecars.Durations][]string{}
	for _, r := range rows {
		d := r.timing
		if _, seen := groups[d]; !seen {
			order = append(order, d)
		}
		if !slices.Contains(groups[d], r.config) {
			groups[d] = append(groups[d], r.config)
		}
	}
	if len(order) == 1 {
		return order[0].String() + "; "
	}
	header := ""
	for _, d := range order {
		header += fmt.Sprintf("%v: %s\n", d, strings.Join(groups[d], ", "))
	}
	return header
}

func roundMs(d time.Duration) string { return d.Round(time.Millisecond).String() }

// pct is the p-th percentile (nearest rank) of ds.
func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (p*len(s)+99)/100 - 1
	return s[max(i, 0)]
}
