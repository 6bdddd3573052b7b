package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/proc"
	"baton/tests/internal/sidecars"
)

// The benchmarks here are run by bench/handover (BATON_BENCH=1); they print
// tables and assert nothing about time. Knobs: BATON_BENCH_ROUNDS (6),
// BATON_BENCH_PROFILES (defaults,tight), BATON_BENCH_WINDOW_SECONDS (30),
// BATON_BENCH_ROWS (every row; names as the table's last column prints
// them, comma-separated), BATON_BENCH_IDLE_SECONDS (0: members idle before
// each round's event, each baton sidecar from its own copy of the binary).

// benchProfile is one set of durations, given to baton and client-go alike.
type benchProfile struct {
	name      string
	durations sidecars.Durations
	// baton run's --stop-grace: with 200ms it must stay below the renew
	// deadline − 1.2 × the retry period.
	stopGrace time.Duration
}

var benchProfiles = []benchProfile{
	{"defaults", sidecars.Defaults, 5 * time.Second}, // baton's flag defaults (and client-go's usual ones)
	{"tight", sidecars.Short, 500 * time.Millisecond},
}

// selectedProfiles are the profiles named in $BATON_BENCH_PROFILES (all by
// default), in that order.
func selectedProfiles(t *testing.T) []benchProfile {
	names := os.Getenv("BATON_BENCH_PROFILES")
	if names == "" {
		return benchProfiles
	}
	var out []benchProfile
	for _, name := range strings.Split(names, ",") {
		found := false
		for _, p := range benchProfiles {
			if p.name == strings.TrimSpace(name) {
				out, found = append(out, p), true
			}
		}
		if !found {
			t.Fatalf("BATON_BENCH_PROFILES: unknown profile %q (defaults, tight)", name)
		}
	}
	return out
}

// handoverEvent is what is done to the leader.
type handoverEvent struct {
	name string // the table's
	key  string // in the row's name (BATON_BENCH_ROWS)
	do   func(*sidecars.Member) error
}

var (
	sigterm = handoverEvent{"SIGTERM", "sigterm", func(m *sidecars.Member) error { m.Signal(syscall.SIGTERM); return nil }}
	kill9   = handoverEvent{"kill -9", "kill9", func(m *sidecars.Member) error { m.Signal(syscall.SIGKILL); return nil }}
	resign  = handoverEvent{"POST /resign", "resign", (*sidecars.Member).Resign}
)

// rowName names the row of kind k and event ev, as BATON_BENCH_ROWS does.
func rowName(k handoverKind, ev handoverEvent) string { return k.name + "/" + ev.key }

// selectedRows are the row names listed in $BATON_BENCH_ROWS; nil: every row.
func selectedRows(t *testing.T) map[string]bool {
	names := os.Getenv("BATON_BENCH_ROWS")
	if names == "" {
		return nil
	}
	var all []string
	for _, k := range handoverKinds {
		for _, ev := range k.events {
			all = append(all, rowName(k, ev))
		}
	}
	rows := map[string]bool{}
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, r := range all {
			found = found || r == name
		}
		if !found {
			t.Fatalf("BATON_BENCH_ROWS: unknown row %q (%s)", name, strings.Join(all, ", "))
		}
		rows[name] = true
	}
	return rows
}

// handoverKind is one kind of row: what the members run, the application
// beside each of them, and what is done to the leader.
type handoverKind struct {
	name   string // the subtest's
	label  string // the table's elector / reader column
	start  func(e *env, p benchProfile, name string) *sidecars.Member
	app    *sidecars.Reader // beside every member; nil: none
	events []handoverEvent
}

// startSidecar starts a baton sidecar. With BATON_BENCH_IDLE_SECONDS set it
// runs a fresh copy of the binary of its own, as sidecars on different
// nodes do: the kernel pages out no page that another process maps, so
// members sharing one file would hide what a sidecar's idle time does to
// its code.
func startSidecar(e *env, _ benchProfile, name string) *sidecars.Member {
	if envInt("BATON_BENCH_IDLE_SECONDS", 0) == 0 {
		return e.sidecar(name)
	}
	e.t.Helper()
	return sidecars.StartInTest(e.t, sidecars.Spec{Kind: sidecars.Baton, Binary: ownCopy(e.t, sidecars.BatonBinary(e.t)),
		Name: name, Election: e.Election})
}

// ownCopy copies the file bin into a new temporary directory, synced, and
// returns the copy's path.
func ownCopy(t *testing.T, bin string) string {
	t.Helper()
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(bin))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err = f.Write(data); err == nil {
		err = f.Sync() // clean pages, as an image layer's are
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	return path
}

var (
	unnamedPoller = &sidecars.Reader{Period: 100 * time.Millisecond}
	ackingClient  = &sidecars.Reader{Client: "app", Period: 10 * time.Millisecond, Acknowledge: true}
)

var handoverKinds = []handoverKind{
	{"unnamed-poller", "baton, unnamed poller", startSidecar, unnamedPoller, []handoverEvent{sigterm, resign}},
	{"acknowledging-client", "baton, acknowledging client", startSidecar, ackingClient, []handoverEvent{sigterm, resign}},
	{"run", "baton run, child", func(e *env, p benchProfile, name string) *sidecars.Member {
		return e.batonRun(name, "--stop-grace="+p.stopGrace.String(), "--", "sleep", "100000")
	}, nil, []handoverEvent{sigterm}},
	{"client-go", "client-go LeaderElector", func(e *env, _ benchProfile, name string) *sidecars.Member {
		return e.goElector(name)
	}, nil, []handoverEvent{sigterm, kill9}},
	{"crash", "baton, acknowledging client", startSidecar, ackingClient, []handoverEvent{kill9}},
}

// handoverRow is one line of the table.
type handoverRow struct {
	profile, label, event string
	name                  string // rowName
	took                  []time.Duration
	stalls                int // rounds in which nobody else led within handoverTimeout
	tally                 sidecars.Tally
}

// TestHandoverBenchmark measures handovers of baton, with three kinds of
// application, and of client-go's LeaderElector, at each profile: three
// members on a fresh Lease per kind of row, the same event done to the
// leader round after round, the old leader then replaced by a new member
// and the group left to settle. Handover is from the event to the first
// isLeader answer of another member. Rows:
//
//   - baton, unnamed poller: beside every sidecar an application polls GET
//     /leader without client_id every 100ms and never acknowledges, so a
//     graceful handover waits for its promises to lapse (and on SIGTERM, if
//     --shutdown-grace runs out first, for the Lease to expire).
//   - baton, acknowledging client: it polls GET /leader?client_id=app every
//     10ms and acknowledges the step-down (sidecars.Reader).
//   - baton run, child: `baton run -- sleep 100000`, whose child is stopped
//     and acknowledged by baton itself.
//   - client-go LeaderElector (tests/interop/cmd/goelector, ReleaseOnCancel).
//   - baton kill -9, for comparison with client-go's.
//
// Throughout, the benchmark's own reader asks every member GET
// /leader?client_id=bench every 10ms and, at a baton member, acknowledges
// like the client above, so that its own promises hold up no handover.
// Every answer of every reader goes to sidecars.Check: the table's
// "promises broken" columns (see Check for what they count).
func TestHandoverBenchmark(t *testing.T) {
	if os.Getenv("BATON_BENCH") == "" {
		t.Skip("a benchmark: run bench/handover")
	}
	rounds := envInt("BATON_BENCH_ROUNDS", 6)
	idle := time.Duration(envInt("BATON_BENCH_IDLE_SECONDS", 0)) * time.Second
	profiles := selectedProfiles(t)
	selected := selectedRows(t)
	bin := sidecars.BatonBinary(t)
	var rows []handoverRow
	for _, p := range profiles {
		for _, k := range handoverKinds {
			var events []handoverEvent
			for _, ev := range k.events {
				if selected == nil || selected[rowName(k, ev)] {
					events = append(events, ev)
				}
			}
			if len(events) == 0 {
				continue
			}
			k.events = events
			t.Run(p.name+"/"+k.name, func(t *testing.T) { rows = append(rows, runHandovers(t, p, k, rounds, idle)...) })
		}
	}

	built := "?"
	if st, err := os.Stat(bin); err == nil {
		built = st.ModTime().Format("2006-01-02 15:04:05")
	}
	fmt.Printf("\nhandover: from the event done to the leader to the first isLeader answer of another member\n")
	fmt.Printf("3 members a group, %d rounds a row; baton modified %s\n", rounds, built)
	if idle > 0 {
		fmt.Printf("members idle %v before each event; each baton sidecar runs its own copy of the binary\n", idle)
	}
	for _, p := range profiles {
		fmt.Printf("  %-8s %v; baton run --stop-grace=%v\n", p.name, p.durations, p.stopGrace)
	}
	fmt.Printf("\n%-8s  %-28s  %-12s  %2s  %8s  %8s  %8s   %20s\n", "", "", "", "", "", "", "", "promises broken")
	fmt.Printf("%-8s  %-28s  %-12s  %2s  %8s  %8s  %8s   %9s  %9s  %s\n",
		"profile", "elector / reader", "event", "n", "p50", "p99", "max", "2 leaders", "overtaken", "row")
	var answers int
	var stalled []string
	for _, r := range rows {
		p50, p99, worst := "-", "-", "-"
		if len(r.took) > 0 {
			p50, p99, worst = pct(r.took, 50).String(), pct(r.took, 99).String(), pct(r.took, 100).String()
		}
		overtaken := "-" // nothing promised: client-go
		if r.tally.Promises > 0 {
			overtaken = strconv.Itoa(r.tally.Overtaken)
		}
		fmt.Printf("%-8s  %-28s  %-12s  %2d  %8s  %8s  %8s   %9d  %9s  %s\n",
			r.profile, r.label, r.event, len(r.took), p50, p99, worst, r.tally.BothLead, overtaken, r.name)
		answers += r.tally.Answers
		if r.stalls > 0 {
			stalled = append(stalled, fmt.Sprintf("%s %s %s: %d", r.profile, r.label, r.event, r.stalls))
		}
	}
	fmt.Printf("\nn: handovers measured; percentiles by nearest rank. %d answers checked.\n", answers)
	fmt.Printf("2 leaders: leader answers given while another member certainly led.\n")
	fmt.Printf("overtaken: leader answers whose promise (until validUntilBoottime, or an accepted\n")
	fmt.Printf("acknowledgement) another member's leader answer certainly fell inside; - : none promised.\n")
	if len(stalled) > 0 {
		fmt.Printf("rounds without a handover: %s\n", strings.Join(stalled, "; "))
	}
}

// handoverTimeout is how long a round waits for another leader: past the
// shutdown grace and then the Lease's expiry, with room.
func handoverTimeout(d sidecars.Durations) time.Duration { return 2*d.Lease + 10*time.Second }

// runHandovers runs the rows of kind k at profile p in one group; before
// each round's event the members stay idle for idle (beyond their readers'
// questions).
func runHandovers(t *testing.T, p benchProfile, k handoverKind, rounds int, idle time.Duration) []handoverRow {
	e := withWatch(t)
	e.Durations = p.durations
	d := p.durations
	rec := sidecars.NewRecorder()
	defer rec.Stop()
	n := 0
	spawn := func() *sidecars.Member {
		n++
		m := k.start(e, p, fmt.Sprintf("m%d", n))
		rec.Read(m, sidecars.Reader{Client: "bench", Period: 10 * time.Millisecond, Acknowledge: m.Kind == sidecars.Baton})
		if k.app != nil {
			rec.Read(m, *k.app)
		}
		return m
	}
	members := []*sidecars.Member{spawn(), spawn(), spawn()}
	leader := func() *sidecars.Member {
		l, err := rec.Leader(members, handoverTimeout(d))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	settle := func() {
		leader()
		time.Sleep(2 * d.Retry) // a new member settles as a follower
	}
	settle()
	from := proc.Boottime()
	var rows []handoverRow
	for _, ev := range k.events {
		row := handoverRow{profile: p.name, label: k.label, event: ev.name, name: rowName(k, ev)}
		for i := 0; i < rounds; i++ {
			time.Sleep(idle)
			old := leader()
			at := proc.Boottime()
			if err := ev.do(old); err != nil {
				t.Fatalf("%s of %s: %v", ev.name, old.Name, err)
			}
			if next, ok := rec.FirstLeaderAfter(old.Name, at, handoverTimeout(d)); ok {
				row.took = append(row.took, time.Duration(next-at))
			} else {
				row.stalls++
			}
			old.Kill()
			members = append(sidecars.Others(members, old), spawn())
			settle()
			to := proc.Boottime()
			row.tally = row.tally.Add(rec.Check(from, to))
			// A promise lasts at most a renew deadline, shorter than the
			// lease: what is older can overtake nothing any more.
			rec.Prune(to - int64(d.Lease))
			from = to
		}
		rows = append(rows, row)
	}
	return rows
}

// TestAPIRequestRates measures the API-server requests per minute of a
// leading and of an idle following member, baton sidecars against
// client-go's LeaderElector, at each profile: three members on a fresh
// Lease, counted over $BATON_BENCH_WINDOW_SECONDS. It asserts nothing;
// bench/handover runs it after TestHandoverBenchmark.
func TestAPIRequestRates(t *testing.T) {
	if os.Getenv("BATON_BENCH") == "" {
		t.Skip("a benchmark: run bench/handover")
	}
	window := time.Duration(envInt("BATON_BENCH_WINDOW_SECONDS", 30)) * time.Second
	var lines []string
	for _, p := range selectedProfiles(t) {
		for _, kind := range []string{"baton", "client-go"} {
			t.Run(p.name+"/"+kind, func(t *testing.T) {
				e := withWatch(t)
				e.Durations = p.durations
				start := e.sidecar
				if kind == "client-go" {
					start = e.goElector
				}
				members := []*sidecars.Member{start("m1"), start("m2"), start("m3")}
				leader, _ := sidecars.WaitLeader(t, members, handoverTimeout(p.durations))
				follower := sidecars.Others(members, leader)[0]
				l0, f0 := apiRequests(t, leader), apiRequests(t, follower)
				time.Sleep(window)
				perMinute := func(a, b int64) float64 { return float64(b-a) / window.Minutes() }
				lines = append(lines, fmt.Sprintf("%-8s  %-9s  %8.1f  %8.1f", p.name, kind,
					perMinute(l0, apiRequests(t, leader)), perMinute(f0, apiRequests(t, follower))))
			})
		}
	}
	fmt.Printf("\nAPI-server requests per minute over %v (Lease watch granted)\n", window)
	fmt.Printf("%-8s  %-9s  %8s  %8s\n", "profile", "elector", "leader", "follower")
	for _, l := range lines {
		fmt.Println(l)
	}
}

// pct is the p-th percentile (nearest rank) of ds, rounded for printing.
func pct(ds []time.Duration, p int) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (p*len(s)+99)/100 - 1
	if i < 0 {
		i = 0
	}
	return s[i].Round(time.Millisecond)
}

// apiRequests is how many API-server requests m has sent so far: the sum of
// baton_kube_api_requests_total for a sidecar, apiRequests for a goelector.
func apiRequests(t *testing.T, m *sidecars.Member) int64 {
	t.Helper()
	if m.Kind == sidecars.ClientGo {
		var s struct {
			APIRequests int64 `json:"apiRequests"`
		}
		getJSON(t, "http://"+m.HTTPAddr+"/leader", &s)
		return s.APIRequests
	}
	resp, err := m.Get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var total int64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "baton_kube_api_requests_total{") {
			f := strings.Fields(line)
			v, _ := strconv.ParseFloat(f[len(f)-1], 64)
			total += int64(v)
		}
	}
	return total
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}
