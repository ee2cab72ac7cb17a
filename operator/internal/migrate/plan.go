package migrate

import (
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/migrate/legacy"
)

// The steps of an adoption, in order. Each is idempotent: a run killed after any of them and
// run again completes the rest, and a run after the last changes nothing.
const (
	StepBackup              = "backup"
	StepCreateCluster       = "create-cluster"
	StepCreateMembers       = "create-members"
	StepOrphanStatefulSet   = "orphan-statefulset"
	StepOrphanLegacyCluster = "orphan-legacy-cluster"
	StepRemoveLegacyObjects = "remove-legacy-objects"
	StepReownServices       = "reown-services"
	StepReownClaims         = "reown-claims"
	StepReownPods           = "reown-pods"
	StepHandOver            = "hand-over"
)

// Steps are the step names in order.
var Steps = []string{StepBackup, StepCreateCluster, StepCreateMembers, StepOrphanStatefulSet, StepOrphanLegacyCluster,
	StepRemoveLegacyObjects, StepReownServices, StepReownClaims, StepReownPods, StepHandOver}

// Names are the objects an adoption touches, read from the legacy cluster or, once it is gone,
// from the adopted one.
type Names struct {
	Namespace, Cluster, StatefulSet, ConfigMap, PDB, Headless, Client string
	Members                                                           []string
}

func (n Names) describe(step string) string {
	members := strings.Join(n.Members, ", ")
	switch step {
	case StepBackup:
		return "stream a snapshot of etcd to the backup file and verify its sha256 and etcd's own hash"
	case StepCreateCluster:
		return fmt.Sprintf("create EtcdCluster %s (held by annotation %s, so the operator leaves it alone) and record the cluster ID and token in its status", n.Cluster, v1alpha2.AnnotationAdopting)
	case StepCreateMembers:
		return fmt.Sprintf("create EtcdMembers %s with their etcd member IDs, peer URLs, Pods and claims in status", members)
	case StepOrphanStatefulSet:
		return fmt.Sprintf("delete StatefulSet %s with propagationPolicy=Orphan (its Pods keep running) and wait until it is gone", n.StatefulSet)
	case StepOrphanLegacyCluster:
		return fmt.Sprintf("delete the %s EtcdCluster %s with propagationPolicy=Orphan and wait until it is gone", legacy.GroupVersion, n.Cluster)
	case StepRemoveLegacyObjects:
		return fmt.Sprintf("delete ConfigMap %s and the legacy PodDisruptionBudget %s (the operator keeps its own)", n.ConfigMap, n.PDB)
	case StepReownServices:
		return fmt.Sprintf("make EtcdCluster %s the controller of Services %s and %s: names, ClusterIP and selectors unchanged", n.Cluster, n.Headless, n.Client)
	case StepReownClaims:
		return fmt.Sprintf("make each EtcdMember the controller of its PVC (data-%s) and label it", members)
	case StepReownPods:
		return fmt.Sprintf("make each EtcdMember the controller of its Pod (%s) and add the operator's labels; no Pod restarts", members)
	case StepHandOver:
		return fmt.Sprintf("remove annotation %s: the operator manages the cluster from now on", v1alpha2.AnnotationAdopting)
	}
	return step
}

// Render writes the plan of a dry run: what was found, what is dropped or blocks, the objects to
// create, and the steps.
func Render(w io.Writer, st *State, t *Translation, n Names) error {
	p := &printer{w: w}
	p.f("Cluster %s/%s (%s)\n", st.Namespace, st.Name, legacy.GroupVersion)
	if t != nil {
		renderLive(p, st.Input.Live)
		renderFindings(p, t.Findings)
		if err := renderObjects(p, t); err != nil {
			return err
		}
	} else {
		p.f("  the legacy object is gone: an earlier run got past %s; the adopted objects are used\n", StepOrphanLegacyCluster)
	}
	p.f("\nSteps of --apply:\n")
	for i, s := range Steps {
		p.f("  %2d. %-22s %s\n", i+1, s, n.describe(s))
	}
	return p.err
}

func renderLive(p *printer, l Live) {
	p.f("  etcd cluster %s, auth %s, %d members:\n", etcd.FormatID(l.ClusterID), onOff(l.AuthEnabled), len(l.Members))
	for _, m := range l.Members {
		role := "voter"
		if m.IsLearner {
			role = "learner"
		}
		pod := "no Pod"
		if m.Pod != nil {
			pod = "Pod " + m.Pod.Name
		}
		p.f("    %s %-20s %-7s %s  %s\n", etcd.FormatID(m.ID), m.Name, role, strings.Join(m.PeerURLs, ","), pod)
	}
}

func renderFindings(p *printer, fs Findings) {
	if len(fs) == 0 {
		p.f("\nNothing dropped, nothing blocks.\n")
		return
	}
	p.f("\nFindings:\n")
	for _, f := range fs {
		p.f("  %s\n", f)
	}
}

func renderObjects(p *printer, t *Translation) error {
	p.f("\nObjects to create:\n")
	objs := []any{t.Cluster}
	for _, m := range t.Members {
		objs = append(objs, m)
	}
	for _, o := range objs {
		b, err := yaml.Marshal(o)
		if err != nil {
			return err
		}
		p.f("---\n%s", b)
	}
	return nil
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

type printer struct {
	w   io.Writer
	err error
}

func (p *printer) f(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}
