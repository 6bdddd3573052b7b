package sidecars

import (
	"sync"
	"testing"
	"time"
)

// Sample asks every live member at once; it returns their answers (nil for
// members that did not answer).
func Sample(members []*Member) []*State {
	out := make([]*State, len(members))
	var wg sync.WaitGroup
	for i, m := range members {
		if m.Exited() {
			continue
		}
		wg.Add(1)
		go func(i int, m *Member) {
			defer wg.Done()
			if s, err := m.State(); err == nil {
				out[i] = &s
			}
		}(i, m)
	}
	wg.Wait()
	return out
}

// WaitLeader waits until exactly one of members reports isLeader and returns
// it with its state.
func WaitLeader(t testing.TB, members []*Member, timeout time.Duration) (*Member, State) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		states := Sample(members)
		var leader *Member
		var ls State
		n := 0
		for i, st := range states {
			if st != nil && st.IsLeader {
				leader, ls = members[i], *st
				n++
			}
		}
		if n == 1 {
			return leader, ls
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no single leader among %d members within %v", len(members), timeout)
	return nil, State{}
}

// Others is members without m.
func Others(members []*Member, m *Member) []*Member {
	var out []*Member
	for _, x := range members {
		if x != m {
			out = append(out, x)
		}
	}
	return out
}

// AwaitState asks m every retry period until want accepts its answer or
// timeout passes, and returns the last answer, whether want accepted it and
// the last error. For what a member shows only after its next read of the
// Lease, which comes later while the API server is slow to answer.
func AwaitState(m *Member, timeout time.Duration, want func(State) bool) (State, bool, error) {
	deadline := time.Now().Add(timeout)
	for {
		s, err := m.State()
		if err == nil && want(s) {
			return s, true, nil
		}
		if time.Now().After(deadline) {
			return s, false, err
		}
		time.Sleep(RetryPeriod)
	}
}
