//lint:file-ignore SA1019 feature/s3/manager is deprecated for feature/s3/transfermanager, which is still v0.x; manager v1.23.26 is the pinned, versitygw-tested uploader, and this file is the only place that uses it.

package snapshot

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Multipart upload: 8 MiB parts, at most 4 in flight. The uploader keeps Concurrency+1 part
// buffers, so an upload holds about 40 MiB whatever the database's size.
const (
	PartSize        = 8 << 20
	PartConcurrency = 4
)

// uploader streams a body of unknown length into one object: a single PUT when it is shorter
// than a part, else a multipart upload that becomes visible only when completed and is aborted
// when the body or a part fails (the abort needs a live context: a run killed mid-upload may
// leave parts for the bucket's lifecycle rule to expire).
type uploader struct{ m *manager.Uploader }

func newUploader(client *s3.Client) uploader {
	return uploader{m: manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = PartSize
		u.Concurrency = PartConcurrency
		u.LeavePartsOnError = false
		// As on the client: no trailing checksums the store did not ask for (Ceph RGW).
		u.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
	})}
}

func (u uploader) upload(ctx context.Context, in *s3.PutObjectInput) error {
	_, err := u.m.Upload(ctx, in)
	return err
}
