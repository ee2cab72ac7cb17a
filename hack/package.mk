# Targets shared by every package in packages/, in the shape of Cozystack's package.mk: each
# package's Makefile sets NAME (the Helm release) and NAMESPACE, then includes this file.
# Cozystack's own package.mk wraps its cozyhr CLI; these use helm and kubectl from the tools cache
# against the cluster of $KUBECONFIG. `make help` in a package lists them.
SHELL := /usr/bin/env bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))/..)
include $(ROOT)/hack/versions.env
TOOLS_DIR ?= $(shell $(ROOT)/hack/tools.sh --print-dir)
HELM ?= $(TOOLS_DIR)/helm-$(HELM_VERSION)/helm
KUBECTL ?= $(TOOLS_DIR)/kubernetes-$(KUBERNETES_VERSION)/kubectl
# Extra values for show/apply/diff, e.g. VALUES=my-values.yaml.
VALUES ?=
HELM_VALUES := $(if $(VALUES),--values $(VALUES))
# Render for the project's Kubernetes, not helm's default (older than the charts' kubeVersion).
KUBE_VERSION := --kube-version $(KUBERNETES_VERSION:v%=%)

.PHONY: help show apply diff delete suspend resume update lint
help: ## Show the targets.
	@grep -hE '^[a-zA-Z_-]+:.*?## ' $(MAKEFILE_LIST) | awk 'BEGIN {FS = ":.*?## "}; {printf "  %-10s %s\n", $$1, $$2}'

show: ## Render the package as it would be installed (helm template).
	$(HELM) template $(NAME) . --namespace $(NAMESPACE) $(KUBE_VERSION) $(HELM_VALUES)

apply: ## Install or upgrade the package as release $(NAME) in $(NAMESPACE).
	$(HELM) upgrade --install $(NAME) . --namespace $(NAMESPACE) --create-namespace $(HELM_VALUES)

diff: ## Show what apply would change in the cluster (kubectl diff of the rendered objects).
	$(HELM) template $(NAME) . --namespace $(NAMESPACE) $(KUBE_VERSION) $(HELM_VALUES) | $(KUBECTL) diff --namespace $(NAMESPACE) -f - || [[ $$? == 1 ]]

delete: ## Uninstall the release.
	$(HELM) uninstall $(NAME) --namespace $(NAMESPACE)

suspend: ## Suspend the Flux HelmRelease that manages this package, to change it by hand.
	$(KUBECTL) patch helmrelease $(NAME) --namespace $(NAMESPACE) --type merge -p '{"spec":{"suspend":true}}'

resume: ## Resume the Flux HelmRelease.
	$(KUBECTL) patch helmrelease $(NAME) --namespace $(NAMESPACE) --type merge -p '{"spec":{"suspend":false}}'

update: ## Re-copy the wrapped chart from charts/ (what `make manifests` at the root does for every package).
	cd $(ROOT) && go run ./hack/cozypackages

lint: ## helm lint --strict.
	$(HELM) lint --strict . --namespace $(NAMESPACE) $(KUBE_VERSION) $(HELM_VALUES)
