package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"baton/tests/internal/sidecars"
)

// TestHandoverBenchmark measures baton and client-go's LeaderElector side by
// side on the same control plane and durations: crash failover (kill -9 of
// the leader until another answers isLeader), graceful handover (SIGTERM
// likewise), and API requests per minute made by a leader and by an idle
// follower. It asserts nothing; bench/handover runs it and prints the table.
// Skipped unless BATON_BENCH=1.
func TestHandoverBenchmark(t *testing.T) {
	if os.Getenv("BATON_BENCH") == "" {
		t.Skip("a benchmark: run bench/handover")
	}
	rounds := envInt("BATON_BENCH_ROUNDS", 10)
	window := time.Duration(envInt("BATON_BENCH_WINDOW_SECONDS", 30)) * time.Second
	var rows []string
	for _, kind := range []string{"baton", "client-go"} {
		e := withWatch(t)
		n := 0
		spawn := func() *sidecars.Member {
			n++
			if kind == "baton" {
				return e.sidecar(fmt.Sprintf("baton-%d", n))
			}
			return e.goElector(fmt.Sprintf("go-%d", n))
		}
		members := []*sidecars.Member{spawn(), spawn(), spawn()}
		measure := func(sig syscall.Signal) []time.Duration {
			var took []time.Duration
			for i := 0; i < rounds; i++ {
				d, old, _, _ := handover(t, members, sig)
				took = append(took, d)
				old.Signal(syscall.SIGKILL)
				<-old.Done()
				members = append(sidecars.Others(members, old), spawn())
				sidecars.WaitLeader(t, members, 15*time.Second)
				time.Sleep(2 * sidecars.RetryPeriod) // let the new member settle as a follower
			}
			return took
		}
		crash := measure(syscall.SIGKILL)
		graceful := measure(syscall.SIGTERM)
		leader, _ := sidecars.WaitLeader(t, members, 15*time.Second)
		follower := sidecars.Others(members, leader)[0]
		l0, f0 := apiRequests(t, leader), apiRequests(t, follower)
		time.Sleep(window)
		perMinute := func(a, b int64) float64 { return float64(b-a) / window.Minutes() }
		leaderRate := perMinute(l0, apiRequests(t, leader))
		followerRate := perMinute(f0, apiRequests(t, follower))
		rows = append(rows, fmt.Sprintf("%-9s  %8v %8v %8v   %8v %8v %8v   %8.1f %8.1f",
			kind, pct(crash, 50), pct(crash, 90), pct(crash, 100),
			pct(graceful, 50), pct(graceful, 90), pct(graceful, 100), leaderRate, followerRate))
	}
	fmt.Printf("\nlease %v, renew deadline %v, retry period %v; %d handovers of each kind; requests over %v\n",
		sidecars.LeaseDuration, sidecars.RenewDeadline, sidecars.RetryPeriod, rounds, window)
	fmt.Printf("%-9s  %26s   %26s   %17s\n", "", "crash failover (kill -9)", "graceful handover (SIGTERM)", "API requests/min")
	fmt.Printf("%-9s  %8s %8s %8s   %8s %8s %8s   %8s %8s\n", "elector", "p50", "p90", "max", "p50", "p90", "max", "leader", "follower")
	for _, r := range rows {
		fmt.Println(r)
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
	if strings.HasPrefix(m.Name, "go-") {
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
