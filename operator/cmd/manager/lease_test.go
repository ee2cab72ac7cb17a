package main

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/cozystack/etcd-operator/internal/testenv"
)

// The Cozystack package runs the manager with --leader-election-id set to the Lease the operator it
// replaces elects through. While that operator's leader holds it, the manager waits as a standby;
// once it lets go (its Deployment deleted by the upgrade), the manager leads.
func TestManagerDoesNotLeadWhileTheReplacedOperatorHoldsItsLease(t *testing.T) {
	const ns, lease = "cozy-etcd-operator", "aa20b3a9.etcd-operator.cozystack.io"
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	// The replaced operator: a controller-runtime manager elects through a LeaseLock like this one.
	oldCtx, stopOld := context.WithCancel(ctx)
	leading, oldDone := make(chan struct{}), make(chan struct{})
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: ns, Name: lease},
			Client: kubernetes.NewForConfigOrDie(env.Config).CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: "replaced-operator"}},
		LeaseDuration: 4 * time.Second, RenewDeadline: 3 * time.Second, RetryPeriod: 500 * time.Millisecond, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { close(leading) }, OnStoppedLeading: func() {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { defer close(oldDone); elector.Run(oldCtx) }()
	<-leading

	o, err := parseFlags([]string{"--leader-elect", "--leader-election-id=" + lease, "--metrics-bind-address=0", "--health-probe-bind-address=0"}, &zap.Options{})
	if err != nil {
		t.Fatal(err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	opts := managerOptions(o, scheme)
	retry := 200 * time.Millisecond
	opts.LeaderElectionNamespace, opts.RetryPeriod = ns, &retry
	mgr, err := ctrl.NewManager(env.Config, opts)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = mgr.Start(ctx) }()

	// A standby tries every RetryPeriod; over many of its attempts, and several renewals of the
	// replaced operator's, it must not take over.
	select {
	case <-mgr.Elected():
		t.Fatal("the manager leads while the replaced operator holds the Lease")
	case <-time.After(25 * retry):
	}
	if holder := leaseHolder(ctx, t, env.Client, ns, lease); holder != "replaced-operator" {
		t.Fatalf("Lease held by %q, want the replaced operator", holder)
	}

	stopOld()
	<-oldDone
	select {
	case <-mgr.Elected():
	case <-ctx.Done():
		t.Fatal("the manager did not lead after the replaced operator let the Lease go")
	}
	if holder := leaseHolder(ctx, t, env.Client, ns, lease); holder == "replaced-operator" || holder == "" {
		t.Errorf("Lease held by %q, want the manager", holder)
	}
}

func leaseHolder(ctx context.Context, t *testing.T, c client.Client, ns, name string) string {
	t.Helper()
	var l coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &l); err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}
