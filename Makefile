# Everything a developer or CI runs goes through this file. `make help` lists the targets.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

include hack/versions.env
export

TOOLS_DIR ?= $(shell hack/tools.sh --print-dir)
K8S_BIN := $(TOOLS_DIR)/kubernetes-$(KUBERNETES_VERSION)
CONTROLLER_GEN := $(TOOLS_DIR)/controller-gen-$(CONTROLLER_TOOLS_VERSION)/controller-gen
STATICCHECK := $(TOOLS_DIR)/staticcheck-$(STATICCHECK_VERSION)/staticcheck
HELM := $(TOOLS_DIR)/helm-$(HELM_VERSION)/helm
ENVTEST_ASSETS := $(TOOLS_DIR)/envtest-$(KUBERNETES_VERSION)-etcd-$(ETCD_DEFAULT_VERSION)

# Static, trimmed builds reuse the packages compiled for the Kubernetes tools (see docs/development.md).
export CGO_ENABLED := 0
export GOTOOLCHAIN := local
export GOFLAGS := -trimpath
export KUBEBUILDER_ASSETS := $(ENVTEST_ASSETS)
export ETCD_OPERATOR_TOOLS := $(TOOLS_DIR)

CRD_DIR := charts/etcd-operator/crds
RBAC_DIR := charts/etcd-operator/files/rbac
# Charts whose values.schema.json and README parameter table hack/chartschema writes.
CHARTS := $(patsubst %/,%,$(sort $(dir $(wildcard charts/*/Chart.yaml))))
CHART_DOCS := $(foreach c,$(CHARTS),$(c)/values.schema.json $(c)/README.md)
GENERATED := operator/api tenants/api internal/testenv/crds packages $(CRD_DIR) $(RBAC_DIR) docs/api-reference.md $(CHART_DOCS)
GO_TEST_FLAGS ?= -count=1
E2E_TIMEOUT ?= 60m

.PHONY: help
help: ## Show the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-18s %s\n", $$1, $$2}'

##@ Tools

.PHONY: tools
tools: ## Build every pinned tool from the Go module proxy into the tools cache (only what is missing).
	@hack/tools.sh

##@ Code generation

.PHONY: generate
generate: tools ## Generate deepcopy code from the API types.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./operator/api/... paths=./tenants/api/...

.PHONY: manifests
manifests: tools ## Generate CRDs and RBAC from the controller-gen markers, chart values schemas and README tables.
	$(CONTROLLER_GEN) crd paths=./operator/api/... output:crd:dir=$(CRD_DIR)
	$(CONTROLLER_GEN) rbac:roleName=etcd-operator paths=./operator/... output:rbac:dir=$(RBAC_DIR)
	$(CONTROLLER_GEN) rbac:roleName=etcd-operator-tenants paths=./tenants/... output:rbac:dir=$(RBAC_DIR)/tenants
	go run ./hack/apidocs -crds $(CRD_DIR) -out docs/api-reference.md
	go run ./hack/chartschema $(CHARTS)
	hack/fixture-crds.sh $(CONTROLLER_GEN)
	@# Last: the Cozystack packages copy the charts as the steps above left them.
	go run ./hack/cozypackages

.PHONY: plugin-dist
plugin-dist: ## kubectl-etcd release archives (linux, darwin; amd64, arm64) and their krew manifest into dist/.
	hack/plugin-dist.sh

.PHONY: fmt
fmt: ## gofmt every Go file.
	gofmt -w $$(git ls-files '*.go')

.PHONY: verify
verify: generate manifests ## Fail when generated files are stale or code is not gofmt'ed.
	@unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	if [[ -n "$$unformatted" ]]; then echo "not gofmt'ed:"; echo "$$unformatted"; exit 1; fi
	@stale="$$(git status --porcelain -- $(GENERATED))"; \
	if [[ -n "$$stale" ]]; then \
		echo "generated files are stale or uncommitted; run 'make generate manifests' and commit:"; echo "$$stale"; \
		git --no-pager diff --stat -- $(GENERATED); exit 1; fi
	@echo "verify: generated files and formatting are clean"

##@ Tests

.PHONY: lint
lint: tools ## go vet, staticcheck (e2e files included), helm lint and shellcheck.
	go vet -tags e2e,bench ./...
	$(STATICCHECK) -tags e2e,bench ./...
	$(HELM) lint --strict --kube-version $(KUBERNETES_VERSION:v%=%) $(CHARTS)
	hack/lint-deps.sh
	@# SC1091: scripts source hack/versions.env by a computed path.
	shellcheck -e SC1091 $$(git ls-files '*.sh') .ci/run

.PHONY: test-unit
test-unit: tools ## Unit and envtest integration tests (real kube-apiserver and etcd from the tools cache).
	go test $(GO_TEST_FLAGS) ./...

# Every e2e package, in one list: the local cluster's own tests under e2e/ and the product's
# suites under operator/internal/e2e/ (the table in docs/development.md says what each proves).
E2E_PACKAGES := ./e2e/... ./operator/internal/e2e/...
# The binaries the local cluster and the e2e suites run (built by `make build`), and the image
# tarballs its real nodes import (`make images`).
E2E_ENV = LC_LOCALCLUSTER_BIN=$(CURDIR)/bin/localcluster LC_NODEAGENT_BIN=$(CURDIR)/bin/nodeagent LC_OPERATOR_BIN=$(CURDIR)/bin/manager LC_PLUGIN_BIN=$(CURDIR)/bin/kubectl-etcd LC_MIGRATE_BIN=$(CURDIR)/bin/etcd-migrate LC_OPERATOR_CRASHPOINT_BIN=$(CURDIR)/bin/manager-crashpoint LC_IMAGES_DIR=$(CURDIR)/bin/images

.PHONY: test-e2e
test-e2e: tools build images ## End-to-end tests on the local cluster (needs root).
	hack/e2e-deps.sh
	$(E2E_ENV) go test $(GO_TEST_FLAGS) -tags e2e -timeout $(E2E_TIMEOUT) $(E2E_PACKAGES)

# Fuzz targets of the pure deciders: `make test` runs their seed corpora (testdata/fuzz/ included);
# this runs each one's fuzzer for FUZZTIME.
FUZZTIME ?= 60s
FUZZ_TARGETS := ./operator/internal/membership:FuzzDecide ./operator/internal/rollout:FuzzDecide ./operator/internal/trust:FuzzPlan

.PHONY: fuzz
fuzz: ## Fuzz the deciders (membership, rollout, trust) for FUZZTIME each.
	@for t in $(FUZZ_TARGETS); do echo "fuzz $$t"; go test $${t%%:*} -run '^$$' -fuzz "^$${t##*:}$$" -fuzztime $(FUZZTIME) || exit 1; done

# The long fault campaigns: every reliability campaign injects SOAK_FAULTS faults (make test runs
# a few each); their table is printed at the end and kept in bin/soak-table.md. Then the crash-point
# sweep over every step (SWEEP_FULL=1; make test runs one or two steps per operation).
SOAK_FAULTS ?= 50
SOAK_TIMEOUT ?= 10h

.PHONY: soak
soak: tools build ## The reliability campaigns with SOAK_FAULTS (50) faults each, then the full crash-point sweep; prints their tables (root, hours).
	hack/e2e-deps.sh
	rm -f bin/soak-table.md
	status=0; $(E2E_ENV) RELIABILITY_FAULTS=$(SOAK_FAULTS) RELIABILITY_TABLE=$(CURDIR)/bin/soak-table.md \
		go test -count=1 -v -tags e2e -timeout $(SOAK_TIMEOUT) ./operator/internal/e2e/reliability/ || status=$$?; \
	$(E2E_ENV) SWEEP_FULL=1 go test -count=1 -v -tags e2e -timeout 1h ./operator/internal/e2e/sweep/ || status=$$?; \
	echo; cat bin/soak-table.md 2>/dev/null || echo "no campaign reported"; exit $$status

.PHONY: test
test: verify lint test-unit test-e2e ## Everything CI runs.

# The operator build an upgrade is tested from: by default the last commit before members
# moved onto the operator's active TLS copies and trust bundle. Needs that commit in the clone.
PREVIOUS_REF ?= 8145b25^

.PHONY: test-upgrade
test-upgrade: tools build ## Upgrade from the operator at PREVIOUS_REF to this tree under writes, on the local cluster (root).
	hack/e2e-deps.sh
	rm -rf bin/previous && mkdir -p bin/previous/src
	git archive $(PREVIOUS_REF) | tar -x -C bin/previous/src
	cd bin/previous/src && go build -o ../manager ./operator/cmd/manager
	rm -rf bin/previous/src
	$(E2E_ENV) LC_PREVIOUS_OPERATOR_BIN=$(CURDIR)/bin/previous/manager go test -count=1 -v -tags e2e \
		-run '^TestUpgradeFromPreviousOperator$$' ./operator/internal/e2e/restart/

.PHONY: bench
bench: tools build ## Benchmarks on the local cluster (needs root; prints tables). BENCH_IDLE_CLUSTERS=100 by default.
	hack/e2e-deps.sh
	$(E2E_ENV) go test -run '^$$' -bench . -benchtime 1x -tags e2e ./e2e/...
	$(E2E_ENV) go test -run '^TestBench' -v -count=1 -timeout 90m -tags e2e,bench ./operator/internal/e2e/bench/

##@ Develop

.PHONY: dev
dev: tools build $(if $(DEV_REAL_NODES),images) ## Local cluster + CRDs + operator + a sample 3-member EtcdCluster; Ctrl-C cleans up (root). DEV_REAL_NODES=N adds N real nodes.
	hack/dev.sh

.PHONY: dev-down
dev-down: ## Remove a local cluster left by an interrupted `make dev`.
	bin/localcluster down --name $${DEV_CLUSTER_NAME:-dev}

##@ Build

.PHONY: vendor-charts
vendor-charts: ## Pull the third-party charts pinned in Chartfile.yaml into third_party/charts (needs the chart repositories).
	go run ./hack/chartfile -helm $(HELM)

# Stripped (-s) as the Dockerfile builds the manager, so `make images` packs bin/manager as it is.
.PHONY: build
build: ## Build the binaries into bin/ (and the operator that stops at crash points, for e2e's sweep).
	go build -ldflags=-s -o bin/ ./operator/cmd/... ./e2e/cmd/...
	go build -tags crashpoint -o bin/manager-crashpoint ./operator/cmd/manager

.PHONY: images
images: build tools ## OCI image tarballs (operator, etcd per ETCD_VERSIONS, pause) into bin/images/, for ctr import; no Docker.
	go run ./hack/images -out bin/images -manager bin/manager -chart charts/etcd-operator -tools $(TOOLS_DIR) -etcd-versions '$(ETCD_VERSIONS)'
