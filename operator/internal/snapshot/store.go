package snapshot

import (
	"context"
	"io"
	"strconv"
	"strings"
)

// Meta is what an artifact records about itself beside its bytes: its owner (the overwrite
// guard) and where it came from, so that a retried agent can report what an earlier attempt
// of the same snapshot stored.
type Meta struct {
	Owner       string `json:"owner"`
	Member      string `json:"member,omitempty"`
	MemberID    string `json:"memberID,omitempty"`
	ClusterID   string `json:"clusterID,omitempty"`
	Revision    int64  `json:"revision,omitempty"`
	EtcdVersion string `json:"etcdVersion,omitempty"`
	StartTime   string `json:"startTime,omitempty"`
	// CompletionTime is when the store completed the artifact (S3 Last-Modified, the file's
	// modification time); Lookup sets it, Put ignores it.
	CompletionTime string `json:"-"`
}

// Store is where the snapshot agent writes its one artifact.
type Store interface {
	// URI names the artifact (s3://… or pvc://…).
	URI() string
	// Lookup returns the existing artifact's metadata; ok is false when there is none.
	Lookup(ctx context.Context) (m Meta, ok bool, err error)
	// Put writes r as the artifact, visible only once complete. On any error, the source's
	// included, nothing of it is left behind.
	Put(ctx context.Context, r io.Reader, m Meta) error
	// Open reads the stored artifact back.
	Open(ctx context.Context) (io.ReadCloser, error)
	// Delete removes the artifact (and its owner record).
	Delete(ctx context.Context) error
}

// Source is where the restore agent reads a snapshot from.
type Source interface {
	// Describe names the source for messages.
	Describe() string
	// Size is the snapshot's length; SourceNotFound when there is none.
	Size(ctx context.Context) (int64, error)
	Open(ctx context.Context) (io.ReadCloser, error)
}

// s3Metadata is m as S3 user metadata.
func (m Meta) s3Metadata() map[string]string {
	out := map[string]string{MetaOwner: m.Owner}
	add := func(k, v string) {
		if v != "" {
			out[k] = v
		}
	}
	add(MetaMember, m.Member)
	add(MetaMemberID, m.MemberID)
	add(MetaClusterID, m.ClusterID)
	if m.Revision != 0 {
		out[MetaRevision] = strconv.FormatInt(m.Revision, 10)
	}
	add(MetaEtcdVersion, m.EtcdVersion)
	add(MetaStartTime, m.StartTime)
	return out
}

// metaFromS3 reads S3 user metadata back; keys are matched without regard to case, as stores
// differ in how they return them.
func metaFromS3(md map[string]string) Meta {
	get := func(k string) string {
		for key, v := range md {
			if strings.EqualFold(key, k) {
				return v
			}
		}
		return ""
	}
	rev, _ := strconv.ParseInt(get(MetaRevision), 10, 64)
	return Meta{
		Owner: get(MetaOwner), Member: get(MetaMember), MemberID: get(MetaMemberID), ClusterID: get(MetaClusterID),
		Revision: rev, EtcdVersion: get(MetaEtcdVersion), StartTime: get(MetaStartTime),
	}
}
