package sidecars

import (
	"testing"
	"time"
)

const ms = int64(time.Millisecond)

// leads is member answering leader of term token every 10 ms over [from,
// to) ms, each answer taking 1 ms and promising until until ms (0: none).
func leads(member, client string, token, from, to, until int64) []Answer {
	var out []Answer
	for t := from; t < to; t += 10 {
		a := Answer{Member: member, Client: client, Send: t * ms, Recv: (t + 1) * ms, IsLeader: true, Token: token}
		if until > 0 {
			a.ValidUntil = until * ms
		}
		out = append(out, a)
	}
	return out
}

func TestCheck(t *testing.T) {
	all := func(parts ...[]Answer) []Answer {
		var out []Answer
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, c := range []struct {
		name                string
		answers             []Answer
		acks                []Ack
		bothLead, overtaken int
	}{
		{"clean handover after the promises lapsed",
			all(leads("x", "app", 1, 0, 100, 150), leads("y", "app", 2, 160, 300, 400)), nil, 0, 0},
		{"y leads while x still leads",
			// y's answers at 50 and 60 lie inside x's stretch [1, 90]; x's
			// promises that began before y's answers were asked (the 6 up to
			// 50..51) are overtaken, and y's 2 by x's later answers.
			all(leads("x", "app", 1, 0, 100, 150), leads("y", "app", 2, 50, 70, 200)), nil, 2, 8},
		{"y leads inside x's promise, x silent",
			all(leads("x", "app", 1, 0, 100, 150), leads("y", "app", 2, 120, 200, 300)), nil, 0, 10},
		{"x's promises acknowledged before y leads",
			all(leads("x", "app", 1, 0, 100, 150), leads("y", "app", 2, 120, 200, 300)),
			[]Ack{{Member: "x", Client: "app", Token: 1, UpTo: 150 * ms, Sent: 105 * ms}}, 0, 0},
		{"an acknowledgement naming an earlier deadline voids nothing later",
			all(leads("x", "app", 1, 0, 100, 150), leads("y", "app", 2, 120, 200, 300)),
			[]Ack{{Member: "x", Client: "app", Token: 1, UpTo: 149 * ms, Sent: 105 * ms}}, 0, 10},
		{"an acknowledgement of another client voids nothing",
			all(leads("x", "", 1, 0, 100, 150), leads("y", "app", 2, 120, 200, 300)),
			[]Ack{{Member: "x", Client: "app", Token: 1, UpTo: 150 * ms, Sent: 105 * ms}}, 0, 10},
		{"client-go answers promise nothing",
			all(leads("x", "", 1, 0, 100, 0), leads("y", "", 2, 120, 200, 0)), nil, 0, 0},
		{"a not-leader answer ends a stretch",
			all(leads("x", "", 1, 0, 40, 0), []Answer{{Member: "x", Send: 40 * ms, Recv: 41 * ms}},
				leads("x", "", 1, 50, 100, 0), leads("y", "", 2, 45, 46, 0)), nil, 0, 0},
	} {
		got := Check(c.answers, c.acks, 0, 1000*ms)
		if got.BothLead != c.bothLead || got.Overtaken != c.overtaken {
			t.Errorf("%s: both lead %d, overtaken %d; want %d, %d", c.name, got.BothLead, got.Overtaken, c.bothLead, c.overtaken)
		}
	}
	// A finding counts in the window of the answer that shows it.
	answers := all(leads("x", "app", 1, 0, 100, 150), leads("y", "app", 2, 120, 200, 300))
	if a, b := Check(answers, nil, 0, 122*ms), Check(answers, nil, 122*ms, 1000*ms); a.Overtaken != 10 || b.Overtaken != 0 {
		t.Errorf("overtaken in [0, 122) %d and after %d; want 10 and 0", a.Overtaken, b.Overtaken)
	}
}
