package sidecars

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"baton/tests/internal/proc"
)

// Reader is an application beside a member that polls its GET /leader.
type Reader struct {
	Client string        // the client_id it asks with; "" asks anonymously
	Period time.Duration // between questions
	// Acknowledge makes it a cooperating application: it acts on every
	// answer saying leader and, on the first answer after that saying not
	// leader or stepping down (or naming another term), stops and sends
	// POST /leader/ack with the term and the validUntilBoottime of the last
	// leader answer it acted on, both copied from the JSON. It never acts
	// again on a term it acknowledged. Only for a baton member with a Client.
	Acknowledge bool
}

// Answer is one GET /leader answer a Reader received.
type Answer struct {
	Member     string // Member.Name
	Client     string // the client_id asked with; "" when anonymous
	Send, Recv int64  // CLOCK_BOOTTIME (ns) when the question left and the answer was read
	IsLeader   bool
	Token      int64
	ValidUntil int64 // validUntilBoottime (ns) of a baton leader answer; else 0
}

// Ack is one acknowledgement a Reader sent that the sidecar accepted (200).
type Ack struct {
	Member, Client string
	Token          int64
	UpTo           int64 // the valid_until_boottime it named (ns)
	Sent           int64 // CLOCK_BOOTTIME (ns) when it left
}

// Recorder runs Readers against members and keeps what they received. Safe
// for concurrent use.
type Recorder struct {
	mu      sync.Mutex
	answers []Answer
	acks    []Ack
	latest  map[string]Answer // each member's latest answer, by Recv
	stop    chan struct{}
	wg      sync.WaitGroup
}

// NewRecorder is an empty Recorder; Stop it when done.
func NewRecorder() *Recorder {
	return &Recorder{latest: map[string]Answer{}, stop: make(chan struct{})}
}

// Read runs rd against m until m exits or r is stopped.
func (r *Recorder) Read(m *Member, rd Reader) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		tick := time.NewTicker(rd.Period)
		defer tick.Stop()
		var acting *State // the last leader answer acted on
		acked := int64(-1)
		for {
			select {
			case <-r.stop:
				return
			case <-m.Done():
				return
			case <-tick.C:
			}
			send := proc.Boottime()
			st, err := m.StateAs(rd.Client)
			recv := proc.Boottime()
			if err != nil {
				continue
			}
			a := Answer{Member: m.Name, Client: rd.Client, Send: send, Recv: recv,
				IsLeader: st.IsLeader, Token: st.FencingToken}
			if st.IsLeader && m.Kind == Baton {
				if a.ValidUntil, err = parseBoottime(st.ValidUntilBoottime); err != nil {
					a.ValidUntil = 0 // unreadable: promises nothing the checker can use
				}
			}
			r.add(a)
			if !rd.Acknowledge {
				continue
			}
			leading := st.IsLeader && !st.SteppingDown
			if acting != nil && (!leading || st.FencingToken != acting.FencingToken) {
				sent := proc.Boottime()
				if _, err := m.AcknowledgeAs(rd.Client, acting.FencingToken, acting.ValidUntilBoottime); err == nil {
					upTo, perr := parseBoottime(acting.ValidUntilBoottime)
					if perr != nil || upTo == 0 {
						upTo = math.MaxInt64 // no deadline named: every promise of the term so far
					}
					r.addAck(Ack{Member: m.Name, Client: rd.Client, Token: acting.FencingToken, UpTo: upTo, Sent: sent})
				}
				acked, acting = acting.FencingToken, nil
			}
			if leading && st.FencingToken != acked {
				acting = &st
			}
		}
	}()
}

// Stop ends every Read and waits for them.
func (r *Recorder) Stop() {
	close(r.stop)
	r.wg.Wait()
}

func (r *Recorder) add(a Answer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = append(r.answers, a)
	if a.Recv > r.latest[a.Member].Recv {
		r.latest[a.Member] = a
	}
}

func (r *Recorder) addAck(a Ack) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acks = append(r.acks, a)
}

// Leader waits (at most timeout) until every one of members has answered
// since the call and the latest answers name exactly one leader, and
// returns it. Unlike WaitLeader it asks nothing itself, so it hands out no
// promise that nobody acknowledges.
func (r *Recorder) Leader(members []*Member, timeout time.Duration) (*Member, error) {
	since := proc.Boottime()
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		var leader *Member
		n, fresh := 0, true
		r.mu.Lock()
		for _, m := range members {
			a, ok := r.latest[m.Name]
			fresh = fresh && ok && a.Send >= since
			if a.IsLeader {
				leader = m
				n++
			}
		}
		r.mu.Unlock()
		if fresh && n == 1 {
			return leader, nil
		}
	}
	return nil, fmt.Errorf("no single leader among %d members within %v", len(members), timeout)
}

// FirstLeaderAfter waits (at most timeout) for the first leader answer of a
// member other than not received at or after since, and returns its Recv.
func (r *Recorder) FirstLeaderAfter(not string, since int64, timeout time.Duration) (int64, bool) {
	i := 0
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		r.mu.Lock()
		for ; i < len(r.answers); i++ {
			if a := r.answers[i]; a.IsLeader && a.Member != not && a.Recv >= since {
				r.mu.Unlock()
				return a.Recv, true
			}
		}
		r.mu.Unlock()
	}
	return 0, false
}

// Check is the package's Check over everything recorded.
func (r *Recorder) Check(from, to int64) Tally {
	r.mu.Lock()
	answers, acks := append([]Answer(nil), r.answers...), append([]Ack(nil), r.acks...)
	r.mu.Unlock()
	return Check(answers, acks, from, to)
}

// Prune forgets answers received and acknowledgements sent before t.
func (r *Recorder) Prune(t int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers = slices.DeleteFunc(r.answers, func(a Answer) bool { return a.Recv < t })
	r.acks = slices.DeleteFunc(r.acks, func(a Ack) bool { return a.Sent < t })
}

// parseBoottime reads a validUntilBoottime as printed ("86523.118402311s")
// into nanoseconds; "" is 0.
func parseBoottime(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	return int64(d), err
}
