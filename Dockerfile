# syntax=docker/dockerfile:1
# One image with both binaries: the operator runs `mcp-operator`, MCPServer pods run `mcp-runtime`.
# Build: docker build -t ghcr.io/kube-mcp/kube-mcp:0.1.0 .   (releases: .github/workflows/release.yml)

# jemalloc fixes its page size at build time and fails on kernels with larger pages. arm64 kernels
# use 4, 16 or 64 KiB pages, so arm64 builds use 64 KiB (lg 16), which runs on all three.
ARG TARGETARCH
FROM rust:1.95-bookworm AS build-amd64
ENV JEMALLOC_SYS_WITH_LG_PAGE=12
FROM rust:1.95-bookworm AS build-arm64
ENV JEMALLOC_SYS_WITH_LG_PAGE=16
FROM build-${TARGETARCH} AS build
WORKDIR /src
# Dependencies first, so a source change does not rebuild them: build once against stub sources.
# Every workspace member's manifest is copied here (the lint stage's tests/dockerfile-members.py
# compares these lines with `cargo metadata`), or cargo cannot load the workspace.
COPY Cargo.toml Cargo.lock ./
COPY runtime/Cargo.toml runtime/Cargo.toml
COPY runtime/protocol/Cargo.toml runtime/protocol/Cargo.toml
COPY runtime/declaration/Cargo.toml runtime/declaration/Cargo.toml
COPY runtime/server/Cargo.toml runtime/server/Cargo.toml
COPY runtime/http/Cargo.toml runtime/http/Cargo.toml
COPY runtime/openapi/Cargo.toml runtime/openapi/Cargo.toml
COPY operator/Cargo.toml operator/Cargo.toml
# The benchmark crate is a workspace member the image does not build: its manifest and a stub
# source (kept) are enough for cargo to load the workspace.
COPY bench/Cargo.toml bench/Cargo.toml
RUN for lib in runtime/protocol runtime/declaration runtime/server runtime/http runtime/openapi operator; do \
      mkdir -p "$lib/src" && touch "$lib/src/lib.rs"; \
    done \
 && for bin in runtime operator bench; do \
      mkdir -p "$bin/src" && echo 'fn main() {}' > "$bin/src/main.rs"; \
    done \
 && cargo build --release --locked -p mcp-runtime -p mcp-operator \
 && rm -rf runtime operator
COPY runtime runtime
COPY operator operator
# The stub build left newer timestamps on the stub artefacts: touch the real sources.
RUN find runtime operator -name '*.rs' -exec touch {} + \
 && cargo build --release --locked -p mcp-runtime -p mcp-operator \
 && install -D -m 0755 target/release/mcp-runtime /out/usr/local/bin/mcp-runtime \
 && install -D -m 0755 target/release/mcp-operator /out/usr/local/bin/mcp-operator

# glibc and CA certificates, no shell, no package manager; runs as uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
LABEL org.opencontainers.image.title="kube-mcp" \
      org.opencontainers.image.description="mcp-operator and mcp-runtime: MCP servers declared as Kubernetes resources" \
      org.opencontainers.image.source="https://github.com/kube-mcp/kube-mcp" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/ /
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["mcp-runtime"]
CMD ["--help"]
