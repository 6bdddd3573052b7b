// Package kubefence fences writes of a Kubernetes ConfigMap with the term a
// baton leader was given: a write lands only if no write of a newer term
// was made to the ConfigMap before it.
//
// The ConfigMap carries its fence in an annotation (DefaultAnnotation): the
// fencing revision (or token) of the term that wrote it last. A fenced write
// is optimistic concurrency around that annotation:
//
//  1. Get the ConfigMap. If it is missing, Create it with the annotation
//     (AlreadyExists: someone else created it first; go to 1).
//  2. If its annotation holds a newer term, refuse: *StaleError.
//  3. Server-side apply the caller's configuration plus the annotation,
//     under the term's field manager, with the resourceVersion read in 1 as
//     metadata.resourceVersion: a precondition. If any write landed since
//     the read, the API server answers 409 Conflict and nothing changes; go
//     to 1 and compare again.
//
// So a stale term is refused whenever a newer one wrote before it, and no
// write can slip between the comparison and the write: the precondition is
// the atomic part, and the comparison is in the writer. The field manager
// does not order anything. Server-side apply's ownership conflicts are
// symmetric (a newer term applying without force conflicts with fields an
// older term owns, exactly as the reverse) and force overrides them
// whatever the terms; the apply is forced, and the per-term manager
// (baton.Leadership.FieldManager) records in managedFields which term wrote
// which field.
//
// Only writes through this package are fenced: an Update or Apply that
// skips it (kubectl, another controller) is not, and it may remove or lower
// the annotation. To have the API server refuse such writes too, add a
// ValidatingAdmissionPolicy comparing the annotation of object and
// oldObject (docs/fencing.md).
//
// Which order (see docs/fencing.md): the fencing revision, the
// resourceVersion of the write that won the term, keeps growing across
// leaders even when the Lease is deleted and recreated (leaseTransitions,
// the fencing token, may start again at 0). It is comparable on Kubernetes
// 1.35 or later (KEP-5504) and is this package's default, ByRevision. On
// older servers fence ByToken. One order per annotation.
package kubefence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/baton-sidecar/baton/clients/go/baton"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
)

// DefaultAnnotation is the annotation holding the fence when
// Fence.Annotation is empty.
const DefaultAnnotation = "baton.dev/fencing-revision"

// Fence fences ConfigMap writes through one annotation. The zero value
// fences by revision through DefaultAnnotation; it holds no state and is
// safe for concurrent use.
type Fence struct {
	// Annotation holds the fence; DefaultAnnotation when empty.
	Annotation string
	// Order is what the fence compares; ByRevision when zero.
	Order Order

	// afterRead, when set (by tests), runs between the read and the write.
	afterRead func()
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

func (f Fence) annotation() string {
	if f.Annotation == "" {
		return DefaultAnnotation
	}
	return f.Annotation
}

// Term is what a leader tags its writes with: the fencing numbers of a
// baton.Term, and the field manager it applies under.
type Term struct {
	// Revision is the fencing revision (baton.Leadership.FencingRevision),
	// an integer of up to 128 bits.
	Revision baton.Revision
	// Token is the fencing token (baton.Leadership.FencingToken).
	Token int32
	// FieldManager is the server-side-apply field manager of the term
	// (baton.Leadership.FieldManager). Required.
	FieldManager string
}

// TermOf returns the term of a leader answer. Take it from the answer that
// said this pod leads, right before the write.
func TermOf(l baton.Leadership) Term {
	return Term{Revision: l.FencingRevision, Token: l.FencingToken, FieldManager: l.FieldManager()}
}

// String returns t's fencing numbers as baton.Term writes them.
func (t Term) String() string { return t.fencing().String() }

// fencing returns the fencing numbers of t, what the fence compares.
func (t Term) fencing() baton.Term { return baton.Term{Revision: t.Revision, Token: t.Token} }

// ErrNoRevision is the answer of a Fence ordered ByRevision to a term
// without a fencing revision (0): the sidecar did not know one.
var ErrNoRevision = errors.New("kubefence: the term has no fencing revision (0); fence ByToken where the sidecar reports none")

// Value returns what the annotation holds once term is admitted: the
// compared number in decimal, without leading zeros. Errors are the
// term's (ErrNoRevision, a negative token).
func (f Fence) Value(term Term) (string, error) {
	n, err := f.number(term)
	if err != nil {
		return "", err
	}
	return n.String(), nil
}

// number is the number the fence compares for term, as Value describes it.
// A token is held as a baton.Revision too: both are integers that the
// annotation gives in decimal, compared alike.
func (f Fence) number(term Term) (baton.Revision, error) {
	if f.Order == ByToken {
		if term.Token < 0 {
			return baton.Revision{}, fmt.Errorf("kubefence: fencing token %d is negative", term.Token)
		}
		return baton.ParseRevision(strconv.Itoa(int(term.Token)))
	}
	if term.Revision == (baton.Revision{}) {
		return baton.Revision{}, ErrNoRevision
	}
	return term.Revision, nil
}

// StaleError is the refusal of a write whose term is older than the one
// that wrote the ConfigMap last: the writer is a deposed leader, and its
// write did not land. Its Unwrap gives the baton package's error for the
// same refusal (a *baton.StaleTokenError when ordered ByToken, a
// *baton.StaleRevisionError when ordered ByRevision).
type StaleError struct {
	Namespace, Name string
	Order           Order
	// Term is the refused term. Highest is the number the annotation holds
	// (a revision or a token, as Order says), in decimal digits.
	Term    Term
	Highest string
}

func (e *StaleError) Error() string {
	return fmt.Sprintf("kubefence: stale write to ConfigMap %s/%s refused (by %v): term %v; a write of %v %s was already made",
		e.Namespace, e.Name, e.Order, e.Term, e.Order, e.Highest)
}

// Unwrap returns the baton package's error for this refusal
// (baton.FenceOrder.StaleError), or nil when Highest is not a number of the
// Order's kind (an annotation written by something else).
func (e *StaleError) Unwrap() error {
	highest, err := e.Order.ParseTerm(e.Highest)
	if err != nil {
		return nil
	}
	return e.Order.StaleError(e.Term.fencing(), highest)
}

// ApplyConfigMap writes cm (its name and namespace set; the namespace must
// be cms's) under term, and returns the ConfigMap as written. When the
// ConfigMap's annotation holds a newer term it returns a *StaleError and
// writes nothing. An equal term is admitted: the same leader writing again.
// A ConfigMap that does not exist is created, with term's field manager.
//
// The write is a forced server-side apply of cm plus the annotation under
// term.FieldManager, with the resourceVersion of the read that compared
// the annotation as its precondition; on 409 Conflict (any write since that
// read) it reads and compares again, as long as ctx allows. cm is not
// modified. The annotation and any field cm leaves out are as the apply
// semantics say: fields this manager applied before and cm now omits are
// removed.
func (f Fence) ApplyConfigMap(ctx context.Context, cms typedcorev1.ConfigMapInterface,
	cm *applycorev1.ConfigMapApplyConfiguration, term Term) (*corev1.ConfigMap, error) {
	n, err := f.number(term)
	if err != nil {
		return nil, err
	}
	value := n.String()
	if term.FieldManager == "" {
		return nil, errors.New("kubefence: the term has no field manager (baton.Leadership.FieldManager)")
	}
	if cm == nil || cm.Name == nil || *cm.Name == "" {
		return nil, errors.New("kubefence: the ConfigMap has no name")
	}
	name := *cm.Name
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		current, err := cms.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			created, err := f.create(ctx, cms, cm, term, value)
			if apierrors.IsAlreadyExists(err) {
				continue // created by another writer since the read: compare with it
			}
			return created, err
		}
		if err != nil {
			return nil, fmt.Errorf("kubefence: reading ConfigMap %s: %w", name, err)
		}
		if held, ok := current.Annotations[f.annotation()]; ok {
			h, err := baton.ParseRevision(held)
			if err != nil {
				return nil, fmt.Errorf("kubefence: ConfigMap %s/%s: annotation %s holds %q, not a fence",
					current.Namespace, name, f.annotation(), held)
			}
			if h.Compare(n) > 0 {
				return nil, &StaleError{Namespace: current.Namespace, Name: name, Order: f.Order, Term: term, Highest: held}
			}
		}
		if f.afterRead != nil {
			f.afterRead()
		}
		ac, err := withFence(cm, f.annotation(), value)
		if err != nil {
			return nil, err
		}
		ac.WithResourceVersion(current.ResourceVersion)
		applied, err := cms.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: term.FieldManager, Force: true})
		if apierrors.IsConflict(err) {
			continue // written since the read: compare again
		}
		if err != nil {
			return nil, fmt.Errorf("kubefence: applying ConfigMap %s under term %v: %w", name, term, err)
		}
		return applied, nil
	}
}

// create creates cm with the fence, failing with AlreadyExists if another
// writer created it first.
func (f Fence) create(ctx context.Context, cms typedcorev1.ConfigMapInterface,
	cm *applycorev1.ConfigMapApplyConfiguration, term Term, value string) (*corev1.ConfigMap, error) {
	raw, err := json.Marshal(cm)
	if err != nil {
		return nil, fmt.Errorf("kubefence: encoding ConfigMap %s: %w", *cm.Name, err)
	}
	var obj corev1.ConfigMap
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("kubefence: decoding ConfigMap %s: %w", *cm.Name, err)
	}
	obj.ResourceVersion = ""
	if obj.Annotations == nil {
		obj.Annotations = map[string]string{}
	}
	obj.Annotations[f.annotation()] = value
	created, err := cms.Create(ctx, &obj, metav1.CreateOptions{FieldManager: term.FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("kubefence: creating ConfigMap %s under term %v: %w", *cm.Name, term, err)
	}
	return created, err
}

// withFence returns a copy of cm with the fence annotation set.
func withFence(cm *applycorev1.ConfigMapApplyConfiguration, annotation, value string) (*applycorev1.ConfigMapApplyConfiguration, error) {
	raw, err := json.Marshal(cm)
	if err != nil {
		return nil, fmt.Errorf("kubefence: encoding ConfigMap %s: %w", *cm.Name, err)
	}
	var ac applycorev1.ConfigMapApplyConfiguration
	if err := json.Unmarshal(raw, &ac); err != nil {
		return nil, fmt.Errorf("kubefence: decoding ConfigMap %s: %w", *cm.Name, err)
	}
	ac.WithAnnotations(map[string]string{annotation: value})
	return &ac, nil
}
