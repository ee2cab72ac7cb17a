package v1alpha2_test

import (
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/cozystack/etcd-operator/internal/testenv"
	v1 "github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

// celMessages lists the exported message constants. A constant missing from the generated CRDs
// means a marker and its constant have drifted apart, and tests asserting on it would lie.
var celMessages = []string{
	v1.MsgVersionFormat, v1.MsgDefragAllExclusive, v1.MsgDefragFreeSpacePositive, v1.MsgDefragMinReclaimPositive,
	v1.MsgDefragMinReclaimQuota, v1.MsgDefragMinReclaimBound, v1.MsgDefragClusterRef, v1.MsgDefragSpecImmutable, v1.MsgDefragScheduleClusterRef, v1.MsgDefragScheduleName, v1.MsgVersionPath, v1.MsgVersionReachable, v1.MsgMemberReplicasOne, v1.MsgPauseMemory, v1.MsgMemorySizePositive, v1.MsgMediumImmutable,
	v1.MsgSizeNoShrink, v1.MsgTLSClientImmutable, v1.MsgTLSPeerImmutable, v1.MsgStorageClassAddRemove,
	v1.MsgStorageClassImmutable, v1.MsgAuthNoDisable, v1.MsgAuthRequiresClientTLS,
	v1.MsgAuthRequiresSecret, v1.MsgAuthPasswordlessFixed, v1.MsgAuthRootExclusive, v1.MsgBootstrapAddRemove, v1.MsgBootstrapImmutable, v1.MsgRestoreMemory,
	v1.MsgClientTLSSource, v1.MsgClientTLSOperatorSecret, v1.MsgPeerTLSSource, v1.MsgLayoutImmutable, v1.MsgLayoutServices, v1.MsgLayoutSubPath, v1.MsgSnapshotLocation,
	v1.MsgRestoreS3Key, v1.MsgRestorePVCSubPath, v1.MsgImageRepositoryNoTag, v1.MsgPriorityClassNameFormat,
	v1.MsgRestoreSource, v1.MsgSnapshotSpecImmutable, v1.MsgSnapshotClusterRef, v1.MsgScheduleClusterRef,
	v1.MsgRestoreSpecImmutable, v1.MsgRestoreClusterRef, v1.MsgRestoreSafetySnapshot, v1.MsgRollbackS3Key, v1.MsgRollbackPVCSubPath,
	v1.MsgIssuerKind, v1.MsgRenewBeforeDuration, v1.MsgPrivateKeySize, v1.MsgSnapshotNameLength,
	v1.MsgScheduleNameLength, v1.MsgRestoreNameLength, v1.MsgClusterNameLength, v1.MsgClusterNameDots, v1.MsgRetentionMaxAge,
	v1.MsgRestoreEncryptionRef, v1.MsgEncryptionSecretRef,
}

func crdMessages(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(testenv.CRDDir(), "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in %s (run make manifests): %v", testenv.CRDDir(), err)
	}
	found := map[string]bool{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc any
		if err := yaml.Unmarshal(raw, &doc); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		collectMessages(doc, found)
	}
	return found
}

func collectMessages(node any, found map[string]bool) {
	switch n := node.(type) {
	case map[string]any:
		if rules, ok := n["x-kubernetes-validations"].([]any); ok {
			for _, r := range rules {
				if m, ok := r.(map[string]any)["message"].(string); ok {
					found[m] = true
				}
			}
		}
		for _, v := range n {
			collectMessages(v, found)
		}
	case []any:
		for _, v := range n {
			collectMessages(v, found)
		}
	}
}

func TestCELMessagesMatchCRD(t *testing.T) {
	found := crdMessages(t)
	for _, msg := range celMessages {
		if !found[msg] {
			t.Errorf("message constant not in any generated CRD: %q", msg)
		}
	}
	// And the other way round: every message in the CRDs is a listed constant.
	listed := map[string]bool{}
	for _, m := range celMessages {
		listed[m] = true
	}
	for m := range found {
		if !listed[m] {
			t.Errorf("CRD message without an exported constant: %q", m)
		}
	}
}
