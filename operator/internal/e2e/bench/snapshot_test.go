//go:build e2e && bench

package bench

//lint:file-ignore SA1019 the bench uploads with the agent's (deprecated, pinned) uploader to measure the same path.

import (
	"context"
	"io"

	"crypto/rand"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
	"github.com/cozystack/etcd-operator/operator/internal/snapshot"
)

// benchRuns is how many times each snapshot is taken (BENCH_SNAPSHOT_RUNS, default 3).
func benchRuns() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_SNAPSHOT_RUNS")); err == nil && v > 0 {
		return v
	}
	return 3
}

// runs are the durations of one kind of snapshot, one per round.
type runs []time.Duration

func (r runs) median() time.Duration {
	s := slices.Clone(r)
	slices.Sort(s)
	return s[len(s)/2]
}

// describe is the median duration and throughput of bytes, and the range.
func (r runs) describe(bytes int64) string {
	return fmt.Sprintf("%s, %.0f MiB/s (%s to %s)", secs(r.median()), mibps(bytes, r.median()), secs(slices.Min(r)), secs(slices.Max(r)))
}

// ratios is the median and range, over the rounds, of r's time over other's: how other's
// throughput compares with r's measured minutes apart.
func (r runs) ratios(other runs) string {
	var q []float64
	for i := range r {
		q = append(q, r[i].Seconds()/other[i].Seconds())
	}
	slices.Sort(q)
	return fmt.Sprintf("%.2fx (%.2fx to %.2fx)", q[len(q)/2], q[0], q[len(q)-1])
}

// benchDBMiB is the database the snapshot bench fills (BENCH_SNAPSHOT_MIB, default 1024).
func benchDBMiB() int {
	if v, err := strconv.Atoi(os.Getenv("BENCH_SNAPSHOT_MIB")); err == nil && v > 0 {
		return v
	}
	return 1024
}

// TestBenchSnapshot measures a snapshot of a large database: the agent to S3 against `etcdctl
// snapshot save` run from the same place (a Pod beside the members, writing to local disk: the
// practical limit), the operator's and the agent's memory meanwhile, and the restore of the same
// snapshot into a new cluster.
func TestBenchSnapshot(t *testing.T) {
	c := framework.Shared(t)
	if err := e2eutil.InstallCRDs(c); err != nil {
		t.Fatal(err)
	}
	op := e2eutil.StartOperator(t, c)
	var tb table
	defer tb.print()
	ctx := context.Background()
	ns := e2eutil.NewNamespace(t, c)
	mib := benchDBMiB()
	size := resource.MustParse(fmt.Sprintf("%dMi", mib*4))
	e2eutil.CreateCluster(t, c, ns, "big", 1, func(s *v1alpha2.EtcdClusterSpec) {
		s.Storage.Size = size
		s.Options = &v1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To(int64(mib*4) << 20)}
	})
	e2eutil.WaitConverged(t, c, ns, "big", 1, timeout)
	start := time.Now()
	fill(t, c, ns, "big", mib)
	tb.add(fmt.Sprintf("fill the database with %d MiB", mib), secs(time.Since(start)), "")

	store := framework.StartS3(t, c)
	if err := store.CreateBucket(ctx, "bench"); err != nil {
		t.Fatal(err)
	}
	creds := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns}, StringData: map[string]string{
		"AWS_ACCESS_KEY_ID": store.Root.AccessKeyID, "AWS_SECRET_ACCESS_KEY": store.Root.SecretAccessKey}}
	if err := c.Client.Create(ctx, creds); err != nil {
		t.Fatal(err)
	}
	// etcdctl, the agent to S3 and the agent to a PVC take turns, runs times: this machine's
	// disk varies by 2x from one minute to the next, so single runs compare weather, not code.
	createPVC(t, c, ns, "snapshots", resource.MustParse(fmt.Sprintf("%dMi", mib*2*benchRuns())))
	var ctl, toS3, toPVC runs
	var baseBytes, opGrowth, peakS3, peakPVC int64
	var snap, onPVC *v1alpha2.EtcdSnapshot
	etcdPID := memberPID(t, c, ns, "big")
	var cpuCtl, cpuS3, cpuPVC string // the last round's
	for i := range benchRuns() {
		var d time.Duration
		w := watchCPU(store.Pid(), etcdPID)
		d, baseBytes = etcdctlSave(t, c, ns, "big", fmt.Sprintf("etcdctl-save-%d", i))
		ctl, cpuCtl = append(ctl, d), w.report()
		var growth, peak int64
		w = watchCPU(store.Pid(), etcdPID)
		snap, growth, peak = takeSnapshot(t, c, op, ns, fmt.Sprintf("big-s3-%d", i), v1alpha2.SnapshotLocation{S3: &v1alpha2.S3Location{
			Endpoint: store.Endpoint, Bucket: "bench", ForcePathStyle: true, CredentialsSecretRef: corev1.LocalObjectReference{Name: "s3"}}})
		toS3, cpuS3 = append(toS3, snap.Status.Duration.Duration), w.report()
		opGrowth, peakS3 = max(opGrowth, growth), max(peakS3, peak)
		w = watchCPU(store.Pid(), etcdPID)
		onPVC, _, peak = takeSnapshot(t, c, op, ns, fmt.Sprintf("big-pvc-%d", i), v1alpha2.SnapshotLocation{PVC: &v1alpha2.PVCLocation{ClaimName: "snapshots"}})
		toPVC, cpuPVC = append(toPVC, onPVC.Status.Duration.Duration), w.report()
		peakPVC = max(peakPVC, peak)
	}
	n := len(ctl)
	tb.add(fmt.Sprintf("etcdctl snapshot save, from a Pod to local disk (median of %d)", n), ctl.describe(baseBytes), "")
	tb.add("  CPU meanwhile, last run (cores)", cpuCtl, "")
	w := watchCPU(store.Pid())
	up := uploadLimit(t, store, baseBytes)
	tb.add("S3 multipart upload of as many bytes from the test process (the store's limit)", fmt.Sprintf("%s, %.0f MiB/s, %.2fx etcdctl",
		secs(up), mibps(baseBytes, up), ctl.median().Seconds()/up.Seconds()), "")
	tb.add("  CPU meanwhile (cores)", w.report(), "")
	tb.add(fmt.Sprintf("EtcdSnapshot to S3: stream, upload, read back, verify (median of %d)", n), toS3.describe(snap.Status.Artifact.SizeBytes), "")
	tb.add("  against etcdctl in the same round (median, range)", ctl.ratios(toS3), ">= 0.8x etcdctl")
	if phase := streamPhase(t, c, ns, v1alpha2.SnapshotAgentPodName(snap.Name)); phase != "" {
		tb.add("  of which stream + upload, last run (agent log)", phase, "")
	}
	tb.add("  CPU meanwhile, last run (cores)", cpuS3, "")
	tb.add(fmt.Sprintf("EtcdSnapshot to a PVC on etcdctl's disk: stream, fsync, rename, read back, verify (median of %d)", n),
		toPVC.describe(onPVC.Status.Artifact.SizeBytes), "")
	tb.add("  against etcdctl in the same round (median, range)", ctl.ratios(toPVC), ">= 0.8x etcdctl")
	if phase := streamPhase(t, c, ns, v1alpha2.SnapshotAgentPodName(onPVC.Name)); phase != "" {
		tb.add("  of which stream + write, last run (agent log)", phase, "")
	}
	tb.add("  CPU meanwhile, last run (cores)", cpuPVC, "")
	tb.add("operator RSS growth during a snapshot (max)", fmt.Sprintf("%.1f MiB", float64(opGrowth)/(1<<20)), "<= 64 MiB")
	tb.add("agent peak RSS (VmHWM), to S3 / to a PVC", fmt.Sprintf("%.0f / %.0f MiB", float64(peakS3)/(1<<20), float64(peakPVC)/(1<<20)), "")

	start = time.Now()
	e2eutil.CreateCluster(t, c, ns, "restored", 1, func(s *v1alpha2.EtcdClusterSpec) {
		s.Storage.Size = size
		s.Options = &v1alpha2.EtcdOptions{QuotaBackendBytes: ptr.To(int64(mib*4) << 20)}
		s.Bootstrap = &v1alpha2.BootstrapSpec{Restore: &v1alpha2.RestoreSpec{Source: v1alpha2.RestoreSource{
			SnapshotRef: &corev1.LocalObjectReference{Name: snap.Name}}}}
	})
	e2eutil.WaitConverged(t, c, ns, "restored", 1, 2*timeout)
	tb.add(fmt.Sprintf("restore of the %d MiB snapshot: create -> Available", snap.Status.Artifact.SizeBytes>>20), secs(time.Since(start)), "")
}

// takeSnapshot creates an EtcdSnapshot of cluster "big" and waits for it to complete; it returns
// it with the operator's RSS growth and the agent's peak RSS meanwhile.
func takeSnapshot(t *testing.T, c *framework.Cluster, op *e2eutil.Operator, ns, name string, dest v1alpha2.SnapshotLocation) (*v1alpha2.EtcdSnapshot, int64, int64) {
	t.Helper()
	ctx := context.Background()
	rssBefore, _ := op.RSSBytes()
	snap := &v1alpha2.EtcdSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha2.EtcdSnapshotSpec{ClusterRef: corev1.LocalObjectReference{Name: "big"}, Destination: dest}}
	if err := c.Client.Create(ctx, snap); err != nil {
		t.Fatal(err)
	}
	peakOp, peakAgent := sampleRSS(t, c, op, ns, v1alpha2.SnapshotAgentPodName(snap.Name), func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(snap), snap); err != nil {
			t.Fatal(err)
		}
		return snap.Status.Phase == v1alpha2.SnapshotComplete || snap.Status.Phase == v1alpha2.SnapshotFailed
	})
	if snap.Status.Phase != v1alpha2.SnapshotComplete {
		t.Fatalf("snapshot %s %s: %+v", name, snap.Status.Phase, snap.Status.Conditions)
	}
	return snap, peakOp - rssBefore, peakAgent
}

// memberPID is the etcd process of the cluster's first member.
func memberPID(t *testing.T, c *framework.Cluster, ns, cluster string) int {
	t.Helper()
	pid, err := c.ContainerPID(context.Background(), ns, e2eutil.Members(t, c, ns, cluster)[0].Name, "etcd")
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func createPVC(t *testing.T, c *framework.Cluster, ns, name string, size resource.Quantity) {
	t.Helper()
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}}}}
	if err := c.Client.Create(context.Background(), pvc); err != nil {
		t.Fatal(err)
	}
}

// fill writes mib 1 MiB values with four clients.
func fill(t *testing.T, c *framework.Cluster, ns, name string, mib int) {
	t.Helper()
	cli := e2eutil.EtcdClient(t, c, ns, name)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			v := make([]byte, 1<<20)
			for i := w; i < mib; i += 4 {
				_, _ = rand.Read(v)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				_, err := cli.Put(ctx, fmt.Sprintf("/fill/%06d", i), string(v))
				cancel()
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
}

// etcdctlSave runs etcdctl snapshot save in a Pod with the cluster's etcd image and returns how
// long it took (timed inside the Pod) and the file's size.
func etcdctlSave(t *testing.T, c *framework.Cluster, ns, name, podName string) (time.Duration, int64) {
	t.Helper()
	ctx := context.Background()
	script := fmt.Sprintf(`s=$(date +%%s%%N); etcdctl --endpoints=http://%s.%s.svc:2379 snapshot save /out/s.db >/dev/null || exit 1; `+
		`e=$(date +%%s%%N); echo "$((e-s)) $(stat -c %%s /out/s.db)" > /dev/termination-log`, v1alpha2.ClientServiceName(name, nil), ns)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns}, Spec: corev1.PodSpec{
		RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "save", Image: "quay.io/coreos/etcd:v" + e2eutil.EtcdVersion(),
			Command: []string{"sh", "-c", script}, VolumeMounts: []corev1.VolumeMount{{Name: "out", MountPath: "/out"}}}},
		Volumes: []corev1.Volume{{Name: "out", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}}}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	var msg string
	e2eutil.WaitFor(t, timeout, "etcdctl snapshot save", func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			t.Fatal(err)
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.State.Terminated != nil {
				if cs.State.Terminated.ExitCode != 0 {
					t.Fatalf("etcdctl failed: %s", cs.State.Terminated.Message)
				}
				msg = cs.State.Terminated.Message
				return true
			}
		}
		return false
	})
	f := strings.Fields(msg)
	if len(f) != 2 {
		t.Fatalf("etcdctl Pod reported %q", msg)
	}
	ns64, _ := strconv.ParseInt(f[0], 10, 64)
	bytes, _ := strconv.ParseInt(f[1], 10, 64)
	return time.Duration(ns64), bytes
}

// sampleRSS polls the operator's RSS and the agent's peak RSS until done.
func sampleRSS(t *testing.T, c *framework.Cluster, op *e2eutil.Operator, ns, agent string, done func() bool) (peakOp, peakAgent int64) {
	t.Helper()
	e2eutil.WaitFor(t, 2*timeout, "the snapshot", func() bool {
		if rss, err := op.RSSBytes(); err == nil && rss > peakOp {
			peakOp = rss
		}
		if pid, err := c.ContainerPID(context.Background(), ns, agent, v1alpha2.AgentContainer); err == nil {
			if hwm := vmHWM(pid); hwm > peakAgent {
				peakAgent = hwm
			}
		}
		return done()
	})
	return peakOp, peakAgent
}

func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

func mibps(bytes int64, d time.Duration) float64 { return float64(bytes) / (1 << 20) / d.Seconds() }

// streamPhase is the agent's own account of the stream and upload ("stored N bytes in Xs"),
// read from its log: the snapshot's duration also counts reading the artifact back.
func streamPhase(t *testing.T, c *framework.Cluster, ns, pod string) string {
	t.Helper()
	dir, _, err := c.PodDir(context.Background(), ns, pod)
	if err != nil {
		return ""
	}
	b, err := os.ReadFile(dir + "/" + v1alpha2.AgentContainer + ".log")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if i := strings.Index(line, "stored "); i >= 0 {
			return strings.TrimSpace(line[i:])
		}
	}
	return ""
}

// uploadLimit uploads n bytes with the agent's part size and concurrency: what the S3 server
// takes at best on this machine, the practical limit of a snapshot to it.
func uploadLimit(t *testing.T, store *framework.S3, n int64) time.Duration {
	t.Helper()
	u := manager.NewUploader(store.Client(), func(u *manager.Uploader) {
		u.PartSize, u.Concurrency = snapshot.PartSize, snapshot.PartConcurrency
	})
	start := time.Now()
	if _, err := u.Upload(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bench"), Key: aws.String("limit.bin"),
		Body: io.LimitReader(zeroes{}, n)}); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

type zeroes struct{}

func (zeroes) Read(p []byte) (int, error) { clear(p); return len(p), nil }
