package io.github.batonsidecar.baton;

/**
 * An application's leader work, run by {@link BatonClient#runWhileLeader} on a thread of its own
 * while this pod leads.
 */
@FunctionalInterface
public interface LeaderWork {
  /**
   * Acts as leader until the term ends. The term's end is told by interrupting this thread: then
   * stop acting as leader and return (an {@link InterruptedException} thrown then is fine).
   *
   * @param term the leader state that began the term: its {@link Leadership#fencingToken()} is
   *     the term's token
   */
  void run(Leadership term) throws Exception;
}
