package resources

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// A tmpfs member's Pod runs the data guard before anything else, fed by an annotation that
// turns "true" once the member votes, without changing the Pod's revision (promotion must not
// restart it); a member with a PVC has neither.
func TestDataGuardOnTmpfsMembers(t *testing.T) {
	m := testMember("etcd-abcde")
	m.Spec.Storage.Medium = v1alpha2.StorageMediumMemory
	opts := PodOptions{ClusterFormed: true, AgentImage: "operator:dev"}
	learner := Pod(m, opts)
	if len(learner.Spec.InitContainers) == 0 || learner.Spec.InitContainers[0].Name != v1alpha2.DataGuardContainer {
		t.Fatalf("init containers %v: the data guard is not first", learner.Spec.InitContainers)
	}
	guard := learner.Spec.InitContainers[0]
	if guard.Image != "operator:dev" || len(guard.Command) != 3 || guard.Command[1] != snapshot.CommandGuardDataDir || guard.Command[2] != MemberDataDir(m) {
		t.Errorf("guard %s %v", guard.Image, guard.Command)
	}
	if len(guard.Env) != 1 || guard.Env[0].Name != snapshot.EnvDataExpected || guard.Env[0].ValueFrom == nil ||
		guard.Env[0].ValueFrom.FieldRef.FieldPath != "metadata.annotations['"+v1alpha2.AnnotationDataExpected+"']" {
		t.Errorf("guard env %+v does not read the data-expected annotation", guard.Env)
	}
	if got := learner.Annotations[v1alpha2.AnnotationDataExpected]; got != "false" {
		t.Errorf("learner's data-expected = %q, want false", got)
	}
	m.Status.IsVoter = true // a seed before its etcd first answered: no member ID yet
	if got := Pod(m, opts).Annotations[v1alpha2.AnnotationDataExpected]; got != "false" {
		t.Errorf("unstarted seed's data-expected = %q, want false", got)
	}
	m.Status.MemberID = "8e9e05c52164694d"
	voter := Pod(m, opts)
	if got := voter.Annotations[v1alpha2.AnnotationDataExpected]; got != "true" {
		t.Errorf("voter's data-expected = %q, want true", got)
	}
	if got := StartAnnotations(m, true)[v1alpha2.AnnotationDataExpected]; got != "true" {
		t.Errorf("voter's start annotation = %q, want true", got)
	}
	if PodRevision(learner) != PodRevision(voter) {
		t.Error("promotion changed the Pod's revision")
	}
	withPVC := testMember("etcd-fghij")
	withPVC.Status.IsVoter, withPVC.Status.MemberID = true, "8e9e05c52164694d"
	pod := Pod(withPVC, opts)
	if len(pod.Spec.InitContainers) != 0 {
		t.Errorf("a PVC member has init containers %v", pod.Spec.InitContainers)
	}
	if _, ok := pod.Annotations[v1alpha2.AnnotationDataExpected]; ok {
		t.Error("a PVC member's Pod has the data-expected annotation")
	}
}

// A tmpfs member's etcd always reads ETCD_FORCE_NEW_CLUSTER from its Pod's annotation (a rebuild
// restarts the container, not the Pod), so setting spec.forceNewCluster leaves its revision as
// it is; the ephemeral container that stops etcd targets it and is named per rebuild.
func TestTmpfsForcesInPlace(t *testing.T) {
	m := testMember("etcd-abcde")
	m.Spec.Storage.Medium = v1alpha2.StorageMediumMemory
	m.Generation = 4
	opts := PodOptions{ClusterFormed: true, AgentImage: "operator:dev"}
	steady := opts
	steady.Steady = true
	before := PodRevision(Pod(m, steady))
	env := Pod(m, steady).Spec.Containers[0].Env
	if !slices.ContainsFunc(env, func(e corev1.EnvVar) bool { return e.Name == "ETCD_FORCE_NEW_CLUSTER" }) {
		t.Fatalf("a tmpfs member's steady Pod has no ETCD_FORCE_NEW_CLUSTER: %v", env)
	}
	m.Spec.ForceNewCluster = true
	if got := PodRevision(Pod(m, steady)); got != before {
		t.Errorf("forcing changed a tmpfs member's revision: %s != %s", got, before)
	}
	ec := ForceNewClusterContainer(m, opts.AgentImage)
	if ec.Name != "force-new-cluster-4" || ec.TargetContainerName != "etcd" || ec.Image != "operator:dev" ||
		!slices.Equal(ec.Command, []string{"/manager", snapshot.CommandStopEtcd, "etcd-abcde"}) {
		t.Errorf("ephemeral container %+v", ec)
	}
	withPVC := testMember("etcd-fghij")
	if ForcesInPlace(withPVC) || slices.ContainsFunc(Pod(withPVC, steady).Spec.Containers[0].Env, func(e corev1.EnvVar) bool { return e.Name == "ETCD_FORCE_NEW_CLUSTER" }) {
		t.Error("a PVC member forces in place, or its steady Pod reads ETCD_FORCE_NEW_CLUSTER")
	}
}

// A new operator build (another agent image) does not change a member's revision: its data
// guard takes the new image at the member's next start. A change to what the guard runs does.
// A Pod an older build stamped with the legacy revision (the whole spec, image included) is
// recognised as running this build's spec; for a member without init containers both
// revisions agree, so moving to this scheme rolls nothing.
func TestRevisionIgnoresTheAgentImage(t *testing.T) {
	m := testMember("etcd-abcde")
	m.Spec.Storage.Medium = v1alpha2.StorageMediumMemory
	m.Status.IsVoter, m.Status.MemberID = true, "8e9e05c52164694d"
	build := func(image string) *corev1.Pod {
		return Pod(m, PodOptions{ClusterFormed: true, Steady: true, AgentImage: image})
	}
	older, newer := build("ghcr.io/cozystack/etcd-operator:0.1.0"), build("ghcr.io/cozystack/etcd-operator:0.2.0")
	if PodRevision(older) != PodRevision(newer) {
		t.Error("a new agent image changed the revision: every tmpfs member would restart on an operator upgrade")
	}
	stampedByOlder := hashSpec(&older.Spec) // what builds before this scheme recorded
	if LegacyPodRevision(newer, older) != stampedByOlder {
		t.Error("a Pod an older build made from the same spec is not recognised")
	}
	changed := newer.DeepCopy()
	changed.Spec.InitContainers[0].Command = append(changed.Spec.InitContainers[0].Command, "--strict")
	if PodRevision(changed) == PodRevision(newer) {
		t.Error("a changed data guard command kept the revision")
	}
	if LegacyPodRevision(changed, older) == stampedByOlder {
		t.Error("an older build's Pod counts as current although the guard's command changed")
	}
	pvc := Pod(testMember("etcd-fghij"), PodOptions{ClusterFormed: true, Steady: true, AgentImage: "x"})
	if PodRevision(pvc) != hashSpec(&pvc.Spec) {
		t.Error("a member without init containers changed revision with the new scheme")
	}
}
