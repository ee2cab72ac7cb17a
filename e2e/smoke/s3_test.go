//go:build e2e

//lint:file-ignore SA1019 feature/s3/manager is deprecated in favour of feature/s3/transfermanager; it is the multipart client go.mod pins (aws-sdk-go-v2 feature/s3/manager v1.23.26).

package smoke

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/cozystack/etcd-operator/e2e/framework"
)

// TestS3Server proves the e2e S3 server: the test process uploads and downloads a multipart
// object, wrong credentials are refused, a Pod on the cluster reaches it with a signed
// request, and the server comes back after a stop with its objects.
func TestS3Server(t *testing.T) {
	t.Parallel()
	c := framework.Shared(t)
	srv := framework.StartS3(t, c)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const bucket, key = "smoke-backups", "snapshots/db-20MiB.snap"
	if err := srv.CreateBucket(ctx, bucket); err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 20<<20)
	_, _ = rand.Read(data)

	t.Run("multipart upload and download", func(t *testing.T) { uploadAndDownload(ctx, t, srv, bucket, key, data) })
	t.Run("wrong credentials are refused", func(t *testing.T) { wrongCredentials(ctx, t, srv, bucket) })
	t.Run("reachable from a Pod", func(t *testing.T) { listFromPod(ctx, t, c, srv, bucket, key) })
	t.Run("down and back", func(t *testing.T) { downAndBack(ctx, t, srv, bucket, key, len(data)) })
}

func uploadAndDownload(ctx context.Context, t *testing.T, srv *framework.S3, bucket, key string, data []byte) {
	start := time.Now()
	// The uploader's default 5 MiB parts make 20 MiB a 4-part multipart upload.
	out, err := manager.NewUploader(srv.Client()).Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(data)})
	if err != nil {
		t.Fatalf("upload: %v", err)
	}
	if out.UploadID == "" {
		t.Fatal("upload of 20 MiB was not multipart (no upload ID)")
	}
	buf := manager.NewWriteAtBuffer(make([]byte, 0, len(data)))
	n, err := manager.NewDownloader(srv.Client()).Download(ctx, buf, &s3.GetObjectInput{
		Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("download: %v", err)
	}
	if n != int64(len(data)) || sha256.Sum256(buf.Bytes()) != sha256.Sum256(data) {
		t.Fatalf("downloaded %d bytes that differ from the %d uploaded", n, len(data))
	}
	t.Logf("20 MiB up (multipart, ETag %s) and down in %s", aws.ToString(out.ETag), time.Since(start).Round(time.Millisecond))
}

func wrongCredentials(ctx context.Context, t *testing.T, srv *framework.S3, bucket string) {
	list := &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}
	_, err := srv.ClientWith(srv.BadCredentials()).ListObjectsV2(ctx, list)
	if code := apiErrorCode(err); code != "SignatureDoesNotMatch" {
		t.Errorf("wrong secret: error code %q (%v), want SignatureDoesNotMatch", code, err)
	}
	_, err = srv.ClientWith(srv.UnknownCredentials()).ListObjectsV2(ctx, list)
	if status := httpStatus(err); status < 400 || status >= 500 {
		t.Errorf("unknown access key: HTTP status %d (%v), want a 4xx refusal", status, err)
	}
	if _, err := srv.Client().ListObjectsV2(ctx, list); err != nil {
		t.Errorf("root credentials refused: %v", err)
	}
}

// listFromPod fetches a presigned ListObjectsV2 URL with wget inside a Pod: the Pod reaches
// the server over the cluster network and gets S3's XML listing of the bucket.
func listFromPod(ctx context.Context, t *testing.T, c *framework.Cluster, srv *framework.S3, bucket, key string) {
	ns := newNamespace(t, c, "smoke-s3")
	// The server runs on the host: one Pod proves it reachable over the cluster network, which Pods
	// of both node kinds share. busybox's wget runs only on a node agent (which maps busybox to
	// the host's tools); the real-node suite's agent Pods reach S3 from the built operator image.
	client := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "s3-client", Namespace: ns},
		Spec: podSpec(c.Name, kinds[0], []string{"sleep", "3600"}, nil, nil)}
	client.Spec.Containers[0].Image = busyboxImage
	mustCreatePod(t, c, client)
	waitPodReady(t, c, ns, "s3-client")
	url, err := presignedListURL(ctx, srv, bucket)
	if err != nil {
		t.Fatal(err)
	}
	var out string
	framework.WaitFor(t, 30*time.Second, "bucket listing from a Pod", func() (bool, error) {
		var errOut string
		out, errOut, err = c.Exec(ctx, ns, "s3-client", "main", "wget", "-q", "-T", "5", "-O", "-", url)
		if err != nil {
			return false, fmt.Errorf("%w: %s", err, errOut)
		}
		return true, nil
	})
	if !strings.Contains(out, "<ListBucketResult") || !strings.Contains(out, "<Key>"+key+"</Key>") {
		t.Fatalf("listing from the Pod has no ListBucketResult with %s:\n%s", key, out)
	}
}

// busyboxImage runs the S3 client Pod on a node agent: the agent maps it to the host's tools.
const busyboxImage = "busybox:1.37"

// presignedListURL signs GET /<bucket>?list-type=2 into a URL that needs no SDK to fetch.
func presignedListURL(ctx context.Context, srv *framework.S3, bucket string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.Endpoint+"/"+bucket+"?list-type=2&X-Amz-Expires=300", nil)
	if err != nil {
		return "", err
	}
	creds := aws.Credentials{AccessKeyID: srv.Root.AccessKeyID, SecretAccessKey: srv.Root.SecretAccessKey}
	url, _, err := v4.NewSigner().PresignHTTP(ctx, creds, req, "UNSIGNED-PAYLOAD", "s3", framework.S3Region, time.Now())
	return url, err
}

func downAndBack(ctx context.Context, t *testing.T, srv *framework.S3, bucket, key string, size int) {
	head := &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}
	once := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Client(once).HeadObject(ctx, head); err == nil {
		t.Fatal("HeadObject succeeded with the server stopped")
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	got, err := srv.Client().HeadObject(ctx, head)
	if err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if aws.ToInt64(got.ContentLength) != int64(size) {
		t.Fatalf("after restart the object has %d bytes, want %d", aws.ToInt64(got.ContentLength), size)
	}
}

func apiErrorCode(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func httpStatus(err error) int {
	var respErr *awshttp.ResponseError
	if errors.As(err, &respErr) {
		return respErr.HTTPStatusCode()
	}
	return 0
}
