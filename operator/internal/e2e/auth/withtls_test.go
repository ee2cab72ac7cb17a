//go:build e2e

package auth

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/cozystack/etcd-operator/e2e/framework"
	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/e2e/e2eutil"
)

// testAuthWithClientTLSOnPlaintext: client TLS and auth added in one change to a running
// plaintext cluster. Auth is enabled only after every member serves TLS and the operator dials
// it (its Event follows the ClientTLSServing Event); the cluster ends TLS only, with auth.
func testAuthWithClientTLSOnPlaintext(t *testing.T, c *framework.Cluster, ns string) {
	e2eutil.CreateCluster(t, c, ns, "plain", 3)
	e2eutil.WaitConverged(t, c, ns, "plain", 3, convergeTimeout)
	e2eutil.CreateServerSecret(t, c, ns, "plain-server", "plain")
	root := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "plain-root", Namespace: ns}, Type: corev1.SecretTypeBasicAuth,
		StringData: map[string]string{corev1.BasicAuthUsernameKey: "root", corev1.BasicAuthPasswordKey: "pw-plain"}}
	if err := c.Client.Create(context.Background(), root); err != nil {
		t.Fatal(err)
	}
	ec := e2eutil.GetCluster(t, c, ns, "plain")
	patch := client.MergeFrom(ec.DeepCopy())
	ec.Spec.TLS = &v1alpha2.TLSSpec{Client: &v1alpha2.ClientTLS{ServerSecretRef: &corev1.LocalObjectReference{Name: "plain-server"}}}
	ec.Spec.Auth = authSpec("plain")
	start := time.Now()
	if err := c.Client.Patch(context.Background(), ec, patch); err != nil {
		t.Fatalf("adding client TLS and auth to a running plaintext cluster refused: %v", err)
	}
	e2eutil.WaitFor(t, convergeTimeout, "auth enabled and every member serving TLS only", func() bool {
		if !e2eutil.GetCluster(t, c, ns, "plain").Status.AuthEnabled {
			return false
		}
		for _, m := range e2eutil.Members(t, c, ns, "plain") {
			p := e2eutil.Pod(t, c, ns, m.Name)
			if p == nil || !e2eutil.PodReady(p) || !slices.Contains(p.Spec.Containers[0].Command, "--listen-client-urls=https://0.0.0.0:2379") {
				return false
			}
		}
		return true
	})
	t.Logf("client TLS and auth added to a running plaintext cluster: TLS only with auth %s later", time.Since(start).Round(time.Millisecond))
	serving := e2eutil.FindEvent(t, c, ns, "plain", v1alpha2.ReasonClientTLSServing)
	enabled := e2eutil.FindEvent(t, c, ns, "plain", v1alpha2.ReasonAuthEnabled)
	switch {
	case serving == nil || enabled == nil:
		t.Errorf("Events %s=%v %s=%v, want both", v1alpha2.ReasonClientTLSServing, serving != nil, v1alpha2.ReasonAuthEnabled, enabled != nil)
	case enabled.EventTime.Before(&serving.EventTime):
		t.Errorf("auth enabled at %s, before every member served TLS at %s: credentials crossed plaintext", enabled.EventTime, serving.EventTime)
	}
	cfg := e2eutil.TLSConfig(t, c, ns, "plain-server", "")
	assertAuthOn(t, c, ns, "plain", cfg, "pw-plain")
	assertAvailable(t, c, ns, "plain", 3)
}
