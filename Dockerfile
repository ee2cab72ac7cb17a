# The operator image: one static binary at /manager (the manager, and the snapshot and restore agents
# its Pods run as `/manager snapshot-agent` etc.). Not used by `make test` (no Docker here); the kind
# e2e (e2e/kind/run.sh) and releases build it. `make images` writes the same image without Docker
# (internal/ociimage; TestDockerfileDescribesTheOperatorImage fails when the two differ).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags=-s -o /manager ./operator/cmd/manager

FROM gcr.io/distroless/static:nonroot
COPY --from=build /manager /manager
USER 65532:65532
ENTRYPOINT ["/manager"]
