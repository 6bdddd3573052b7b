# baton, the leader-election sidecar, as a container image.
#
#   docker build -t registry.example.com/baton:0.1.0 .
#
# Stage 1 builds on Debian 12 with exactly the packages and commands the
# project's scripts use (scripts/lib.sh, README "Building"), so the image
# contains the binary CI tested. Stage 2 is bookworm-slim plus only the
# shared libraries that binary links; tests/deploy checks the list below
# against `ldd build/bin/baton`, so a new dependency cannot be forgotten.

FROM debian:bookworm AS build
WORKDIR /src
# The package list first, on its own layer: it changes rarely.
COPY scripts/lib.sh scripts/lib.sh
RUN bash -c 'source scripts/lib.sh && ensure_apt_packages' && rm -rf /var/lib/apt/lists/*
COPY . .
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF \
 && cmake --build build --target baton \
 && install -D --strip build/bin/baton /opt/baton/bin/baton

FROM debian:bookworm-slim
# Runtime libraries only: the packages of every library `ldd` reports for the
# binary (checked by tests/deploy/dockerfile_test.go). No CA bundle: baton
# trusts only the cluster CA from its ServiceAccount mount or kubeconfig.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libc6 libgcc-s1 libstdc++6 zlib1g libssl3 \
      libabsl20220623 libprotobuf32 libgrpc29 libgrpc++1.51 libre2-9 libc-ares2 \
      libboost-json1.81.0 libspdlog1.10 libfmt9 libyaml-cpp0.7 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/baton/bin/baton /usr/local/bin/baton
# A numeric UID/GID (no entry in /etc/passwd needed) so Kubernetes'
# runAsNonRoot can verify it; the manifests in deploy/ use the same.
USER 65532:65532
# --metrics-addr in deploy/ (probes and /metrics). The application's HTTP and
# gRPC API (4040, 4041) stay on the Pod's loopback.
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/baton"]
