// Package kubectletcd is what the verbs of kubectl-etcd share: the session that finds a cluster by
// its EtcdCluster name and reaches its etcd through port-forwards, output formats, confirmation
// and exit codes. Each verb lives in its own package below this one.
package kubectletcd

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Exit codes of kubectl-etcd. Scripts tell a mistake from a cluster that needs attention.
const (
	ExitOK = 0
	// ExitFailed: the operation was tried and failed (etcd refused, a snapshot did not verify).
	ExitFailed = 1
	// ExitUsage: bad flags or arguments; nothing was tried.
	ExitUsage = 2
	// ExitNotFound: no such EtcdCluster (or member, or snapshot) in the namespace.
	ExitNotFound = 3
	// ExitForbidden: the API server refused the caller (RBAC or credentials).
	ExitForbidden = 4
	// ExitUnhealthy: the cluster is not healthy enough for the operation; nothing was changed.
	ExitUnhealthy = 5
	// ExitAborted: the user declined the confirmation.
	ExitAborted = 6
)

// Error carries an exit code.
type Error struct {
	Code int
	Err  error
	// Silent: the message was already shown (a program the plugin ran printed its own).
	Silent bool
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an error with an exit code.
func Errorf(code int, format string, args ...any) error {
	return &Error{Code: code, Err: fmt.Errorf(format, args...)}
}

// CodeOf is the exit code for err: its own, else the API server's answer, else ExitFailed.
func CodeOf(err error) int {
	var e *Error
	switch {
	case err == nil:
		return ExitOK
	case errors.As(err, &e):
		return e.Code
	case apierrors.IsNotFound(err):
		return ExitNotFound
	case apierrors.IsForbidden(err), apierrors.IsUnauthorized(err):
		return ExitForbidden
	}
	return ExitFailed
}
