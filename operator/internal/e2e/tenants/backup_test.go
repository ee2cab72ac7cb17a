//go:build e2e

package tenants

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/tenants/specs"
)

const (
	backupBucket = "tenants"
	backupSecret = "tenant-s3"
	backupPrefix = "etcd"
)

// backupTemplate is the cluster-wide tenant backup template: every minute to the test's S3.
func backupTemplate(endpoint string) string {
	return fmt.Sprintf(`schedule: "* * * * *"
snapshotTemplate:
  destination:
    s3: {endpoint: %q, bucket: %s, key: %s, forcePathStyle: true, credentialsSecretRef: {name: %s}}
retention: {keepLast: 2}
`, endpoint, backupBucket, backupPrefix, backupSecret)
}

func createS3Credentials(t *testing.T, c *framework.Cluster, ns string, cr framework.S3Credentials) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: backupSecret, Namespace: ns}, StringData: map[string]string{
		"AWS_ACCESS_KEY_ID": cr.AccessKeyID, "AWS_SECRET_ACCESS_KEY": cr.SecretAccessKey}}
	if err := c.Client.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
}

// backedUp: the tenant's etcd was backed up by the schedule the controller made from the
// template (it ran all through the scale, the kill, the upgrade and the CA renewal): a Complete
// snapshot whose artifact is under the tenant's own prefix and matches its recorded checksum.
func backedUp(t *testing.T, c *framework.Cluster, store *framework.S3, n specs.Names) {
	t.Helper()
	var done *v1alpha2.EtcdSnapshot
	e2eutil.WaitFor(t, stepTimeout, "a Complete scheduled snapshot of the tenant's etcd", func() bool {
		var list v1alpha2.EtcdSnapshotList
		if err := c.Client.List(context.Background(), &list, client.InNamespace(n.Namespace),
			client.MatchingLabels{v1alpha2.LabelBackupSchedule: n.BackupSchedule()}); err != nil {
			t.Fatal(err)
		}
		for i, s := range list.Items {
			if s.Status.Phase == v1alpha2.SnapshotComplete {
				done = &list.Items[i]
			}
		}
		return done != nil
	})
	prefix := strings.Join([]string{backupPrefix, n.Namespace, n.TCP}, "/") + "/"
	key := strings.TrimPrefix(done.Status.Artifact.URI, "s3://"+backupBucket+"/")
	if !strings.HasPrefix(key, prefix) {
		t.Fatalf("artifact %s is not under the tenant's prefix %s", done.Status.Artifact.URI, prefix)
	}
	ctx := context.Background()
	out, err := store.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(backupBucket), Key: aws.String(key)})
	if err != nil {
		t.Fatal(err)
	}
	defer out.Body.Close()
	h := sha256.New()
	size, err := io.Copy(h, out.Body)
	if err != nil {
		t.Fatal(err)
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != done.Status.Artifact.Checksum {
		t.Fatalf("artifact %s: %s, recorded %s", key, got, done.Status.Artifact.Checksum)
	}
	t.Logf("tenant backup: %s Complete, %d bytes at %s, revision %d", done.Name, size, done.Status.Artifact.URI, done.Status.Revision)
}
