// Command cert-manager-controller is a cert-manager controller for the project's e2e tests:
// cert-manager's own control loops, wired by a main of our own because upstream's main lives in
// a nested module the Go module proxy does not serve.
//
// It runs only what the e2e tests need: the Certificate controllers, CertificateRequest
// approval and signing for the CA and SelfSigned issuers, and the Issuer/ClusterIssuer status
// controllers. Upstream's controller configuration package is deliberately not used: its
// defaults import the Venafi controllers, whose module (github.com/Venafi/vcert/v5) the proxy
// refuses. No webhook, cainjector, leader election or metrics endpoint.
//
// The module path sits under github.com/cert-manager/cert-manager/ only so that Go's internal/
// rule lets the controller packages' internal imports resolve; no source of cert-manager is
// copied here.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"k8s.io/klog/v2"

	controllerpkg "github.com/cert-manager/cert-manager/pkg/controller"
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"
	logf "github.com/cert-manager/cert-manager/pkg/logs"

	// The issuer implementations the Issuer/ClusterIssuer controllers can set up; they register
	// themselves with pkg/issuer. Any other issuer type gets a "not registered" status.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
)

// controllers are the control loops this binary runs. Each package registers its constructor
// with pkg/controller in init(); naming them here (rather than running all of Known()) makes a
// missing import a startup error instead of a silently absent loop.
var controllers = []string{
	// Certificate -> CertificateRequest -> Secret.
	trigger.ControllerName,
	keymanager.ControllerName,
	requestmanager.ControllerName,
	issuing.ControllerName,
	readiness.ControllerName,
	revisionmanager.ControllerName,
	// CertificateRequests: approved by cert-manager's own approver, signed by the CA and
	// SelfSigned issuers.
	crapprover.ControllerName,
	crca.CRControllerName,
	crselfsigned.CRControllerName,
	// Issuer and ClusterIssuer Ready conditions.
	issuers.ControllerName,
	clusterissuers.ControllerName,
}

type options struct {
	kubeconfig, namespace, clusterResourceNamespace string
	workers                                         int
}

func main() {
	var o options
	fs := flag.NewFlagSet(os.Args[0], flag.ExitOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; empty means in-cluster or $KUBECONFIG")
	fs.StringVar(&o.namespace, "namespace", "", "only watch this namespace; empty watches all")
	fs.StringVar(&o.clusterResourceNamespace, "cluster-resource-namespace", "kube-system",
		"namespace holding the Secrets that ClusterIssuers reference")
	fs.IntVar(&o.workers, "workers", 5, "workers per control loop")
	klog.InitFlags(fs) // -v and friends
	_ = fs.Parse(os.Args[1:])
	if o.kubeconfig == "" {
		o.kubeconfig = os.Getenv("KUBECONFIG")
	}

	logf.InitLogs()
	defer logf.FlushLogs()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "cert-manager-controller:", err)
		logf.FlushLogs()
		os.Exit(1)
	}
}

// contextOptions are the settings the selected controllers read; the values are cert-manager's
// documented defaults for its controller flags.
func contextOptions(o options) controllerpkg.ContextOptions {
	return controllerpkg.ContextOptions{
		Kubeconfig:         o.kubeconfig,
		KubernetesAPIQPS:   20,
		KubernetesAPIBurst: 50,
		Namespace:          o.namespace,
		IssuerOptions:      controllerpkg.IssuerOptions{ClusterResourceNamespace: o.clusterResourceNamespace},
		CertificateOptions: controllerpkg.CertificateOptions{
			// Copy every annotation from Certificate to CertificateRequest except tool-owned ones.
			CopiedAnnotationPrefixes:                 []string{"*", "-kubectl.kubernetes.io/", "-fluxcd.io/", "-argocd.argoproj.io/"},
			CertificateRequestMinimumBackoffDuration: time.Hour,
			CertificateRequestMaximumBackoffDuration: 32 * time.Hour,
		},
	}
}

func run(ctx context.Context, o options) error {
	ctx = logf.NewContext(ctx, klog.Background(), "cert-manager-controller")
	log := logf.FromContext(ctx)
	factory, err := controllerpkg.NewContextFactory(ctx, contextOptions(o))
	if err != nil {
		return err
	}
	loops, err := construct(factory, o.namespace != "")
	if err != nil {
		return err
	}
	// Constructing the controllers registered their informers; start them only now, since a
	// factory starts just the informers it knows of at Start time.
	shared, err := factory.Build("informers")
	if err != nil {
		return err
	}
	shared.KubeSharedInformerFactory.Start(ctx.Done())
	shared.SharedInformerFactory.Start(ctx.Done())

	errs := make(chan error, len(loops))
	var wg sync.WaitGroup
	for name, loop := range loops {
		wg.Go(func() {
			log.Info("starting control loop", "controller", name)
			if err := loop.Run(o.workers, ctx); err != nil {
				errs <- fmt.Errorf("controller %s: %w", name, err)
			}
		})
	}
	log.Info("running", "controllers", len(loops))
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	wg.Wait()
	log.Info("control loops exited")
	return err
}

// construct builds the selected control loops. ClusterIssuers are cluster-scoped, so their
// controller is skipped when the binary is limited to one namespace.
func construct(factory *controllerpkg.ContextFactory, namespaced bool) (map[string]controllerpkg.Interface, error) {
	known := controllerpkg.Known()
	loops := map[string]controllerpkg.Interface{}
	for _, name := range controllers {
		if namespaced && name == clusterissuers.ControllerName {
			continue
		}
		newLoop, ok := known[name]
		if !ok {
			return nil, fmt.Errorf("controller %s is not registered (package not imported?)", name)
		}
		loop, err := newLoop(factory)
		if err != nil {
			return nil, fmt.Errorf("controller %s: %w", name, err)
		}
		loops[name] = loop
	}
	return loops, nil
}
