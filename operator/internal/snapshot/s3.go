package snapshot

import (
	"context"
	"fmt"
	"io"
	"net/url"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// S3Config is an object in an S3-compatible store and the keys to reach it.
type S3Config struct {
	// Endpoint is an http or https URL.
	Endpoint, Bucket, Key, Region string
	ForcePathStyle                bool
	AccessKeyID, SecretAccessKey  string
}

// Validate checks the location; missing keys are CredentialsMissing.
func (c S3Config) Validate() error {
	u, err := url.Parse(c.Endpoint)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%s %q: want an http:// or https:// URL", EnvS3Endpoint, c.Endpoint)
	}
	if err := ValidateBucket(c.Bucket); err != nil {
		return fmt.Errorf("%s: %w", EnvS3Bucket, err)
	}
	if err := ValidateKey(c.Key); err != nil {
		return fmt.Errorf("%s: %w", EnvS3Key, err)
	}
	if c.AccessKeyID == "" || c.SecretAccessKey == "" {
		return Fail(ReasonCredentialsMissing, "%s and %s must both be set", EnvAWSAccessKeyID, EnvAWSSecretAccessKey)
	}
	return nil
}

// S3Store keeps an artifact as one object; its owner is the object's user metadata MetaOwner.
// Uploads go through an uploader (s3upload.go) that streams a body of unknown length as a
// multipart upload without staging it.
type S3Store struct {
	cfg      S3Config
	client   *s3.Client
	uploader uploader
}

var (
	_ Store  = (*S3Store)(nil)
	_ Source = (*S3Store)(nil)
)

// NewS3Store validates cfg and builds the client. Request checksums are computed only when an
// operation requires them, and responses are validated likewise: S3-compatible stores (Ceph
// RGW among them) refuse the SDK's default trailing checksums.
func NewS3Store(cfg S3Config) (*S3Store, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Region == "" {
		cfg.Region = DefaultS3Region
	}
	client := s3.New(s3.Options{
		Region:                     cfg.Region,
		BaseEndpoint:               aws.String(cfg.Endpoint),
		UsePathStyle:               cfg.ForcePathStyle,
		Credentials:                aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(cfg.AccessKeyID, cfg.SecretAccessKey, "")),
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
	return &S3Store{cfg: cfg, client: client, uploader: newUploader(client)}, nil
}

func (s *S3Store) URI() string      { return S3URI(s.cfg.Bucket, s.cfg.Key) }
func (s *S3Store) Describe() string { return s.URI() }

// Client is the store's S3 client (tests use it to prepare buckets).
func (s *S3Store) Client() *s3.Client { return s.client }

// Lookup HEADs the object. A 404 is absent only if a GET says NoSuchKey: a HEAD has no body, so
// a missing bucket and (on versitygw) an unknown access key look the same there. A 403 fails
// closed: a store that hides whether the key exists cannot guard against an overwrite.
func (s *S3Store) Lookup(ctx context.Context) (Meta, bool, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.cfg.Bucket, Key: &s.cfg.Key})
	if err != nil {
		if classifyS3(err) != reasonNoSuchKey {
			return Meta{}, false, s.fail("HEAD", err)
		}
		if err := s.probeMissing(ctx); err != nil {
			return Meta{}, false, err
		}
		return Meta{}, false, nil
	}
	m := metaFromS3(out.Metadata)
	if out.LastModified != nil {
		m.CompletionTime = FormatTime(*out.LastModified)
	}
	return m, true, nil
}

// probeMissing asks with a one-byte GET why a HEAD said 404: nil for NoSuchKey, else the error
// the GET's body names (NoSuchBucket, an unknown key, …).
func (s *S3Store) probeMissing(ctx context.Context) error {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.Bucket, Key: &s.cfg.Key, Range: aws.String("bytes=0-0")})
	if err == nil {
		_ = out.Body.Close()
		return Fail(ReasonFailed, "S3 HEAD %s said 404 but a GET found the object; retry", s.URI())
	}
	if r := classifyS3(err); r != reasonNoSuchKey {
		return s.fail("GET", err)
	}
	return nil
}

// Size HEADs the object: SourceNotFound when it does not exist.
func (s *S3Store) Size(ctx context.Context) (int64, error) {
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.cfg.Bucket, Key: &s.cfg.Key})
	if err != nil {
		if classifyS3(err) != reasonNoSuchKey {
			return 0, s.fail("HEAD", err)
		}
		if err := s.probeMissing(ctx); err != nil {
			return 0, err
		}
		return 0, Fail(ReasonSourceNotFound, "no object %s", s.URI())
	}
	return aws.ToInt64(out.ContentLength), nil
}

// Put uploads r with m as user metadata; nothing is visible until the upload completes.
func (s *S3Store) Put(ctx context.Context, r io.Reader, m Meta) error {
	err := s.uploader.upload(ctx, &s3.PutObjectInput{
		Bucket: &s.cfg.Bucket, Key: &s.cfg.Key, Body: r, Metadata: m.s3Metadata(),
		ContentType: aws.String("application/octet-stream"),
	})
	if err != nil {
		return s.fail("upload", err)
	}
	return nil
}

func (s *S3Store) Open(ctx context.Context) (io.ReadCloser, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.Bucket, Key: &s.cfg.Key})
	if err != nil {
		if classifyS3(err) == reasonNoSuchKey {
			return nil, Fail(ReasonSourceNotFound, "no object %s", s.URI())
		}
		return nil, s.fail("GET", err)
	}
	return out.Body, nil
}

func (s *S3Store) Delete(ctx context.Context) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.cfg.Bucket, Key: &s.cfg.Key})
	if err != nil {
		return s.fail("DELETE", err)
	}
	return nil
}

// fail classifies an S3 error for the agent's result.
func (s *S3Store) fail(op string, err error) error {
	r := classifyS3(err)
	if r == reasonNoSuchKey {
		r = ReasonFailed
	}
	return &Error{Reason: r, Err: fmt.Errorf("S3 %s %s: %w", op, s.URI(), err)}
}
