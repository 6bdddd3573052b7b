package baton

import (
	"context"
)

// RunWhileLeader runs work whenever this pod leads, and gives the sidecar
// its acknowledgement when the work ends, so a graceful handover (sidecar
// shutdown or Resign) takes milliseconds instead of a renew deadline:
//
//	err := c.RunWhileLeader(ctx, func(ctx context.Context, l baton.Leadership) error {
//		for ctx.Err() == nil {
//			write(ctx, l.FencingToken) // stop when ctx ends
//		}
//		return ctx.Err()
//	})
//
// It watches the sidecar (see Watch). When a state says this pod leads, it
// calls work on a goroutine of its own with the leader state that began the
// term and a context that is cancelled as soon as the term ends: a state
// says not leader or stepping down, the fencing token or the sidecar
// changes, the guarantee runs out without news from the sidecar, the
// sidecar cannot be reached, or ctx ends. It then waits for work to return,
// and only then calls AcknowledgeStepDown for the term, which names the
// latest deadline this Client was answered with. Errors of that
// acknowledgement are dropped: without it the handover is only slower. A
// term whose work returned on its own is acknowledged again when it ends,
// covering the answers received meanwhile.
//
// An acknowledgement whose call failed may still reach the sidecar later.
// Until then, work does not start again in its term on an answer that ends
// by the deadline it named (such an answer was given between the same two
// renews, and that late acknowledgement would void its promise), only on a
// later one: after the sidecar's next renew.
//
// work must stop acting as leader when its context ends, and return. An
// error it returns after its context was cancelled is dropped. If work
// returns while the term goes on, the term is acknowledged: with nil, work
// runs again at the next term; with an error, RunWhileLeader returns that
// error. Otherwise RunWhileLeader returns ctx's error once ctx ends and any
// running work has returned and been acknowledged.
//
// The acknowledgement speaks for this Client (its ClientID): while
// RunWhileLeader runs, do not act as leader on this Client's other answers
// (Leadership, RequireLeader, Fenced) outside work.
func (c *Client) RunWhileLeader(ctx context.Context, work func(ctx context.Context, l Leadership) error) error {
	type state struct {
		l   Leadership
		err error
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	states := make(chan state)
	go func() {
		// Every message, heartbeats too: after an acknowledgement in doubt,
		// work waits for an answer with a later deadline than it named.
		for l, err := range c.watch(wctx, true) {
			select {
			case states <- state{l, err}:
			case <-wctx.Done():
				return
			}
		}
	}()

	var (
		term       Leadership         // the state the running work began on
		cancelWork context.CancelFunc // non-nil while work runs
		returned   chan error         // work's result
		finished   *Leadership        // a term whose work ended on its own
		inDoubt    heardTerm          // the latest acknowledgement whose call failed
	)
	// acknowledge gives the term of l back once work has returned; it is
	// sent even when ctx has ended, which is when a fast handover matters
	// most.
	acknowledge := func(l Leadership) {
		_, upTo, err := c.acknowledge(context.WithoutCancel(ctx), l.FencingToken)
		if err != nil && upTo > 0 {
			if inDoubt.identity != l.Identity || inDoubt.token != l.FencingToken {
				inDoubt = heardTerm{identity: l.Identity, token: l.FencingToken}
			}
			inDoubt.deadline = max(inDoubt.deadline, upTo)
		}
	}
	// end cancels the running work, waits for it and acknowledges the term.
	end := func() {
		cancelWork()
		<-returned
		cancelWork = nil
		acknowledge(term)
	}
	sameTerm := func(a, b Leadership) bool {
		return a.Identity == b.Identity && a.FencingToken == b.FencingToken
	}
	// voidable: a late acknowledgement in doubt could void l's promise.
	voidable := func(l Leadership) bool {
		return l.sidecarDeadline > 0 && l.Identity == inDoubt.identity &&
			l.FencingToken == inDoubt.token && l.sidecarDeadline <= inDoubt.deadline
	}
	for {
		select {
		case <-ctx.Done():
			if cancelWork != nil {
				end()
			}
			return ctx.Err()
		case err := <-returned:
			cancelWork()
			cancelWork = nil
			acknowledge(term)
			if err != nil {
				return err
			}
			done := term
			finished = &done
		case s := <-states:
			leading := s.err == nil && s.l.IsLeader && !s.l.SteppingDown && s.l.Remaining() > 0
			if cancelWork != nil && (!leading || !sameTerm(s.l, term)) {
				end()
			}
			if !leading {
				if s.err == nil && finished != nil && sameTerm(s.l, *finished) {
					// Heartbeats promised this client more since the work
					// returned; nothing acts on them.
					acknowledge(*finished)
				}
				finished = nil
			}
			if leading && cancelWork == nil && (finished == nil || !sameTerm(s.l, *finished)) &&
				!voidable(s.l) {
				term, finished = s.l, nil
				var tctx context.Context
				tctx, cancelWork = context.WithCancel(ctx)
				returned = make(chan error, 1)
				go func(l Leadership) { returned <- work(tctx, l) }(term)
			}
		}
	}
}
