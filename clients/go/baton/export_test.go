package baton

// The pure seams the conformance tests (package baton_test) drive with
// the clock readings of clients/conformance's vectors.

import (
	"time"

	"github.com/baton-sidecar/baton/clients/go/batonv1"
)

// FromProtoSince converts a message with validity counting from since.
func FromProtoSince(m *batonv1.Leadership, since time.Duration) (Leadership, error) {
	return fromProto(m, since)
}

// ParseLeadershipSince is ParseLeadership with validity counting from since.
func ParseLeadershipSince(body []byte, since time.Duration) (Leadership, error) {
	return parseLeadership(body, since)
}

// RemainingAt is l.Remaining at the CLOCK_BOOTTIME reading now.
func RemainingAt(l Leadership, now time.Duration) time.Duration { return l.remainingAt(now) }

// RequireLeaderAt is RequireLeader's decision on l at now.
func RequireLeaderAt(l Leadership, minValidity, now time.Duration) (Leadership, error) {
	return requireLeaderAt(l, minValidity, now)
}

// RequireLeaderBound is the promise RequireLeader(minValidity) asks for.
func RequireLeaderBound(minValidity time.Duration) time.Duration {
	return requireLeaderBound(minValidity)
}

// Translate maps a failed call's error as a Client does.
func Translate(addr string, err error) error { return translate(addr, err) }
