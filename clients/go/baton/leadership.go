package baton

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/encoding/protojson"

	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

// Leadership is what the sidecar reported at one moment. The zero value
// means "not leader, nothing known", which is also what an application must
// assume while the sidecar cannot be reached.
type Leadership struct {
	// IsLeader: this pod held the Lease, within its renew deadline, when the
	// sidecar produced this answer.
	IsLeader bool
	// Identity is this sidecar's holder identity (new for every sidecar
	// process).
	Identity string
	// HolderIdentity is the Lease's holder as last observed; empty when
	// nobody holds it.
	HolderIdentity string
	// FencingToken is the token to tag writes with while IsLeader (see the
	// package documentation); otherwise the last observed leaseTransitions.
	FencingToken int32
	// FencingRevision is the second fencing token: the Lease's
	// resourceVersion as written by the write that won this term while
	// IsLeader; otherwise that of the last observed Lease. An integer of up
	// to 128 bits (see Revision). It keeps growing across Lease deletion and
	// a restart of every sidecar, but is only comparable on Kubernetes 1.35
	// or later (see RevisionFence). Zero when unknown: a resourceVersion
	// that is not an integer, and from a sidecar of 0.2.0 or earlier (which
	// sends an int64) one beyond an int64.
	FencingRevision Revision
	// LeaseName, LeaseNamespace and LeaseUID identify the Lease.
	LeaseName, LeaseNamespace, LeaseUID string
	// AcquireTime and RenewTime are the Lease's (holder's wall clock); zero
	// when unknown. For information only.
	AcquireTime, RenewTime time.Time
	// ValidFor is how much longer leadership was guaranteed when the sidecar
	// produced the answer; zero when not leader.
	ValidFor time.Duration
	// ValidUntilBoottime is when that guarantee ends, as a reading of the
	// node's CLOCK_BOOTTIME (which keeps counting through a suspend): the
	// sidecar's own deadline, exact however long the answer took to arrive.
	// From an older sidecar that sends none, it is counted from when the
	// request was sent (unary calls) or the message arrived (Watch). Zero
	// when not leader. Remaining compares it with the clock.
	ValidUntilBoottime time.Duration
	// ValidUntil is the same deadline on this process's time.Now clock, as
	// estimated when the answer was converted: what a context deadline
	// needs. That clock stops during a suspend; Remaining does not.
	ValidUntil time.Time
	// LeaseDuration is the Lease's leaseDurationSeconds; zero when unknown.
	LeaseDuration time.Duration
	// Observed: the sidecar has read the Lease (or its absence) at least once.
	Observed bool
	// SteppingDown: the sidecar is shutting down or resigning.
	SteppingDown bool

	// sidecarDeadline is the valid_until_boottime the sidecar sent with a
	// leader answer, as it sent it (zero if none): what an acknowledgement
	// names, never a local estimate.
	sidecarDeadline time.Duration
}

// Remaining is how much guaranteed leadership is left now, on
// CLOCK_BOOTTIME: zero when not leader or when the guarantee has run out.
func (l Leadership) Remaining() time.Duration { return l.remainingAt(boottime()) }

// remainingAt is Remaining at the CLOCK_BOOTTIME reading now.
func (l Leadership) remainingAt(now time.Duration) time.Duration {
	if !l.IsLeader || l.ValidUntilBoottime == 0 {
		return 0
	}
	return max(l.ValidUntilBoottime-now, 0)
}

// ParseLeadership converts a GET /leader body (the proto3 JSON of
// baton.v1.Leadership), for applications that read the sidecar's HTTP API
// themselves. Its validity counts from now if the sidecar sent no deadline
// of its own. It fails on anything but a JSON object with fields of the
// right types and a fencing revision as the Leadership type says; unknown
// fields are ignored.
func ParseLeadership(body []byte) (Leadership, error) {
	return parseLeadership(body, boottime())
}

// parseLeadership is ParseLeadership with validity counting from since (a
// boottime reading) when the sidecar sent no deadline.
func parseLeadership(body []byte, since time.Duration) (Leadership, error) {
	var m batonv1.Leadership
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(body, &m); err != nil {
		return Leadership{}, fmt.Errorf("baton: not a Leadership: %w", err)
	}
	return fromProto(&m, since)
}

// key is what Watch compares to decide whether a state is news: everything
// but the times that move on every renew or answer.
type key struct {
	isLeader, observed, steppingDown bool
	identity, holder, uid            string
	token                            int32
}

func (l Leadership) key() key {
	return key{l.IsLeader, l.Observed, l.SteppingDown, l.Identity, l.HolderIdentity, l.LeaseUID,
		l.FencingToken}
}

// expired is l after its guarantee ran out without news from the sidecar.
func (l Leadership) expired() Leadership {
	l.IsLeader, l.ValidFor, l.ValidUntilBoottime, l.ValidUntil = false, 0, 0, time.Time{}
	l.sidecarDeadline = 0
	return l
}

// fromProto converts an answer. since (a boottime reading) is when its
// validity starts counting if the sidecar sent no deadline of its own. It
// fails on a malformed fencing revision.
func fromProto(m *batonv1.Leadership, since time.Duration) (Leadership, error) {
	revision, err := revisionOf(m)
	if err != nil {
		return Leadership{}, err
	}
	l := Leadership{
		IsLeader:        m.GetIsLeader(),
		Identity:        m.GetIdentity(),
		HolderIdentity:  m.GetHolderIdentity(),
		FencingToken:    m.GetFencingToken(),
		FencingRevision: revision,
		LeaseName:       m.GetLeaseName(),
		LeaseNamespace:  m.GetLeaseNamespace(),
		LeaseUID:        m.GetLeaseUid(),
		Observed:        m.GetObserved(),
		SteppingDown:    m.GetSteppingDown(),
	}
	if m.AcquireTime != nil {
		l.AcquireTime = m.AcquireTime.AsTime()
	}
	if m.RenewTime != nil {
		l.RenewTime = m.RenewTime.AsTime()
	}
	if m.LeaseDuration != nil {
		l.LeaseDuration = m.LeaseDuration.AsDuration()
	}
	if l.IsLeader && m.ValidFor != nil {
		l.ValidFor = m.ValidFor.AsDuration()
		l.ValidUntilBoottime = since + l.ValidFor
		d := m.GetValidUntilBoottime().AsDuration()
		if d > 0 && sharesSidecarClock {
			l.ValidUntilBoottime = d
		}
		l.sidecarDeadline = max(d, 0)
		l.ValidUntil = time.Now().Add(l.ValidUntilBoottime - boottime())
	}
	return l, nil
}

// revisionOf reads an answer's fencing revision: fencing_revision_decimal
// when the sidecar sent it (any size, as ParseRevision reads it), else the
// int64 fencing_revision that sidecars of 0.2.0 and earlier send alone.
func revisionOf(m *batonv1.Leadership) (Revision, error) {
	if d := m.GetFencingRevisionDecimal(); d != "" {
		r, ok := parseRevision(d)
		if !ok {
			return Revision{}, fmt.Errorf(
				"baton: not a Leadership: fencingRevisionDecimal %q is not decimal digits of at most 2^128-1", d)
		}
		return r, nil
	}
	v := m.GetFencingRevision()
	if v < 0 {
		return Revision{}, fmt.Errorf("baton: not a Leadership: fencingRevision %d is negative", v)
	}
	return Revision{lo: uint64(v)}, nil
}
