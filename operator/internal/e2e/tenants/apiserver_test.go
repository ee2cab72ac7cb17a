//go:build e2e

package tenants

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/e2e/localcluster"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

const apiserverToken = "tenant-admin-token"

// startTenantAPIServer runs kube-apiserver from the tools cache as a Pod in ns with the flags
// Kamaji gives a tenant (reference §3.3: --etcd-servers, --etcd-prefix=/<schema>, the etcd
// CA, the tenant's client certificate), and returns a client of it once /readyz answers.
func startTenantAPIServer(t *testing.T, c *framework.Cluster, ns, schema string, creds tenantCreds) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	ctx := context.Background()
	version, err := localcluster.KubernetesVersion(localcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	saKey, saPub := serviceAccountKeys(t)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tenant-apiserver", Namespace: ns}, Data: map[string][]byte{
		"etcd-ca.crt": creds.caPEM, "etcd-client.crt": creds.certPEM, "etcd-client.key": creds.keyPEM,
		"sa.key": saKey, "sa.pub": saPub, "tokens.csv": []byte(apiserverToken + ",tenant-admin,tenant-admin,system:masters\n"),
	}}
	if err := c.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	var servers []string
	for _, e := range creds.endpoints {
		servers = append(servers, "https://"+e)
	}
	args := []string{
		"--etcd-servers=" + strings.Join(servers, ","), "--etcd-prefix=/" + schema,
		"--etcd-cafile=/pki/etcd-ca.crt", "--etcd-certfile=/pki/etcd-client.crt", "--etcd-keyfile=/pki/etcd-client.key",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file=/pki/sa.pub",
		"--service-account-signing-key-file=/pki/sa.key", "--service-cluster-ip-range=10.250.0.0/24",
		"--authorization-mode=AlwaysAllow", "--token-auth-file=/pki/tokens.csv", "--secure-port=6443",
		"--cert-dir=/var/run/kubernetes", "--enable-priority-and-fairness=false",
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tenant-apiserver", Namespace: ns}, Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		Containers: []corev1.Container{{Name: "kube-apiserver", Image: "registry.k8s.io/kube-apiserver:" + version,
			Command:      append([]string{"kube-apiserver"}, args...),
			VolumeMounts: []corev1.VolumeMount{{Name: "pki", MountPath: "/pki", ReadOnly: true}, {Name: "certs", MountPath: "/var/run/kubernetes"}},
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false),
				Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}}}},
		Volumes: []corev1.Volume{
			{Name: "pki", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret.Name, DefaultMode: ptr.To[int32](0o444)}}},
			{Name: "certs", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}}}
	if err := c.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitFor(t, 2*time.Minute, "the tenant apiserver Pod has an IP", func() bool {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			t.Fatal(err)
		}
		return pod.Status.PodIP != ""
	})
	dial := e2eutil.ClusterDialer(c)
	cfg := &rest.Config{Host: "https://" + pod.Status.PodIP + ":6443", BearerToken: apiserverToken,
		TLSClientConfig: rest.TLSClientConfig{Insecure: true}, Dial: dial, Timeout: 5 * time.Second, QPS: 100, Burst: 100}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e2eutil.WaitNoError(t, 2*time.Minute, "the tenant apiserver's /readyz", func() error {
		return readyz(ctx, cs)
	})
	return cs, cfg
}

func readyz(ctx context.Context, cs *kubernetes.Clientset) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}

// serviceAccountKeys is the tenant apiserver's token signing key pair.
func serviceAccountKeys(t *testing.T) (keyPEM, pubPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub})
}

// tenantClient writes ConfigMaps through the tenant apiserver one after another and probes its
// /readyz, counting per phase, as a tenant's workload would see its control plane.
type tenantClient struct {
	cs   *kubernetes.Clientset
	stop chan struct{}
	wg   sync.WaitGroup

	mu     sync.Mutex
	phase  string
	acked  []string
	counts map[string]*phaseCounts
	phases []string
}

type phaseCounts struct {
	writes, failed, probes, unready int
	lastErr                         string
}

func startTenantClient(cs *kubernetes.Clientset, phase string) *tenantClient {
	w := &tenantClient{cs: cs, stop: make(chan struct{}), counts: map[string]*phaseCounts{}}
	w.setPhase(phase)
	w.wg.Add(2)
	go w.write()
	go w.probe()
	return w
}

func (w *tenantClient) setPhase(p string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.phase = p
	if w.counts[p] == nil {
		w.counts[p] = &phaseCounts{}
		w.phases = append(w.phases, p)
	}
}

func (w *tenantClient) acknowledged() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked
}

func (w *tenantClient) record(f func(*phaseCounts)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f(w.counts[w.phase])
}

func (w *tenantClient) write() {
	defer w.wg.Done()
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		default:
		}
		name := fmt.Sprintf("w-%06d", n)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := w.cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name},
			Data: map[string]string{"n": fmt.Sprint(n)}}, metav1.CreateOptions{})
		cancel()
		w.record(func(p *phaseCounts) {
			p.writes++
			if err != nil {
				p.failed++
				p.lastErr = err.Error()
			}
		})
		if err == nil {
			w.mu.Lock()
			w.acked = append(w.acked, name)
			w.mu.Unlock()
		} else {
			time.Sleep(200 * time.Millisecond) // a client backs off a little
		}
	}
}

func (w *tenantClient) probe() {
	defer w.wg.Done()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
		}
		err := readyz(context.Background(), w.cs)
		w.record(func(p *phaseCounts) {
			p.probes++
			if err != nil {
				p.unready++
			}
		})
	}
}

// finish stops the client, logs the table, and checks that every acknowledged ConfigMap is there.
func (w *tenantClient) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	w.wg.Wait()
	t.Logf("%-28s %8s %8s %10s", "phase", "writes", "failed", "readyz ok")
	for _, p := range w.phases {
		c := w.counts[p]
		t.Logf("%-28s %8d %8d %6d/%-4d %s", p, c.writes, c.failed, c.probes-c.unready, c.probes, c.lastErr)
	}
	var list *corev1.ConfigMapList
	e2eutil.WaitNoError(t, time.Minute, "listing the tenant's ConfigMaps", func() error {
		var err error
		list, err = w.cs.CoreV1().ConfigMaps("default").List(context.Background(), metav1.ListOptions{})
		return err
	})
	have := map[string]bool{}
	for _, cm := range list.Items {
		have[cm.Name] = true
	}
	lost := 0
	for _, name := range w.acked {
		if !have[name] {
			lost++
		}
	}
	t.Logf("%d ConfigMaps acknowledged by the tenant apiserver, %d lost", len(w.acked), lost)
	if lost > 0 || len(w.acked) == 0 {
		t.Errorf("%d of %d acknowledged ConfigMaps lost", lost, len(w.acked))
	}
}
