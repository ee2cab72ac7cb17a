package snapshot

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// respErr is an SDK error as an operation returns it: an HTTP response error around an API error.
func respErr(status int, code string) error {
	var inner error = &smithy.GenericAPIError{Code: code, Message: "m"}
	if code == "" {
		inner = errors.New("no body")
	}
	return &smithy.OperationError{ServiceID: "S3", OperationName: "HeadObject", Err: &awshttp.ResponseError{
		ResponseError: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}}, Err: inner},
	}}
}

func TestClassifyS3(t *testing.T) {
	refused := &smithyhttp.RequestSendError{Err: &url.Error{Op: "Put", URL: "http://x", Err: &net.OpError{Op: "dial", Err: errors.New("connection refused")}}}
	for _, tc := range []struct {
		name string
		err  error
		want Reason
	}{
		{"HEAD of a missing key", respErr(404, "NotFound"), reasonNoSuchKey},
		{"GET of a missing key", respErr(404, "NoSuchKey"), reasonNoSuchKey},
		{"missing bucket", respErr(404, "NoSuchBucket"), ReasonBucketNotFound},
		{"versitygw unknown key", respErr(404, "XAdminUserNotFound"), ReasonAccessDenied},
		{"AWS unknown key", respErr(403, "InvalidAccessKeyId"), ReasonAccessDenied},
		{"wrong secret", respErr(403, "SignatureDoesNotMatch"), ReasonAccessDenied},
		{"HEAD forbidden, no body", respErr(403, ""), ReasonAccessDenied},
		{"bare 404", respErr(404, ""), reasonNoSuchKey},
		{"server error", respErr(500, "InternalError"), ReasonFailed},
		{"connection refused", &smithy.OperationError{Err: refused}, ReasonEndpointUnreachable},
		{"DNS", fmt.Errorf("x: %w", &net.DNSError{Err: "no such host", Name: "s3.invalid"}), ReasonEndpointUnreachable},
		{"cancelled", fmt.Errorf("x: %w", &smithyhttp.RequestSendError{Err: context.Canceled}), ReasonFailed},
		{"other", errors.New("boom"), ReasonFailed},
	} {
		if got := classifyS3(tc.err); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestS3ConfigValidate(t *testing.T) {
	good := S3Config{Endpoint: "https://s3.example:9000", Bucket: "b", Key: "k", AccessKeyID: "a", SecretAccessKey: "s"}
	for _, tc := range []struct {
		name   string
		edit   func(*S3Config)
		reason Reason // "" = valid
	}{
		{"valid", func(*S3Config) {}, ""},
		{"http", func(c *S3Config) { c.Endpoint = "http://127.0.0.1:7070" }, ""},
		{"no scheme", func(c *S3Config) { c.Endpoint = "s3.example" }, ReasonFailed},
		{"ftp", func(c *S3Config) { c.Endpoint = "ftp://s3.example" }, ReasonFailed},
		{"no bucket", func(c *S3Config) { c.Bucket = "" }, ReasonFailed},
		{"no key", func(c *S3Config) { c.Key = "" }, ReasonFailed},
		{"no access key", func(c *S3Config) { c.AccessKeyID = "" }, ReasonCredentialsMissing},
		{"no secret", func(c *S3Config) { c.SecretAccessKey = "" }, ReasonCredentialsMissing},
	} {
		c := good
		tc.edit(&c)
		err := c.Validate()
		if (err == nil) != (tc.reason == "") || (err != nil && ReasonOf(err) != tc.reason) {
			t.Errorf("%s: %v, want reason %q", tc.name, err, tc.reason)
		}
	}
}

func TestMetaRoundTrip(t *testing.T) {
	m := Meta{Owner: "uid-1", Member: "c-0", MemberID: "00000000000000aa", ClusterID: "00000000000000bb",
		Revision: 99, EtcdVersion: "3.7.3", StartTime: "2026-01-01T00:00:00Z"}
	md := m.s3Metadata()
	upper := map[string]string{}
	for k, v := range md {
		upper[http.CanonicalHeaderKey(k)] = v
	}
	for _, in := range []map[string]string{md, upper} {
		if got := metaFromS3(in); got != m {
			t.Errorf("metaFromS3(%v) = %+v, want %+v", in, got, m)
		}
	}
	if md[MetaOwner] != "uid-1" {
		t.Errorf("owner metadata %v", md)
	}
}
