package agent

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// The cleanup agent deletes only what its snapshot wrote, and an artifact that is not there
// counts as deleted.
func TestDeleteArtifact(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := snapshot.NewDirStore(dir, "s.db", "claim", "s.db")
	if err != nil {
		t.Fatal(err)
	}
	log := NewLogger(io.Discard, "test")
	if r := DeleteArtifact(ctx, store, "uid-1", log); r.Phase != snapshot.PhaseDeleted {
		t.Errorf("nothing stored: %+v, want Deleted", r)
	}
	if err := store.Put(ctx, bytes.NewReader([]byte("db")), snapshot.Meta{Owner: "uid-1"}); err != nil {
		t.Fatal(err)
	}
	if r := DeleteArtifact(ctx, store, "uid-2", log); r.Phase != snapshot.PhaseDeleted {
		t.Errorf("another owner's: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.db")); err != nil {
		t.Fatalf("another snapshot's artifact was deleted: %v", err)
	}
	if r := DeleteArtifact(ctx, store, "uid-1", log); r.Phase != snapshot.PhaseDeleted {
		t.Errorf("own artifact: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(dir, "s.db")); !os.IsNotExist(err) {
		t.Errorf("own artifact still there: %v", err)
	}
}
