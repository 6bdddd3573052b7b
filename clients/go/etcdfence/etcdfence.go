// Package etcdfence fences writes into etcd with the term a baton leader was
// given: a write lands only if no write of a newer term was accepted for the
// same key before it, and the check and the write are one etcd transaction.
//
// Beside each fenced key the store keeps a fence key (Prefix + key) whose
// value is the newest term accepted for it, written as 39 decimal digits
// with leading zeros. etcd compares values as bytes; at one fixed width,
// byte order is integer order, and 39 digits hold every integer of 128 bits
// (a resourceVersion, KEP-5504). A fenced write is one Txn:
//
//	Txn(
//	  If(Value(fence) > padded(term)),
//	  Then(Get(fence)),                        // refused: read the newer term
//	  Else(Put(fence, padded(term)), ops...),  // admitted: the write itself
//	)
//
// etcd runs a Txn as one step at one revision, so no other write falls
// between the comparison and the puts. The comparison refuses rather than
// admits because a value comparison on a key that does not exist is always
// false in etcd, and a Txn's comparisons can only all hold (there is no
// "or", and no "<="): "refuse if the fence is greater" is one comparison that
// also admits the first write of a key, where "admit if the fence is not
// greater" would need a second Txn to create the fence key first. So
// Succeeded is true for a refusal, and its Get returns the winning term in
// the same step.
//
// etcd's own revisions (a key's ModRevision) are not compared: they order
// writes into this etcd, not Kubernetes terms, and an equality comparison on
// them gives compare-and-swap, not order.
//
// Which order (see docs/fencing.md): the fencing revision, the
// resourceVersion of the write that won the term, keeps growing across
// leaders even when the Lease is deleted and recreated by a member that has
// no history (its leaseTransitions, the fencing token, start again at 0).
// It is comparable on Kubernetes 1.35 or later (KEP-5504) and is this
// package's default, ByRevision. On older servers fence ByToken. One order
// per fence key: the fence key holds the compared number only.
package etcdfence

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/baton-sidecar/baton/clients/go/baton"
	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// DefaultPrefix is what a Fence with an empty Prefix puts before a key to
// name its fence key.
const DefaultPrefix = "baton-fence/"

// Width is the number of digits of a fence value: the length of 2^128-1 in
// decimal, since resourceVersions are integers of up to 128 bits.
const Width = 39

// Fence fences writes through fence keys in one etcd. The zero value fences
// by revision with fence keys under DefaultPrefix; it holds no state and is
// safe for concurrent use.
type Fence struct {
	// Prefix is put before a fenced key to name its fence key; DefaultPrefix
	// when empty. Keep it apart from the data, so that no data key is also
	// a fence key.
	Prefix string
	// Order is what the fence compares; ByRevision when zero.
	Order Order
}

// Order is what decides which of two terms is the newer:
// baton.FenceOrder, the order of every store fence.
type Order = baton.FenceOrder

const (
	// ByRevision compares fencing revisions (the default): baton.ByRevision.
	ByRevision = baton.ByRevision
	// ByToken compares fencing tokens, for API servers older than 1.35:
	// baton.ByToken.
	ByToken = baton.ByToken
)

// FenceKey returns the fence key of key.
func (f Fence) FenceKey(key string) string {
	if f.Prefix == "" {
		return DefaultPrefix + key
	}
	return f.Prefix + key
}

// Term is what a leader tags its writes with, its fencing revision and
// token: baton.Term.
type Term = baton.Term

// TermOf returns the term of a leader answer, as baton.TermOf does. Take it
// from the answer that said this pod leads, right before the write.
func TermOf(l baton.Leadership) Term { return baton.TermOf(l) }

// ErrNoRevision is the answer of a Fence ordered ByRevision to a term
// without a fencing revision (0): the sidecar did not know one.
// Writing with it would be fenced by nothing; fence ByToken on such a
// cluster.
var ErrNoRevision = errors.New("etcdfence: the term has no fencing revision (0); fence ByToken where the sidecar reports none")

// Value returns what the fence key holds once term is admitted: the
// compared number in Width digits. Errors are the term's (ErrNoRevision, a
// negative token).
func (f Fence) Value(term Term) (string, error) {
	var digits string
	switch f.Order {
	case ByToken:
		if term.Token < 0 {
			return "", fmt.Errorf("etcdfence: fencing token %d is negative", term.Token)
		}
		digits = strconv.FormatInt(int64(term.Token), 10)
	default:
		if term.Revision == (baton.Revision{}) {
			return "", ErrNoRevision
		}
		digits = term.Revision.String()
	}
	return strings.Repeat("0", Width-len(digits)) + digits, nil
}

// StaleError is the refusal of a write whose term is older than one the
// fence already accepted for Key: the writer is a deposed leader, and none
// of its write landed. Its Unwrap gives the baton package's error for the
// same refusal (a *baton.StaleTokenError when ordered ByToken, a
// *baton.StaleRevisionError when ordered ByRevision).
type StaleError struct {
	Key   string
	Order Order
	// Term is the refused term. Highest is the number the fence holds, in
	// the Order's terms (a revision or a token), without leading zeros.
	Term    Term
	Highest string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("etcdfence: stale write to %q refused (by %v): term %v; a write of %v %s was already accepted",
		e.Key, e.Order, e.Term, e.Order, e.Highest)
}

// Unwrap returns the baton package's error for this refusal
// (baton.FenceOrder.StaleError), or nil when Highest is not a number of the
// Order's kind (a fence key written by something else).
func (e *StaleError) Unwrap() error {
	highest, err := e.Order.ParseTerm(e.Highest)
	if err != nil {
		return nil
	}
	return e.Order.StaleError(e.Term, highest)
}

// Write runs ops in one etcd transaction that first admits term for key, and
// returns the responses of ops in their order. When the fence holds a newer
// term for key, it returns a *StaleError and none of ops ran. An equal term
// is admitted: the same leader writing again. ops may be puts, deletes,
// gets and nested Txns on any keys (fence keys aside); together with the
// fence's put they count against etcd's --max-txn-ops (128 by default), and
// a Txn may not put the same key twice.
//
// Only ops are fenced: a write to the same keys made outside Write is not.
// A Write that fails with an error other than a *StaleError may or may not
// have been applied (the connection broke after the request was sent): read
// the fence key or the data before retrying, or retry it as it is (a retry
// of an admitted term is admitted again).
func (f Fence) Write(ctx context.Context, kv clientv3.KV, key string, term Term, ops ...clientv3.Op) ([]*pb.ResponseOp, error) {
	value, err := f.Value(term)
	if err != nil {
		return nil, err
	}
	fenceKey := f.FenceKey(key)
	admitted := append([]clientv3.Op{clientv3.OpPut(fenceKey, value)}, ops...)
	resp, err := kv.Txn(ctx).
		If(clientv3.Compare(clientv3.Value(fenceKey), ">", value)).
		Then(clientv3.OpGet(fenceKey)).
		Else(admitted...).
		Commit()
	if err != nil {
		return nil, fmt.Errorf("etcdfence: writing %q with term %v: %w", key, term, err)
	}
	if !resp.Succeeded {
		return resp.Responses[1:], nil
	}
	stale := &StaleError{Key: key, Order: f.Order, Term: term}
	if kvs := resp.Responses[0].GetResponseRange().GetKvs(); len(kvs) > 0 {
		stale.Highest = trimZeros(string(kvs[0].Value))
	}
	return nil, stale
}

// Highest returns the number the fence holds for key (a revision or a token,
// as Order says), without leading zeros; ok is false when no write to key
// was admitted yet.
func (f Fence) Highest(ctx context.Context, kv clientv3.KV, key string) (highest string, ok bool, err error) {
	resp, err := kv.Get(ctx, f.FenceKey(key))
	if err != nil {
		return "", false, fmt.Errorf("etcdfence: reading the fence of %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return trimZeros(string(resp.Kvs[0].Value)), true, nil
}

func trimZeros(s string) string {
	if t := strings.TrimLeft(s, "0"); t != "" {
		return t
	}
	return "0"
}
