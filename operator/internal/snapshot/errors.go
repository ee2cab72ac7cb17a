package snapshot

import (
	"errors"
	"fmt"
	"syscall"
)

// Error is a failure with the Reason an agent reports for it.
type Error struct {
	Reason Reason
	Err    error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Fail returns an Error with a formatted message (%w wraps as fmt.Errorf does).
func Fail(r Reason, format string, args ...any) error {
	return &Error{Reason: r, Err: fmt.Errorf(format, args...)}
}

// WithReason wraps err with r unless it is nil or already carries a reason.
func WithReason(r Reason, err error) error {
	var e *Error
	if err == nil || errors.As(err, &e) {
		return err
	}
	return &Error{Reason: r, Err: err}
}

// ReasonOf is the reason err carries, ReasonFailed when it carries none.
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ReasonFailed
}

// IsNoSpace reports a full filesystem or an exceeded quota.
func IsNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)
}

// fileError classifies a local file error: NoSpace for a full volume, else def.
func fileError(def Reason, err error) error {
	if err == nil {
		return nil
	}
	if IsNoSpace(err) {
		return &Error{Reason: ReasonNoSpace, Err: err}
	}
	return WithReason(def, err)
}
