package io.github.batonsidecar.baton;

import baton.v1.LeaderElectionGrpc;
import baton.v1.LeaderElectionOuterClass;
import baton.v1.LeaderElectionOuterClass.AcknowledgeStepDownRequest;
import baton.v1.LeaderElectionOuterClass.AcknowledgeStepDownResponse;
import baton.v1.LeaderElectionOuterClass.GetLeadershipRequest;
import baton.v1.LeaderElectionOuterClass.WatchLeadershipRequest;
import baton.v1.LeaderElectionOuterClass.WatchLeadershipResponse;
import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * An in-process stand-in for the sidecar whose answers a test scripts: GetLeadership answers
 * {@link #answer}; each WatchLeadership stream is handed to the test ({@link #nextStream}) to send
 * on; AcknowledgeStepDown calls and the bound each question asks for are recorded. For the
 * client's own logic (watch clock, stall, step-down order, requests); behaviour of the real
 * sidecar is tested against the fixture.
 */
final class FakeSidecar implements AutoCloseable {
  final LinkedBlockingQueue<StreamObserver<WatchLeadershipResponse>> streams =
      new LinkedBlockingQueue<>();
  final List<String> calls = new CopyOnWriteArrayList<>(); // "ack CLIENT TOKEN", "watch CLIENT"
  // The deadline each acknowledgement named (negative: none).
  final List<Duration> ackedDeadlines = new CopyOnWriteArrayList<>();
  // The max_valid_for each GetLeadership and WatchLeadership asked for (negative: none).
  final List<Duration> bounds = new CopyOnWriteArrayList<>();
  volatile LeaderElectionOuterClass.Leadership answer =
      LeaderElectionOuterClass.Leadership.getDefaultInstance();

  private final Server server;
  private final ManagedChannel channel;

  FakeSidecar() throws IOException {
    String name = InProcessServerBuilder.generateName();
    server = InProcessServerBuilder.forName(name).directExecutor()
        .addService(new LeaderElectionGrpc.LeaderElectionImplBase() {
          @Override
          public void getLeadership(GetLeadershipRequest req,
              StreamObserver<LeaderElectionOuterClass.Leadership> out) {
            bounds.add(bound(req.hasMaxValidFor(), req.getMaxValidFor()));
            out.onNext(answer);
            out.onCompleted();
          }

          @Override
          public void watchLeadership(WatchLeadershipRequest req,
              StreamObserver<WatchLeadershipResponse> out) {
            bounds.add(bound(req.hasMaxValidFor(), req.getMaxValidFor()));
            calls.add("watch " + req.getClientId());
            streams.add(out);
          }

          @Override
          public void acknowledgeStepDown(AcknowledgeStepDownRequest req,
              StreamObserver<AcknowledgeStepDownResponse> out) {
            ackedDeadlines.add(req.hasValidUntilBoottime()
                ? duration(req.getValidUntilBoottime())
                : Duration.ofNanos(-1));
            calls.add("ack " + req.getClientId() + " " + req.getFencingToken());
            out.onNext(AcknowledgeStepDownResponse.newBuilder().setAcknowledged(true).build());
            out.onCompleted();
          }
        }).build().start();
    channel = InProcessChannelBuilder.forName(name).directExecutor().build();
  }

  /** A client of this fake, with short heartbeats (a silent stream is stuck after 1.2 s). */
  BatonClient.Builder client() {
    return BatonClient.builder().channel(channel).address("127.0.0.1:1")
        .heartbeatInterval(Duration.ofMillis(100))
        .reconnectBackoff(Duration.ofMillis(10), Duration.ofMillis(50));
  }

  /** The next watch stream the client opens. */
  StreamObserver<WatchLeadershipResponse> nextStream() throws InterruptedException {
    StreamObserver<WatchLeadershipResponse> s = streams.poll(5, TimeUnit.SECONDS);
    if (s == null) {
      throw new AssertionError("the client opened no watch stream");
    }
    return s;
  }

  /** A leader state of the Lease ns/lease with token {@code token}, valid for {@code valid}. */
  static LeaderElectionOuterClass.Leadership leader(int token, Duration valid) {
    Duration until = Boottime.floor().plus(valid);
    return LeaderElectionOuterClass.Leadership.newBuilder()
        .setIsLeader(true).setIdentity("me").setHolderIdentity("me").setFencingToken(token)
        .setLeaseName("lease").setLeaseNamespace("ns").setObserved(true)
        .setValidFor(proto(valid)).setValidUntilBoottime(proto(until)).build();
  }

  static WatchLeadershipResponse event(LeaderElectionOuterClass.Leadership l) {
    return WatchLeadershipResponse.newBuilder().setLeadership(l).build();
  }

  /** The bound a question asked for, if it {@code has} one; else -1 ns. */
  private static Duration bound(boolean has, com.google.protobuf.Duration d) {
    return has ? duration(d) : Duration.ofNanos(-1);
  }

  private static Duration duration(com.google.protobuf.Duration d) {
    return Duration.ofSeconds(d.getSeconds(), d.getNanos());
  }

  private static com.google.protobuf.Duration proto(Duration d) {
    return com.google.protobuf.Duration.newBuilder().setSeconds(d.getSeconds())
        .setNanos(d.getNano()).build();
  }

  @Override
  public void close() {
    channel.shutdownNow();
    server.shutdownNow();
  }
}
