package baton

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// TokenHeader is the HTTP header that carries a fencing token with a write
// (see SetToken and TokenFromHeader).
const TokenHeader = "Baton-Fencing-Token"

// SetToken tags an outgoing HTTP write with a fencing token.
func SetToken(h http.Header, token int32) { h.Set(TokenHeader, strconv.FormatInt(int64(token), 10)) }

// TokenFromHeader reads the fencing token SetToken wrote. It fails when the
// header is missing or not a non-negative 32-bit integer.
func TokenFromHeader(h http.Header) (int32, error) {
	v := h.Get(TokenHeader)
	if v == "" {
		return 0, fmt.Errorf("baton: missing %s header", TokenHeader)
	}
	t, err := strconv.ParseInt(v, 10, 32)
	if err != nil || t < 0 {
		return 0, fmt.Errorf("baton: %s %q is not a fencing token", TokenHeader, v)
	}
	return int32(t), nil
}

// StaleTokenError is Fence.Admit's refusal of a deposed leader's write.
type StaleTokenError struct {
	Token, Highest int32
}

func (e *StaleTokenError) Error() string {
	return fmt.Sprintf("baton: stale fencing token %d: a write with token %d was already accepted", e.Token, e.Highest)
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
type Fence struct {
	mu      sync.Mutex
	highest int32
	seen    bool
}

// Admit accepts token if no higher one was admitted before, and records it;
// otherwise it returns a *StaleTokenError and records nothing.
func (f *Fence) Admit(token int32) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.seen && token < f.highest {
		return &StaleTokenError{Token: token, Highest: f.highest}
	}
	f.highest, f.seen = token, true
	return nil
}

// Highest returns the highest admitted token; ok is false before the first.
func (f *Fence) Highest() (token int32, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.highest, f.seen
}
