#!/usr/bin/env bash
# Generates, from Go types, the third-party CRDs that envtest needs and that no Go module ships as
# YAML: Kamaji's (our own minimal types in tenants/api/kamaji), VictoriaMetrics' VMServiceScrape (our own
# types in internal/fixtureapi/victoriametrics; its module is not on the proxy), the legacy etcd.aenix.io
# EtcdCluster (our own types in operator/internal/migrate/legacy), Flux's helm-controller and
# source-controller (their api modules hold only Go), and prometheus-operator's scrape kinds (its api
# module holds only Go; the CRD YAML lives in the root module, too heavy to require). cert-manager and
# VPA ship their CRD YAML in their modules, which tests read from the module cache instead.
#
# Fixtures only: in a real cluster each project's own chart installs its CRDs. Descriptions are
# dropped from the third-party ones (maxDescLen=0) to keep the fixtures small; validation is intact.
#
# Usage: hack/fixture-crds.sh CONTROLLER_GEN   (run by `make manifests`)
set -euo pipefail
CONTROLLER_GEN="$1"
OUT=internal/testenv/crds
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

gen() { # NAME OPTIONS PATHS...: regenerate $OUT/NAME from scratch so removed kinds disappear
	local name="$1" opts="$2"
	shift 2
	rm -rf "${OUT:?}/$name"
	mkdir -p "$OUT/$name"
	"$CONTROLLER_GEN" "$opts" "${@/#/paths=}" output:crd:dir="$OUT/$name"
}

gen kamaji crd ./tenants/api/kamaji/...
gen victoriametrics crd:maxDescLen=0 ./internal/fixtureapi/victoriametrics/...
gen legacy crd:maxDescLen=0 ./operator/internal/migrate/legacy/...
gen flux crd:maxDescLen=0 github.com/fluxcd/helm-controller/api/v2 github.com/fluxcd/source-controller/api/v1

# prometheus-operator's v1 package also holds Prometheus, Alertmanager and ThanosRuler (hundreds of
# KiB each); keep only the kinds the charts may render.
"$CONTROLLER_GEN" crd:maxDescLen=0 paths=github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1 \
	output:crd:dir="$tmp/monitoring"
rm -rf "${OUT:?}/monitoring"
mkdir -p "$OUT/monitoring"
for kind in servicemonitors podmonitors prometheusrules; do
	cp "$tmp/monitoring/monitoring.coreos.com_$kind.yaml" "$OUT/monitoring/"
done
