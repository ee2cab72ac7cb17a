//go:build e2e

package backup

import (
	"context"
	"testing"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

func TestMain(m *testing.M) {
	framework.Main(m, framework.Options{Scheme: e2eutil.Scheme})
}

// env is what the scenarios share: the operator, the S3 server and a 3-member source cluster
// with TLS and auth under a writer that records the revision of every acknowledged write.
type env struct {
	c     *framework.Cluster
	op    *e2eutil.Operator
	store *framework.S3
	ns    string
	src   tlsAuthCluster
	rec   *recorder
	// bulkLoaded: loadBulk has run.
	bulkLoaded bool
}

const srcPassword = "source-root-password"

// TestBackups runs the schedule (minutes of wall time) beside the other scenarios, which run one
// after the other: 2 cores carry only so many etcd clusters at once.
func TestBackups(t *testing.T) {
	c := framework.Shared(t)
	op := e2eutil.StartSuiteOperator(t, c, 200)
	store := framework.StartS3(t, c)
	if err := store.CreateBucket(context.Background(), bucket); err != nil {
		t.Fatal(err)
	}
	ns := e2eutil.NewNamespace(t, c)
	createCredentials(t, c, ns, credsSecret, store.Root)
	src := newTLSAuthCluster(t, c, ns, "src", 3, srcPassword)
	src.waitReady(t, c, 3)
	rec := startRecorder(src.root(t, c), "/rec/")
	e := &env{c: c, op: op, store: store, ns: ns, src: src, rec: rec}
	t.Run("Scenarios", func(t *testing.T) {
		t.Run("ScheduleEveryMinuteKeepsThree", func(t *testing.T) { t.Parallel(); e.testSchedule(t) })
		t.Run("Sequence", func(t *testing.T) {
			t.Parallel()
			for _, s := range []struct {
				name string
				run  func(*testing.T)
			}{
				{"SnapshotToS3AndRestores", e.testS3Restores},
				{"EncryptedSnapshotRestores", e.testEncrypted},
				{"SnapshotToPVCAndRestore", e.testPVC},
				{"CorruptedArtifactRefused", e.testCorrupted},
				{"S3DownThenBackAndWrongCredentials", e.testS3Down},
				{"OperatorKilledMidSnapshot", e.testOperatorKilled},
				{"MemberKilledMidSnapshot", e.testMemberKilled},
				{"InPlaceRollback", e.testRollback},
				{"QuorumLossRebuiltFromSurvivor", e.testQuorumLossSurvivor},
				{"QuorumLossRestoredFromLatestSnapshot", e.testQuorumLossSnapshot},
			} {
				t.Run(s.name, s.run)
			}
		})
	})
	rec.Stop()
	if n := len(rec.upTo(1 << 62)); n == 0 {
		t.Error("the writer never got a write acknowledged")
	}
}
