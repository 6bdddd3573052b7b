# baton, the leader-election sidecar, as a container image.
#
#   docker build --build-arg BATON_COMMIT=$(git rev-parse HEAD) \
#     -t ghcr.io/baton-sidecar/baton:0.2.0 .
#
# Stage 1 builds on Debian 12 with exactly the packages and commands the
# project's scripts use (scripts/lib.sh, README "Building"), so the image
# contains the binary CI tested: static, glibc included (BATON_STATIC, the
# default). Stage 2 is that one file on an empty base; tests/deploy checks
# that the binary needs no shared library and that the stage adds nothing else.

FROM debian:bookworm AS build
WORKDIR /src
# The package list first, on its own layer: it changes rarely.
COPY scripts/lib.sh scripts/lib.sh
RUN bash -c 'source scripts/lib.sh && ensure_apt_packages' && rm -rf /var/lib/apt/lists/*
COPY . .
# .git is not in the build context: the commit `baton --version` reports.
ARG BATON_COMMIT=unknown
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
      -DBATON_COMMIT=${BATON_COMMIT} \
 && cmake --build build --target baton \
 && install -D --strip build/bin/baton /opt/baton/bin/baton

# Nothing but the binary. No CA bundle: baton trusts only the cluster CA from
# its ServiceAccount mount or kubeconfig. No /etc files: the kubelet mounts
# /etc/hosts and /etc/resolv.conf, and glibc's built-in files and dns lookup
# needs no nsswitch.conf. No shell, no package manager.
FROM scratch
COPY --from=build /opt/baton/bin/baton /baton
# A numeric UID/GID (no entry in /etc/passwd needed) so Kubernetes'
# runAsNonRoot can verify it; the manifests in deploy/ use the same.
USER 65532:65532
# --metrics-addr in deploy/ (probes and /metrics). The application's HTTP and
# gRPC API (4040, 4041) stay on the Pod's loopback.
EXPOSE 9090
ENTRYPOINT ["/baton"]
