# Build quizd, then run it from a slim image. `docker compose up` uses this with PostgreSQL.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src src
COPY migrations migrations
COPY tests tests
COPY content content
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
