package sidecars

import (
	"sort"
	"time"
)

// Check counts, over answers Readers recorded, what would break the
// promises of an election; it is simple and conservative: it counts only
// what certainly happened, judged from the instants each question left and
// its answer arrived (CLOCK_BOOTTIME, which every process shares), so a
// count above zero is a real violation, while a short one between two
// samples can go unseen.
//
//   - Led: a member certainly led from the arrival of one of its leader
//     answers to the sending of a later one of the same term, when the
//     answers of that run are less than ledGap apart and none of its answers
//     in between says otherwise (the readers ask every 10 ms or so; a member
//     that stopped leading in such a gap would have said so).
//   - BothLead: leader answers of one member asked and answered inside a
//     stretch where another member certainly led: an instant with two
//     leaders.
//   - Overtaken: leader answers whose promise another member's leader answer
//     certainly falls inside. A baton leader answer promises that nobody
//     else leads until its validUntilBoottime; what it certainly covers
//     starts when it arrived. An acknowledgement the sidecar accepted ends,
//     from when it was sent, the promises to that client of that term that
//     end by the deadline it named (an anonymous promise only lapses). The
//     other answer falls inside when it was asked after the promise began
//     and answered before it ended. client-go answers promise nothing.
//
// A finding counts in the window [from, to) holding its instant (the
// arrival of the answer that shows the second leader), so successive
// windows over one growing record count each once.
func Check(answers []Answer, acks []Ack, from, to int64) Tally {
	var t Tally
	inWindow := func(at int64) bool { return from <= at && at < to }
	byMember := map[string][]Answer{} // by Send
	for _, a := range answers {
		byMember[a.Member] = append(byMember[a.Member], a)
		if inWindow(a.Recv) {
			t.Answers++
		}
	}
	type stretch struct {
		member     string
		start, end int64
	}
	var led []stretch
	leaders := map[string][]Answer{} // each member's leader answers, by Send
	for member, as := range byMember {
		sort.Slice(as, func(i, j int) bool { return as[i].Send < as[j].Send })
		var cur *stretch
		var token, lastRecv int64
		flush := func() {
			if cur != nil && cur.start < cur.end {
				led = append(led, *cur)
			}
			cur = nil
		}
		for _, a := range as {
			if !a.IsLeader {
				flush()
				continue
			}
			leaders[member] = append(leaders[member], a)
			if cur != nil && (a.Token != token || time.Duration(a.Send-lastRecv) > ledGap) {
				flush()
			}
			if cur == nil {
				cur, token, lastRecv = &stretch{member: member, start: a.Recv, end: a.Send}, a.Token, a.Recv
			}
			cur.start, cur.end, lastRecv = min(cur.start, a.Recv), max(cur.end, a.Send), max(lastRecv, a.Recv)
		}
		flush()
	}

	for _, as := range leaders {
		for _, b := range as {
			if !inWindow(b.Recv) {
				continue
			}
			for _, s := range led {
				if s.member != b.Member && s.start <= b.Send && b.Recv <= s.end {
					t.BothLead++
					break
				}
			}
		}
	}

	type ackKey struct {
		member, client string
		token          int64
	}
	voids := map[ackKey][]Ack{}
	for _, k := range acks {
		key := ackKey{k.Member, k.Client, k.Token}
		voids[key] = append(voids[key], k)
	}
	for _, as := range leaders {
		for _, a := range as {
			if a.ValidUntil == 0 {
				continue
			}
			end := a.ValidUntil
			if a.Client != "" {
				for _, k := range voids[ackKey{a.Member, a.Client, a.Token}] {
					if k.UpTo >= a.ValidUntil {
						end = min(end, k.Sent)
					}
				}
			}
			if end <= a.Recv {
				continue
			}
			if inWindow(a.Recv) {
				t.Promises++
			}
			first, found := int64(0), false
			for member, bs := range leaders {
				if member == a.Member {
					continue
				}
				i := sort.Search(len(bs), func(i int) bool { return bs[i].Send >= a.Recv })
				for ; i < len(bs) && bs[i].Send < end; i++ {
					if bs[i].Recv < end {
						if !found || bs[i].Recv < first {
							first, found = bs[i].Recv, true
						}
						break
					}
				}
			}
			if found && inWindow(first) {
				t.Overtaken++
			}
		}
	}
	return t
}

// ledGap is the longest silence inside a stretch a member certainly led.
const ledGap = 50 * time.Millisecond

// Tally is what Check found in one window.
type Tally struct {
	Answers   int // answers received in the window
	Promises  int // leader answers received in the window whose promise was still running then
	BothLead  int // leader answers given while another member certainly led
	Overtaken int // promises another member's leader answer certainly fell inside
}

// Add is t plus u.
func (t Tally) Add(u Tally) Tally {
	return Tally{t.Answers + u.Answers, t.Promises + u.Promises, t.BothLead + u.BothLead, t.Overtaken + u.Overtaken}
}
