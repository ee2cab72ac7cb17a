package agent

import (
	"context"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// DeleteArtifact removes the artifact owner wrote. One that is not there (never completed,
// deleted by hand, its bucket gone) counts as deleted; one another snapshot wrote is left alone.
func DeleteArtifact(ctx context.Context, store snapshot.Store, owner string, log *Logger) snapshot.SnapshotResult {
	done := snapshot.SnapshotResult{Phase: snapshot.PhaseDeleted, URI: store.URI()}
	m, ok, err := store.Lookup(ctx)
	switch {
	case err != nil && snapshot.ReasonOf(err) == snapshot.ReasonBucketNotFound:
		done.Message = "the bucket is gone, and the artifact with it"
		return done
	case err != nil:
		reason, msg := snapshot.Failed(err)
		return snapshot.SnapshotResult{Phase: snapshot.PhaseFailed, Reason: reason, Message: log.Clean(msg)}
	case !ok:
		done.Message = "there was no artifact"
		return done
	case m.Owner != owner:
		done.Message = "left in place: another snapshot wrote it"
		return done
	}
	if err := store.Delete(ctx); err != nil {
		reason, msg := snapshot.Failed(err)
		return snapshot.SnapshotResult{Phase: snapshot.PhaseFailed, Reason: reason, Message: log.Clean(msg)}
	}
	log.Printf("deleted %s", store.URI())
	return done
}
