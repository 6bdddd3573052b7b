package baton

import (
	"cmp"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// TokenHeader is the HTTP header that carries a fencing token with a write
// (see SetToken and TokenFromHeader).
const TokenHeader = "Baton-Fencing-Token"

// RevisionHeader is the HTTP header that carries a fencing revision with a
// write (see SetRevision and RevisionFromHeader).
const RevisionHeader = "Baton-Fencing-Revision"

// SetToken tags an outgoing HTTP write with a fencing token.
func SetToken(h http.Header, token int32) { h.Set(TokenHeader, strconv.FormatInt(int64(token), 10)) }

// SetRevision tags an outgoing HTTP write with a fencing revision, in
// decimal digits.
func SetRevision(h http.Header, revision Revision) { h.Set(RevisionHeader, revision.String()) }

// TokenFromHeader reads the fencing token SetToken wrote. It fails when the
// header is missing or not a non-negative 32-bit integer in decimal digits
// (no sign, no spaces).
func TokenFromHeader(h http.Header) (int32, error) {
	v, err := fromHeader(h, TokenHeader)
	if err != nil {
		return 0, err
	}
	t, err := strconv.ParseInt(v, 10, 32)
	if err != nil || strings.TrimLeft(v, "0123456789") != "" { // digits only: no sign
		return 0, fmt.Errorf("baton: %s %q is not a fencing token", TokenHeader, v)
	}
	return int32(t), nil
}

// RevisionFromHeader reads the fencing revision SetRevision wrote. It fails
// when the header is missing or not a revision as ParseRevision reads it:
// decimal digits without sign or leading zero, at most 2^128-1.
func RevisionFromHeader(h http.Header) (Revision, error) {
	v, err := fromHeader(h, RevisionHeader)
	if err != nil {
		return Revision{}, err
	}
	r, ok := parseRevision(v)
	if !ok {
		return Revision{}, fmt.Errorf("baton: %s %q is not a fencing revision", RevisionHeader, v)
	}
	return r, nil
}

// fromHeader returns the value of the header name, failing when it is
// missing.
func fromHeader(h http.Header, name string) (string, error) {
	v := h.Get(name)
	if v == "" {
		return "", fmt.Errorf("baton: missing %s header", name)
	}
	return v, nil
}

// StaleTokenError is Fence.Admit's refusal of a deposed leader's write.
type StaleTokenError struct {
	Token, Highest int32
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("baton: stale fencing token %d: a write with token %d was already accepted", e.Token, e.Highest)
}

// StaleRevisionError is RevisionFence.Admit's refusal of a deposed leader's
// write.
type StaleRevisionError struct {
	Revision, Highest Revision
}

func (e *StaleRevisionError) Error() string {
	return fmt.Sprintf("baton: stale fencing revision %v: a write with revision %v was already accepted",
		e.Revision, e.Highest)
}

// highWater is what both fences are: the highest value admitted so far.
type highWater[T any] struct {
	mu      sync.Mutex
	highest T
	seen    bool
}

// admit records v unless a higher value was admitted, as compare orders
// them; it returns the highest value and whether v was refused.
func (w *highWater[T]) admit(v T, compare func(a, b T) int) (highest T, stale bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen && compare(v, w.highest) < 0 {
		return w.highest, true
	}
	w.highest, w.seen = v, true
	return v, false
}

func (w *highWater[T]) get() (T, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.highest, w.seen
}

// Fence is the store side of fencing for one Lease: it remembers the
// highest token it has admitted and refuses lower ones. Equal tokens are
// admitted (the same leader writing again). The zero value is ready to use
// and safe for concurrent use.
//
// Admit must be atomic with the write it guards: hold the store's own lock
// (or transaction) across Admit and the write, or a stale write can slip in
// between. A store that persists its data should persist Highest with it,
// and Admit the persisted value once after a restart.
//
// The token (Leadership.FencingToken, the Lease's leaseTransitions) grows
// across leaders as far as any running sidecar has seen. If the Lease is
// deleted while every sidecar is restarted, it starts again from 0 and this
// Fence refuses the new leader; use a RevisionFence where that matters.
type Fence struct{ w highWater[int32] }

// Admit accepts token if no higher one was admitted before, and records it;
// otherwise it returns a *StaleTokenError and records nothing.
func (f *Fence) Admit(token int32) error {
	if highest, stale := f.w.admit(token, cmp.Compare[int32]); stale {
		return &StaleTokenError{Token: token, Highest: highest}
	}
	return nil
}

// Highest returns the highest admitted token; ok is false before the first.
func (f *Fence) Highest() (token int32, ok bool) { return f.w.get() }

// RevisionFence is Fence for fencing revisions (Leadership.FencingRevision,
// the resourceVersion of the write that won the term, an integer of up to
// 128 bits): it refuses a revision below the highest admitted, compared as
// integers (Revision.Compare). Use one kind per store, never both in one
// fence. The zero value is ready to use and safe for concurrent use; Admit
// must be atomic with the write, as for Fence.
//
// Revisions keep growing even after the Lease is deleted and every sidecar
// restarted, because they come from the API server's own counter; that is
// guaranteed only on Kubernetes 1.35 or later (KEP-5504: resourceVersions of
// one resource type are comparable integers). On older servers use Fence. A
// revision of 0 means the sidecar did not know one: it is refused once any
// revision was admitted.
type RevisionFence struct{ w highWater[Revision] }

// Admit accepts revision if no higher one was admitted before, and records
// it; otherwise it returns a *StaleRevisionError and records nothing.
func (f *RevisionFence) Admit(revision Revision) error {
	if highest, stale := f.w.admit(revision, Revision.Compare); stale {
		return &StaleRevisionError{Revision: revision, Highest: highest}
	}
	return nil
}

// Highest returns the highest admitted revision; ok is false before the
// first.
func (f *RevisionFence) Highest() (revision Revision, ok bool) { return f.w.get() }
