package sidecars

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Safety samples members continuously until checked and records any round in
// which two of them claimed leadership at once, and any leader whose token
// was not above an earlier leader's.
type Safety struct {
	t       testing.TB
	stop    chan struct{}
	stopped chan struct{}
	mu      sync.Mutex
	members []*Member
	rounds  int
	errs    []string
}

// WatchSafety starts sampling members every 10ms.
func WatchSafety(t testing.TB, members []*Member) *Safety {
	s := &Safety{t: t, stop: make(chan struct{}), stopped: make(chan struct{}), members: members}
	go func() {
		defer close(s.stopped)
		lastToken := map[string]int64{}
		var highest int64 = -1
		var highestBy string
		for {
			select {
			case <-s.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			s.mu.Lock()
			members := s.members
			s.mu.Unlock()
			states := Sample(members)
			var leaders []string
			for i, st := range states {
				if st == nil || !st.IsLeader {
					continue
				}
				leaders = append(leaders, members[i].Name)
				if prev, ok := lastToken[members[i].Name]; !ok || prev != st.FencingToken {
					if st.FencingToken < highest || (st.FencingToken == highest && highestBy != members[i].Name) {
						s.record(fmt.Sprintf("%s leads with token %d, not above %s's %d", members[i].Name, st.FencingToken, highestBy, highest))
					}
					if st.FencingToken > highest {
						highest, highestBy = st.FencingToken, members[i].Name
					}
					lastToken[members[i].Name] = st.FencingToken
				}
			}
			if len(leaders) > 1 {
				s.record("two leaders at once: " + strings.Join(leaders, ", "))
			}
			s.mu.Lock()
			s.rounds++
			s.mu.Unlock()
		}
	}()
	return s
}

// Watch replaces the members being sampled (after one was replaced).
func (s *Safety) Watch(members []*Member) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members = members
}

func (s *Safety) record(msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, time.Now().Format("15:04:05.000")+" "+msg)
}

// Check stops sampling and fails the test on any violation.
func (s *Safety) Check() {
	close(s.stop)
	<-s.stopped
	s.t.Helper()
	s.t.Logf("safety: %d sampling rounds", s.rounds)
	for _, e := range s.errs {
		s.t.Error(e)
	}
}
