// Command manager runs the etcd operator's controllers, or, as `manager snapshot-agent`,
// `manager restore-agent` and `manager install-tools <dir>`, the programs its Pods run.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	cmapi "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/agent"
	"github.com/cozystack/etcd-operator/operator/internal/controller/etcdcluster"
	"github.com/cozystack/etcd-operator/operator/internal/etcdaccess"
	"github.com/cozystack/etcd-operator/operator/internal/manager"
	"github.com/cozystack/etcd-operator/operator/internal/tlsmaterial"
	kamaji "github.com/cozystack/etcd-operator/tenants/api/kamaji/v1alpha1"
	tenants "github.com/cozystack/etcd-operator/tenants/controller"
)

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

type options struct {
	metricsAddr, probeAddr  string
	leaderElect             bool
	leaderElectionID        string
	watchNamespaces         string
	clusterDomain           string
	imageRepository         string
	agentImage              string
	workers                 int
	tenantController        bool
	tenant                  tenantOptions
	nodeGrace, pvcNodeGrace time.Duration
}

// tenantOptions configure the tenant controller (the operator chart's tenantController values).
type tenantOptions struct {
	templateFile   string
	backupFile     string
	serveByDefault bool
	deletionPolicy string
	kamajiDefault  string
}

func parseFlags(args []string, zapOpts *zap.Options) (options, error) {
	var o options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "address the metrics endpoint binds to; 0 disables it")
	fs.StringVar(&o.probeAddr, "health-probe-bind-address", ":8081", "address the health and readiness probes bind to")
	fs.BoolVar(&o.leaderElect, "leader-elect", false, "elect one active replica through a Lease (--leader-election-id)")
	fs.StringVar(&o.leaderElectionID, "leader-election-id", v1alpha2.DefaultLeaderElectionID,
		"name of the Lease (in the operator's namespace) whose holder is the active replica; an operator this one replaces that elects through the same Lease never runs beside it")
	fs.StringVar(&o.watchNamespaces, "watch-namespace", os.Getenv("WATCH_NAMESPACE"), "comma-separated namespaces to watch; empty watches all")
	fs.StringVar(&o.clusterDomain, "cluster-domain", "",
		"the Kubernetes cluster DNS domain (member names, TLS names); empty reads it from /etc/resolv.conf, else cluster.local")
	fs.StringVar(&o.imageRepository, "etcd-image-repository", envOr("ETCD_IMAGE_REPOSITORY", v1alpha2.DefaultImageRepository),
		"etcd image repository; the tag is v<spec.version>")
	fs.StringVar(&o.agentImage, "agent-image", os.Getenv("AGENT_IMAGE"),
		"the operator's own image: its binary takes and restores snapshots in Pods and guards tmpfs members' data dirs (empty: snapshots fail and restores wait, saying why; tmpfs members run unguarded)")
	fs.IntVar(&o.workers, "max-concurrent-reconciles", 4, "workers per controller")
	fs.DurationVar(&o.nodeGrace, "node-grace-period", etcdcluster.DefaultNodeGracePeriod,
		"how long a tmpfs member's node may be NotReady before the member is replaced")
	fs.DurationVar(&o.pvcNodeGrace, "pvc-node-grace-period", etcdcluster.DefaultPVCNodeGracePeriod,
		"how long a member with a PVC may sit on a NotReady node before it is replaced (or moved with its volume, if the node is marked node.kubernetes.io/out-of-service)")
	fs.BoolVar(&o.tenantController, "enable-tenant-controller", false,
		"run the tenant controller: each served Kamaji TenantControlPlane gets its own EtcdCluster and DataStore")
	fs.StringVar(&o.tenant.templateFile, "tenant-etcd-template", "", "file with the EtcdCluster spec (YAML) every tenant etcd starts from")
	fs.StringVar(&o.tenant.backupFile, "tenant-backup-template", "",
		"file with the EtcdBackupSchedule spec (YAML, no clusterRef) every tenant etcd is backed up by; empty: no backups")
	fs.BoolVar(&o.tenant.serveByDefault, "tenant-serve-by-default", false,
		"serve TenantControlPlanes that neither their annotation nor their namespace's label "+v1alpha2.AnnotationTenantEtcd+" decides")
	fs.StringVar(&o.tenant.deletionPolicy, "tenant-deletion-policy", v1alpha2.TenantDeletionDelete,
		"what becomes of a tenant's etcd and DataStore once its TenantControlPlane is gone: Delete or Retain")
	fs.StringVar(&o.tenant.kamajiDefault, "tenant-kamaji-default-datastore", tenants.KamajiDefaultDataStore,
		"the DataStore Kamaji's webhook writes into TenantControlPlanes created without one (Kamaji's defaultDatastoreName): a served TCP on it moves to its own etcd; empty treats it as any DataStore not made by the tenant controller (left alone)")
	zapOpts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.clusterDomain == "" {
		o.clusterDomain = clusterDomainFrom(readFile("/etc/resolv.conf"))
	}
	return o, nil
}

// clusterDomainFrom finds the cluster domain in a Pod's resolv.conf: the kubelet writes the
// search list "<ns>.svc.<domain> svc.<domain> <domain>". Without one it is cluster.local.
func clusterDomainFrom(resolvConf string) string {
	for _, line := range strings.Split(resolvConf, "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "search" {
			continue
		}
		for _, f := range fields[1:] {
			if d, ok := strings.CutPrefix(strings.TrimSuffix(f, "."), "svc."); ok && d != "" {
				return d
			}
		}
	}
	return "cluster.local"
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return string(b)
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// managerOptions are the controller-runtime manager's options from the flags.
func managerOptions(o options, scheme *runtime.Scheme) ctrl.Options {
	return ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress: o.probeAddr,
		LeaderElection:         o.leaderElect,
		LeaderElectionID:       o.leaderElectionID,
		Cache:                  cacheOptions(o.watchNamespaces),
	}
}

// cacheOptions scopes the cache to the watched namespaces, and Secrets to those labelled with
// a cluster (the operator's TLS Secrets): no cluster-wide Secret cache.
func cacheOptions(watch string) cache.Options {
	opts := cache.Options{ByObject: tlsmaterial.CacheByObject()}
	for _, ns := range strings.Split(watch, ",") {
		if ns = strings.TrimSpace(ns); ns != "" {
			if opts.DefaultNamespaces == nil {
				opts.DefaultNamespaces = map[string]cache.Config{}
			}
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}

func main() {
	// The programs that run inside Pods (snapshot and restore agents, install-tools) are
	// subcommands of this binary; anything else starts the manager.
	if len(os.Args) > 1 {
		if code, ok := agent.Main(os.Args[1], os.Args[2:]); ok {
			os.Exit(code)
		}
	}
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	zapOpts := zap.Options{}
	o, err := parseFlags(args, &zapOpts)
	if err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := v1alpha2.AddToScheme(scheme); err != nil {
		return err
	}
	if err := cmapi.AddToScheme(scheme); err != nil {
		return err
	}
	if err := kamaji.AddToScheme(scheme); err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), managerOptions(o, scheme))
	if err != nil {
		return err
	}
	// One TLS source and one etcd access for all controllers: they share the pooled etcd
	// client, keyed on its tls.Config.
	tlsSource := tlsmaterial.NewSource(mgr.GetClient(), mgr.GetAPIReader())
	access := etcdaccess.NewPooled(mgr.GetClient(), nil, tlsSource)
	defer access.Close()
	if err := manager.Setup(mgr, access, tlsSource, manager.Options{Workers: o.workers, ClusterDomain: o.clusterDomain,
		ImageRepository: o.imageRepository, AgentImage: o.agentImage, NodeGracePeriod: o.nodeGrace, PVCNodeGracePeriod: o.pvcNodeGrace}); err != nil {
		return err
	}
	if o.tenantController {
		if err := tenants.Setup(mgr, tenants.Files{Template: o.tenant.templateFile, Backup: o.tenant.backupFile}, tenants.Options{ServeByDefault: o.tenant.serveByDefault,
			DeletionPolicy: o.tenant.deletionPolicy, KamajiDefaultDataStore: o.tenant.kamajiDefault, Workers: o.workers}); err != nil {
			return err
		}
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctrl.SetupSignalHandler())
}
