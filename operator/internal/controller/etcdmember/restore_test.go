package etcdmember

import (
	"testing"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// Each cause the restore agent names is its own condition reason; anything else is RestoreFailed.
func TestRestoreConditionReason(t *testing.T) {
	for _, tc := range []struct {
		message string
		code    int32
		want    string
	}{
		{`{"phase":"Failed","reason":"ChecksumMismatch","message":"sha256 differs"}`, 1, v1alpha2.ReasonChecksumMismatch},
		{`{"phase":"Failed","reason":"SnapshotNewerThanTarget","message":"3.7 > 3.6"}`, 1, v1alpha2.ReasonSnapshotNewerThanTarget},
		{`{"phase":"Failed","reason":"AccessDenied","message":"403"}`, 1, v1alpha2.ReasonAccessDenied},
		{`{"phase":"Failed","reason":"NoSpace","message":"full"}`, 1, v1alpha2.ReasonNoSpace},
		{`{"phase":"Failed","reason":"Failed","message":"boom"}`, 1, v1alpha2.ReasonRestoreFailed},
		{`{"phase":"Failed","reason":"SomethingNew","message":"?"}`, 1, v1alpha2.ReasonRestoreFailed},
		{"panic: runtime error", 2, v1alpha2.ReasonRestoreFailed},
		{"", 137, v1alpha2.ReasonRestoreFailed},
	} {
		if got := resultOf(tc.message, tc.code).conditionReason(); got != tc.want {
			t.Errorf("%q (exit %d): reason %s, want %s", tc.message, tc.code, got, tc.want)
		}
	}
	// Every cause the restore agent can report has a reason of its own in the API.
	for _, r := range []snapshot.Reason{snapshot.ReasonCredentialsMissing, snapshot.ReasonEndpointUnreachable,
		snapshot.ReasonAccessDenied, snapshot.ReasonBucketNotFound, snapshot.ReasonSourceNotFound, snapshot.ReasonNoSpace,
		snapshot.ReasonChecksumMismatch, snapshot.ReasonSnapshotNewerThanTarget, snapshot.ReasonUnsupported,
		snapshot.ReasonEtcdutlFailed} {
		if got := (refusal{Reason: r}).conditionReason(); got != string(r) {
			t.Errorf("agent reason %s becomes %s: add it to v1alpha2.RestoreFailureReasons", r, got)
		}
	}
}
