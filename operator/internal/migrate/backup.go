package migrate

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// backup streams a snapshot from a follower (the leader is spared) to the backup file. Nothing
// is left at the path unless the snapshot verified: its sha256 as streamed and etcd's own hash
// at its end. Once the EtcdCluster exists the backup was taken by an earlier run.
func (a *adoption) backup(ctx context.Context) (string, error) {
	switch {
	case a.opts.SkipBackup:
		return "skipped (--skip-backup)", nil
	case a.st.Cluster != nil:
		return "taken by an earlier run (the EtcdCluster exists)", nil
	case a.opts.BackupFile == "":
		return "", fmt.Errorf("no backup file: give one, or skip the backup explicitly")
	}
	l, in := a.st.Legacy, a.st.Input
	source, err := a.snapshotSource(ctx)
	if err != nil {
		return "", err
	}
	cli, err := dialEndpoints(ctx, a.env, l, in.Secrets, []string{source.ClientURLs[0]})
	if err != nil {
		return "", err
	}
	defer cli.Close()
	stream, err := cli.Snapshot(ctx)
	if err != nil {
		return "", fmt.Errorf("snapshot from member %s: %w", source.Name, err)
	}
	defer stream.Close()
	sum, err := writeVerified(a.opts.BackupFile, stream)
	if err != nil {
		return "", fmt.Errorf("snapshot from member %s: %w", source.Name, err)
	}
	return fmt.Sprintf("%s from member %s: %d bytes, %s", a.opts.BackupFile, source.Name, sum.Size, sum.Checksum), nil
}

// snapshotSource is a follower with a client URL, or the leader when it is alone.
func (a *adoption) snapshotSource(ctx context.Context) (etcd.Member, error) {
	members := a.st.Input.Live.Members
	cli, err := dialLegacy(ctx, a.env, a.st.Legacy, a.st.Input.Secrets)
	if err != nil {
		return etcd.Member{}, err
	}
	defer cli.Close()
	var fallback *etcd.Member
	for i := range members {
		m := &members[i].Member
		if len(m.ClientURLs) == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, etcdTimeout)
		s, err := cli.Status(cctx, m.ClientURLs[0])
		cancel()
		switch {
		case err != nil:
		case s.Leader != m.ID:
			return *m, nil
		default:
			fallback = m
		}
	}
	if fallback == nil {
		return etcd.Member{}, fmt.Errorf("no member answered a status request")
	}
	return *fallback, nil
}

// writeVerified copies r to path through a .part file, renamed only once the snapshot verified.
func writeVerified(path string, r io.Reader) (snapshot.Sum, error) {
	part := path + ".part"
	f, err := os.OpenFile(part, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return snapshot.Sum{}, err
	}
	defer os.Remove(part) // a no-op once renamed
	d := snapshot.NewDigest()
	_, err = io.Copy(io.MultiWriter(f, d), r)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return snapshot.Sum{}, err
	}
	if err := d.Intact(); err != nil {
		return snapshot.Sum{}, fmt.Errorf("did not verify, nothing saved: %w", err)
	}
	return d.Sum(), os.Rename(part, path)
}
