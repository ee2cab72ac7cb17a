//lint:file-ignore SA1019 feature/s3/manager is deprecated for feature/s3/transfermanager, which is still v0.x; manager v1.23.26 is the pinned, versitygw-tested uploader, and this file is the only place that uses it.

package snapshot

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
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
//
// Bodies are sent as UNSIGNED-PAYLOAD over http too (the SDK does so over https already): the
// SigV4 payload hash is one more sha256 pass over the snapshot in the agent and another in the
// store, a third of the agent's CPU. What that hash proved, that the store received the bytes
// sent, the agent proves end to end: it reads the completed object back and compares its
// sha256 with the stream's (SnapshotAgent.verify), and a restore from the EtcdSnapshot checks
// the recorded checksum again. The request itself (key, metadata, part number, upload ID) is still signed. Over
// plain http an active man in the middle could now swap part bodies undetected by the store,
// but it could also answer the read-back with the original bytes, so such an artifact would be
// reported Complete and refused only at restore; plain http to a store is already exposed to
// that attacker reading the whole database, and is for trusted networks only.
type uploader struct{ m *manager.Uploader }

func newUploader(client *s3.Client) uploader {
	return uploader{m: manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = PartSize
		u.Concurrency = PartConcurrency
		u.LeavePartsOnError = false
		// As on the client: no trailing checksums the store did not ask for (Ceph RGW).
		u.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		u.ClientOptions = append(u.ClientOptions, s3.WithAPIOptions(v4.SwapComputePayloadSHA256ForUnsignedPayloadMiddleware))
	})}
}

func (u uploader) upload(ctx context.Context, in *s3.PutObjectInput) error {
	_, err := u.m.Upload(ctx, in)
	return err
}
