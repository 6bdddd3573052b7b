// Package baton is the Go client of the baton leader-election sidecar: it
// asks the sidecar beside the application, over gRPC on localhost, whether
// this pod leads, for how long that is guaranteed, and which fencing token to
// tag writes with.
//
// A Client connects lazily and reconnects by itself when the sidecar
// restarts. Every call fails fast with an error that matches
// ErrSidecarUnavailable while no sidecar answers.
//
//	c, err := baton.New() // 127.0.0.1:4041, or $BATON_GRPC_ADDR
//	if err != nil { ... }
//	defer c.Close()
//	err = c.Fenced(ctx, 2*time.Second, func(ctx context.Context, token int32) error {
//		return store.Put(ctx, key, value, token) // the store refuses stale tokens
//	})
//
// # Fencing
//
// Leadership can end at any moment (a pause, a partition), and a deposed
// leader may not know yet. The fencing token protects the data anyway: it is
// the Lease's leaseTransitions at this holder's acquisition, so every new
// leader's token is higher than every earlier leader's. The pattern:
//
//  1. The writer gets the token with RequireLeader (or Fenced) right before
//     each write, asking for as much remaining validity as the write needs.
//  2. It sends the token with the write (a field in the request, or the
//     TokenHeader HTTP header, see SetToken).
//  3. The store keeps the highest token it has accepted (a Fence) and refuses
//     a write that carries a lower one, atomically with the write itself.
//
// Step 3 is what makes it safe: 1 alone cannot stop a write that was already
// on its way when leadership ended. Leadership.FencingRevision is a second
// token that survives Lease deletion on Kubernetes 1.35 or later (see
// RevisionFence): a Revision, an integer of up to 128 bits (a
// resourceVersion, KEP-5504), compared with Revision.Compare and carried as
// decimal digits (RevisionHeader, Revision.String, ParseRevision).
//
// The store fences in modules of their own (pgfence for PostgreSQL,
// etcdfence, kubefence for ConfigMaps) keep the highest term in the store
// itself, and share this package's words for it: a Term (TermOf a leader
// answer), a FenceOrder saying which of its numbers they compare, and
// refusals that unwrap to a StaleTokenError or a StaleRevisionError
// (FenceOrder.StaleError; pgfence's is a StaleTermError).
//
// # Leader work and the step-down handshake
//
// RunWhileLeader runs the application's leader work in a context that ends
// with the term and acknowledges the step-down once the work has returned
// (AcknowledgeStepDown), so a sidecar that shuts down or resigns can hand
// over at once instead of waiting for its last promise to this client to
// lapse.
package baton

//go:generate ../generate.sh
