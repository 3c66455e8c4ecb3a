# sqlkube: a static binary on a small non-root image.
#   docker build -t sqlkube .
#   docker run -p 8080:8080 -v sqlkube-data:/data sqlkube
# The CA, serving certificate and admin kubeconfig are generated in /data on first start.

FROM golang:1.26 AS build
WORKDIR /src
# Dependencies first, so that source changes reuse the module download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/sqlkube ./cmd/sqlkube

# Alpine rather than scratch: its busybox wget is what the compose health checks call.
FROM alpine:3.22
RUN adduser -D -H -u 10001 sqlkube && mkdir -p /data/pki && chown -R sqlkube:sqlkube /data
COPY --from=build /out/sqlkube /usr/local/bin/sqlkube
USER 10001:10001
WORKDIR /data
VOLUME /data
ENV SQLKUBE_LISTEN=0.0.0.0:8080 \
    SQLKUBE_DB=sqlite:///data/sqlkube.db
EXPOSE 8080
HEALTHCHECK --interval=5s --timeout=3s --retries=12 \
    CMD wget -q --no-check-certificate -O /dev/null https://127.0.0.1:8080/readyz || exit 1
ENTRYPOINT ["/usr/local/bin/sqlkube"]
