# gavel container image: build on debian:bookworm, run on debian:bookworm-slim with
# only the runtime shared libraries, as the non-root user 65532. The library lists
# follow the Makefile's PKGS (it links gnutls too, libmicrohttpd's TLS library)
# and ./gavel's allocator, jemalloc.
#   docker build -t gavel:dev .
#   docker run --rm gavel:dev version
# The Deployment (manifests/deployment.yaml) runs `gavel serve ...` with a read-only
# root filesystem; gavel writes only to /tmp and its TLS dir (emptyDir volumes).

FROM debian:bookworm AS build
WORKDIR /src
# The build packages of scripts/install-deps.sh (the project's one list).
COPY scripts/install-deps.sh scripts/
RUN sh scripts/install-deps.sh build && rm -rf /var/lib/apt/lists/*
COPY . .
RUN make -j"$(nproc)" gavel && ./gavel version

FROM debian:bookworm-slim
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libjansson4 libyaml-0-2 libpcre2-8-0 libssl3 libcurl4 libmicrohttpd12 \
      libgnutls30 libjemalloc2 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/gavel /usr/local/bin/gavel
# Fails the build when a runtime library is missing.
RUN ldd /usr/local/bin/gavel | (! grep 'not found') && /usr/local/bin/gavel version
USER 65532:65532
EXPOSE 9443 8000
ENTRYPOINT ["/usr/local/bin/gavel"]
CMD ["serve"]
