package etcd

import (
	"errors"
	"fmt"
	"testing"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestErrorClassification(t *testing.T) {
	type check func(error) bool
	checks := map[string]check{
		"unhealthy": IsUnhealthyCluster, "notInSync": IsLearnerNotInSync, "notFound": IsMemberNotFound,
		"notLearner": IsNotLearner, "tooManyLearners": IsTooManyLearners, "peerExists": IsAlreadyRegistered,
		"retryable": IsRetryable, "authRequired": IsAuthRequired, "downgradeRefused": IsDowngradeTargetRefused,
		"downgradeInProcess": IsDowngradeInProcess, "noDowngrade": IsNoDowngrade,
	}
	cases := []struct {
		name string
		err  error
		want []string
	}{
		{"typed unhealthy", rpctypes.ErrUnhealthy, []string{"unhealthy", "retryable"}},
		{"raw grpc unhealthy", rpctypes.ErrGRPCUnhealthy, []string{"unhealthy", "retryable"}},
		{"wrapped typed unhealthy", fmt.Errorf("add learner: %w", rpctypes.ErrUnhealthy), []string{"unhealthy", "retryable"}},
		{"wrapped grpc unhealthy", fmt.Errorf("add: %w", rpctypes.ErrGRPCUnhealthy), []string{"unhealthy", "retryable"}},
		{"learner not in sync", rpctypes.ErrMemberLearnerNotReady, []string{"notInSync", "retryable"}},
		{"member not found", rpctypes.ErrMemberNotFound, []string{"notFound"}},
		{"not a learner", rpctypes.ErrMemberNotLearner, []string{"notLearner"}},
		{"too many learners", rpctypes.ErrTooManyLearners, []string{"tooManyLearners", "retryable"}},
		{"peer url exists", rpctypes.ErrPeerURLExist, []string{"peerExists"}},
		{"member id exists", rpctypes.ErrMemberExist, []string{"peerExists"}},
		{"leader changed", rpctypes.ErrLeaderChanged, []string{"retryable"}},
		{"no leader", rpctypes.ErrNoLeader, []string{"retryable"}},
		{"same code other message", status.Error(codes.Unavailable, "etcdserver: something else"), nil},
		{"plain error with the same text", errors.New("some prefix: etcdserver: unhealthy cluster"), nil},
		{"nil", nil, nil},
		{"no token", rpctypes.ErrGRPCUserEmpty, []string{"authRequired"}},
		{"expired token", rpctypes.ErrGRPCInvalidAuthToken, []string{"authRequired"}},
		{"certificate CN names no user", rpctypes.ErrGRPCUserNotFound, []string{"authRequired"}},
		{"wrong password", rpctypes.ErrGRPCAuthFailed, nil},
		{"downgrade target not one minor below", rpctypes.ErrGRPCInvalidDowngradeTargetVersion, []string{"downgradeRefused"}},
		{"no cluster version yet", rpctypes.ErrGRPCClusterVersionUnavailable, []string{"downgradeRefused"}},
		{"downgrade in flight", rpctypes.ErrGRPCDowngradeInProcess, []string{"downgradeInProcess"}},
		{"no downgrade to cancel", rpctypes.ErrGRPCNoInflightDowngrade, []string{"noDowngrade"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for name, fn := range checks {
				want := false
				for _, w := range tc.want {
					want = want || w == name
				}
				if got := fn(tc.err); got != want {
					t.Errorf("%s(%v) = %v, want %v", name, tc.err, got, want)
				}
			}
		})
	}
}

func TestIDRoundTrip(t *testing.T) {
	for _, id := range []uint64{1, 0x8e9e05c52164694d, 1<<64 - 1} {
		if got := ParseID(FormatID(id)); got != id {
			t.Errorf("ParseID(FormatID(%x)) = %x", id, got)
		}
	}
	if FormatID(0x1) != "0000000000000001" {
		t.Errorf("FormatID pads to 16 digits, got %s", FormatID(1))
	}
	if ParseID("") != 0 || ParseID("zz") != 0 {
		t.Error("ParseID of garbage must be 0")
	}
}
