//go:build e2e

package backup

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

const (
	convergeTimeout = 5 * time.Minute
	snapshotTimeout = 3 * time.Minute
	bucket          = "backups"
	credsSecret     = "s3-credentials"
)

// tlsAuthCluster creates a cluster with a BYO server certificate and auth on, as a tenant's
// datastore runs; it returns the TLS config and root's password for clients.
type tlsAuthCluster struct {
	ns, name, password string
	cfg                *tls.Config
}

func newTLSAuthCluster(t *testing.T, c *framework.Cluster, ns, name string, replicas int32, password string,
	mutate ...func(*v1alpha2.EtcdClusterSpec)) tlsAuthCluster {
	t.Helper()
	e2eutil.CreateServerSecret(t, c, ns, name+"-server", name)
	root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name + "-root", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{corev1.BasicAuthUsernameKey: "root", corev1.BasicAuthPasswordKey: password}}
	if err := c.Client.Create(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	e2eutil.CreateCluster(t, c, ns, name, replicas, append([]func(*v1alpha2.EtcdClusterSpec){func(s *v1alpha2.EtcdClusterSpec) {
		s.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: name + "-server"}}}
		s.Auth = &v1alpha2.AuthSpec{Enabled: true, RootCredentialsSecretRef: &corev1.LocalObjectReference{Name: name + "-root"}}
	}}, mutate...)...)
	return tlsAuthCluster{ns: ns, name: name, password: password, cfg: e2eutil.TLSConfig(t, c, ns, name+"-server", "")}
}

// root is a client logged in as root through the client Service, once auth is on.
func (tc tlsAuthCluster) root(t *testing.T, c *framework.Cluster) *clientv3.Client {
	t.Helper()
	var cli *clientv3.Client
	e2eutil.WaitFor(t, convergeTimeout, tc.name+": root logs in", func() bool {
		var err error
		cli, err = e2eutil.TLSEtcdClientAs(t, c, tc.ns, tc.name, tc.cfg, "root", tc.password)
		return err == nil
	})
	return cli
}

func (tc tlsAuthCluster) waitReady(t *testing.T, c *framework.Cluster, n int) {
	t.Helper()
	e2eutil.WaitFor(t, convergeTimeout, fmt.Sprintf("%s: %d members ready, auth on", tc.name, n), func() bool {
		cl := e2eutil.GetCluster(t, c, tc.ns, tc.name)
		return cl.Status.AuthEnabled && cl.Status.ReadyMembers == int32(n) &&
			meta.IsStatusConditionTrue(cl.Status.Conditions, v1alpha2.ConditionAvailable) &&
			meta.IsStatusConditionFalse(cl.Status.Conditions, v1alpha2.ConditionProgressing)
	})
}

// recorder writes keys continuously and remembers the revision each acknowledged write got.
type recorder struct {
	cli    *clientv3.Client
	prefix string
	stop   chan struct{}
	done   chan struct{}
	mu     sync.Mutex
	acked  map[string]ackedWrite
}

type ackedWrite struct {
	value string
	rev   int64
}

func startRecorder(cli *clientv3.Client, prefix string) *recorder {
	r := &recorder{cli: cli, prefix: prefix, stop: make(chan struct{}), done: make(chan struct{}), acked: map[string]ackedWrite{}}
	go r.run()
	return r
}

func (r *recorder) run() {
	defer close(r.done)
	for i := 0; ; i++ {
		select {
		case <-r.stop:
			return
		default:
		}
		key, value := fmt.Sprintf("%s%06d", r.prefix, i), fmt.Sprintf("value-%d-%d", i, time.Now().UnixNano())
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		resp, err := r.cli.Put(ctx, key, value)
		cancel()
		if err == nil {
			r.mu.Lock()
			r.acked[key] = ackedWrite{value: value, rev: resp.Header.Revision}
			r.mu.Unlock()
		}
		time.Sleep(20 * time.Millisecond) // a steady trickle, not a load test
	}
}

func (r *recorder) Stop() { close(r.stop); <-r.done }

// upTo is every acknowledged write with a revision no later than rev.
func (r *recorder) upTo(rev int64) map[string]string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]string{}
	for k, w := range r.acked {
		if w.rev <= rev {
			out[k] = w.value
		}
	}
	return out
}

// assertHas fails unless cli reads every key of want with its value.
func assertHas(t *testing.T, cli *clientv3.Client, prefix string, want map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("read %s: %v", prefix, err)
	}
	got := map[string]string{}
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	missing := 0
	for k, v := range want {
		if got[k] != v {
			missing++
			if missing <= 3 {
				t.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d acknowledged writes up to the snapshot's revision are missing or differ", missing, len(want))
	}
	if len(want) == 0 {
		t.Error("no acknowledged write to check")
	}
}

func s3Location(s *framework.S3, prefix string) *v1alpha2.S3Location {
	return &v1alpha2.S3Location{Endpoint: s.Endpoint, Bucket: bucket, Key: prefix, ForcePathStyle: true,
		CredentialsSecretRef: corev1.LocalObjectReference{Name: credsSecret}}
}

func createCredentials(t *testing.T, c *framework.Cluster, ns, name string, cr framework.S3Credentials) {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{
		"AWS_ACCESS_KEY_ID": cr.AccessKeyID, "AWS_SECRET_ACCESS_KEY": cr.SecretAccessKey}}
	if err := c.Client.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
}

func createSnapshot(t *testing.T, c *framework.Cluster, ns, name, cluster string, dest v1alpha2.SnapshotLocation) {
	t.Helper()
	s := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: cluster}, Destination: dest}}
	if err := c.Client.Create(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func getSnapshot(t *testing.T, c *framework.Cluster, ns, name string) *v1alpha2.EtcdSnapshot {
	t.Helper()
	s := &v1alpha2.EtcdSnapshot{}
	if err := c.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s
}

// waitSnapshot waits for a final phase and returns the snapshot.
func waitSnapshot(t *testing.T, c *framework.Cluster, ns, name string) *v1alpha2.EtcdSnapshot {
	t.Helper()
	var s *v1alpha2.EtcdSnapshot
	e2eutil.WaitFor(t, snapshotTimeout, "EtcdSnapshot "+name+" to finish", func() bool {
		s = getSnapshot(t, c, ns, name)
		return s.Status.Phase == v1alpha2.SnapshotComplete || s.Status.Phase == v1alpha2.SnapshotFailed
	})
	return s
}

func readyReason(conds []metav1.Condition) (string, string) {
	if r := meta.FindStatusCondition(conds, v1alpha2.ConditionReady); r != nil {
		return r.Reason, r.Message
	}
	return "", ""
}

func mustComplete(t *testing.T, s *v1alpha2.EtcdSnapshot) {
	t.Helper()
	if s.Status.Phase != v1alpha2.SnapshotComplete || s.Status.Artifact == nil {
		reason, msg := readyReason(s.Status.Conditions)
		t.Fatalf("EtcdSnapshot %s is %s (%s: %s), want Complete", s.Name, s.Status.Phase, reason, msg)
	}
}

// objects lists the bucket's keys under prefix.
func objects(t *testing.T, s *framework.S3, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.Client().ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, o := range out.Contents {
		keys = append(keys, aws.ToString(o.Key))
	}
	return keys
}

// multipartUploads lists the keys of multipart uploads begun and neither completed nor aborted.
func multipartUploads(t *testing.T, s *framework.S3, prefix string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := s.Client().ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), Prefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, u := range out.Uploads {
		keys = append(keys, aws.ToString(u.Key))
	}
	return keys
}

// download reads an object and returns its bytes' "sha256:<hex>".
func download(t *testing.T, s *framework.S3, key string) ([]byte, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := s.Client().GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get %s: %v", key, err)
	}
	defer func() { _ = out.Body.Close() }()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return b, "sha256:" + hex.EncodeToString(sum[:])
}

func upload(t *testing.T, s *framework.S3, key string, b []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(b)}); err != nil {
		t.Fatal(err)
	}
}

// keyOf is the object key of an s3:// URI.
func keyOf(uri string) string {
	rest := strings.TrimPrefix(uri, "s3://"+bucket+"/")
	return rest
}

func restoreSpec(src v1alpha2.RestoreSource) func(*v1alpha2.EtcdClusterSpec) {
	return func(s *v1alpha2.EtcdClusterSpec) {
		s.Bootstrap = &v1alpha2.BootstrapSpec{Restore: &v1alpha2.RestoreSpec{Source: src}}
	}
}

func metavOf(ns, name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: ns, Name: name} }
