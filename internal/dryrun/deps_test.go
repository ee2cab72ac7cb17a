package dryrun

// These imports keep the modules whose CRDs the harness uses in go.mod (and downloaded before the
// test runs): cert-manager's and VPA's CRD YAML is read from their module folders, and
// prometheus-operator's types feed hack/fixture-crds.sh. Nothing else of them is used.
import (
	_ "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	_ "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	_ "k8s.io/autoscaler/vertical-pod-autoscaler/pkg/apis/autoscaling.k8s.io/v1"
)
