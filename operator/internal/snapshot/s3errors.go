package snapshot

import (
	"context"
	"errors"
	"net"
	"net/http"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// reasonNoSuchKey is classifyS3's verdict for a missing object: absent for the overwrite guard,
// SourceNotFound for a restore. It never reaches a result.
const reasonNoSuchKey Reason = "noSuchKey"

// Error codes S3 and S3-compatible stores answer with.
var s3Codes = map[string]Reason{
	"NoSuchKey":             reasonNoSuchKey,
	"NotFound":              reasonNoSuchKey, // HEAD: no body, so no code of its own
	"NoSuchBucket":          ReasonBucketNotFound,
	"AccessDenied":          ReasonAccessDenied,
	"InvalidAccessKeyId":    ReasonAccessDenied,
	"SignatureDoesNotMatch": ReasonAccessDenied,
	"InvalidToken":          ReasonAccessDenied,
	"ExpiredToken":          ReasonAccessDenied,
	"AllAccessDisabled":     ReasonAccessDenied,
	"XAdminUserNotFound":    ReasonAccessDenied, // versitygw: an unknown access key, with HTTP 404
}

// classifyS3 is the reason of an S3 client error: the store's error code, else its HTTP status,
// else a failure to reach it at all.
func classifyS3(err error) Reason {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ReasonFailed
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		if r, ok := s3Codes[api.ErrorCode()]; ok {
			return r
		}
	}
	var resp *awshttp.ResponseError
	if errors.As(err, &resp) {
		switch resp.HTTPStatusCode() {
		case http.StatusForbidden:
			return ReasonAccessDenied
		case http.StatusNotFound:
			return reasonNoSuchKey
		}
	}
	var send *smithyhttp.RequestSendError
	var dns *net.DNSError
	var op *net.OpError
	if errors.As(err, &send) || errors.As(err, &dns) || errors.As(err, &op) {
		return ReasonEndpointUnreachable
	}
	return ReasonFailed
}
