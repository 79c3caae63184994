# Build quizd, then run it from a slim image. `docker compose up` uses this with PostgreSQL.
FROM rust:1-bookworm AS build
WORKDIR /src
# Everything the build reads: the workspace's packages (the server's src/ and crates/), the
# migrations (embedded), the web front-end (embedded by src/frontend.rs), the content, and tests/
# (Cargo.toml names the API test target).
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY crates crates
COPY migrations migrations
COPY web web
COPY tests tests
COPY content content
# The image needs no debug line tables (the release profile keeps them for `bench/`'s perf
# profiles): stripped, the binary is a fraction of the size.
ENV CARGO_PROFILE_RELEASE_DEBUG=false \
    CARGO_PROFILE_RELEASE_STRIP=symbols
RUN cargo build --release --locked --bin quizd

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home-dir /srv/quizd quizd
COPY --from=build /src/target/release/quizd /usr/local/bin/quizd
COPY content /srv/quizd/content
WORKDIR /srv/quizd
USER quizd
ENV QUIZD_BIND=0.0.0.0:8080 \
    QUIZD_LOG_FORMAT=json
EXPOSE 8080
ENTRYPOINT ["quizd"]
CMD ["serve"]
