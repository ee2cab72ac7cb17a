package etcd

import (
	"errors"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// IsForeignAnswer reports a call answered over HTTP/2 without gRPC's headers (gRPC reports the
// HTTP status, e.g. "unexpected HTTP status code received from server: 200 (OK); malformed
// header: missing HTTP content-type"): not etcd's gRPC server, but an etcd whose gRPC server
// stopped while its HTTP listener still serves a kept-open connection, or another server on a
// reused address.
func IsForeignAnswer(err error) bool {
	s, ok := status.FromError(err)
	if !ok || (s.Code() != codes.Unknown && s.Code() != codes.Internal && s.Code() != codes.Unavailable) {
		return false
	}
	msg := s.Message()
	return strings.Contains(msg, "unexpected HTTP status code") || strings.Contains(msg, "malformed header") ||
		strings.Contains(msg, "unexpected content-type")
}

// IsUnhealthyCluster reports etcd's strict-reconfiguration refusal ("unhealthy cluster"), which
// a freshly started cluster returns for about five seconds. Retry later.
func IsUnhealthyCluster(err error) bool { return is(err, rpctypes.ErrGRPCUnhealthy) }

// IsLearnerNotInSync reports that a promote came before the learner caught up. Retry later.
func IsLearnerNotInSync(err error) bool { return is(err, rpctypes.ErrGRPCLearnerNotReady) }

// IsMemberNotFound reports that the member ID is not (or no longer) in the cluster.
func IsMemberNotFound(err error) bool { return is(err, rpctypes.ErrGRPCMemberNotFound) }

// IsNotLearner reports a promote of a member that is already a voter.
func IsNotLearner(err error) bool { return is(err, rpctypes.ErrGRPCMemberNotLearner) }

// IsTooManyLearners reports that etcd already has its one allowed learner.
func IsTooManyLearners(err error) bool { return is(err, rpctypes.ErrGRPCTooManyLearners) }

// IsAlreadyRegistered reports a MemberAdd of a member etcd already has: its peer URL, or the
// ID etcd derives from it, exists.
func IsAlreadyRegistered(err error) bool {
	return is(err, rpctypes.ErrGRPCPeerURLExist) || is(err, rpctypes.ErrGRPCMemberExist)
}

// IsAuthFailed reports etcd refusing a user name and password.
func IsAuthFailed(err error) bool { return is(err, rpctypes.ErrGRPCAuthFailed) }

// IsAuthRequired reports a request refused because it carried no (or no valid) credentials:
// auth is on in etcd. Under client mTLS a request without a token is made as the user its
// certificate's CN names, so one whose CN is no etcd user (the operator's own certificate) is
// refused with "user name not found" instead.
func IsAuthRequired(err error) bool {
	return is(err, rpctypes.ErrGRPCUserEmpty) || is(err, rpctypes.ErrGRPCPermissionDenied) ||
		is(err, rpctypes.ErrGRPCInvalidAuthToken) || is(err, rpctypes.ErrGRPCUserNotFound)
}

// IsDowngradeTargetRefused reports etcd refusing a downgrade target: it is not one minor below
// the cluster version (which follows the members' versions a few seconds after a rollout), or
// the cluster version is not known yet.
func IsDowngradeTargetRefused(err error) bool {
	return is(err, rpctypes.ErrGRPCInvalidDowngradeTargetVersion) || is(err, rpctypes.ErrGRPCClusterVersionUnavailable)
}

// IsDowngradeInProcess reports a downgrade enabled already; IsNoDowngrade a cancel with none.
func IsDowngradeInProcess(err error) bool { return is(err, rpctypes.ErrGRPCDowngradeInProcess) }
func IsNoDowngrade(err error) bool        { return is(err, rpctypes.ErrGRPCNoInflightDowngrade) }

// IsUserExists reports a UserAdd of a user etcd already has.
func IsUserExists(err error) bool { return is(err, rpctypes.ErrGRPCUserAlreadyExist) }

// IsRetryable reports the errors that mean "the cluster is busy, ask again shortly": the ones
// above that clear by themselves, plus leader elections and not enough started members.
func IsRetryable(err error) bool {
	for _, e := range []error{
		rpctypes.ErrGRPCUnhealthy, rpctypes.ErrGRPCLearnerNotReady, rpctypes.ErrGRPCTooManyLearners,
		rpctypes.ErrGRPCNoLeader, rpctypes.ErrGRPCLeaderChanged, rpctypes.ErrGRPCMemberNotEnoughStarted,
		rpctypes.ErrGRPCNotLeader, rpctypes.ErrGRPCTimeout, rpctypes.ErrGRPCTimeoutDueToLeaderFail,
		rpctypes.ErrGRPCTimeoutDueToConnectionLost,
	} {
		if is(err, e) {
			return true
		}
	}
	return false
}

// is matches err against one of etcd's gRPC errors whether it arrives as clientv3's typed
// EtcdError, as a raw gRPC status, or wrapped in either.
func is(err, grpcErr error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, rpctypes.Error(grpcErr)) {
		return true
	}
	var withStatus interface{ GRPCStatus() *status.Status }
	if !errors.As(err, &withStatus) {
		return false
	}
	got, want := withStatus.GRPCStatus(), status.Convert(grpcErr)
	return got.Code() == want.Code() && got.Message() == want.Message()
}
