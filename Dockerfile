# syntax=docker/dockerfile:1
# One image with both binaries: the operator runs `mcp-operator`, MCPServer pods run `mcp-runtime`.
# Build: docker build -t ghcr.io/kube-mcp/kube-mcp:0.1.0 .

FROM rust:1.95-bookworm AS build
WORKDIR /src
# Dependencies first, so a source change does not rebuild them: build once against stub sources.
COPY Cargo.toml Cargo.lock ./
COPY runtime/Cargo.toml runtime/Cargo.toml
COPY operator/Cargo.toml operator/Cargo.toml
# The benchmark crate is a workspace member the image does not build: its manifest and a stub
# source (kept) are enough for cargo to load the workspace.
COPY bench/Cargo.toml bench/Cargo.toml
RUN mkdir -p runtime/src operator/src bench/src \
 && echo 'fn main() {}' > runtime/src/main.rs && touch runtime/src/lib.rs \
 && echo 'fn main() {}' > operator/src/main.rs && touch operator/src/lib.rs \
 && echo 'fn main() {}' > bench/src/main.rs \
 && cargo build --release --locked -p mcp-runtime -p mcp-operator \
 && rm -rf runtime/src operator/src
COPY runtime runtime
COPY operator operator
# The stub build left newer timestamps on the stub artefacts: touch the real sources.
RUN touch runtime/src/*.rs operator/src/*.rs \
 && cargo build --release --locked -p mcp-runtime -p mcp-operator \
 && install -D -m 0755 target/release/mcp-runtime /out/usr/local/bin/mcp-runtime \
 && install -D -m 0755 target/release/mcp-operator /out/usr/local/bin/mcp-operator

# glibc and CA certificates, no shell, no package manager; runs as uid 65532.
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/ /
USER 65532:65532
EXPOSE 8080 9090
ENTRYPOINT ["mcp-runtime"]
CMD ["--help"]
