package localcluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// runningCluster is the supervisor's view of one cluster: its components and clients.
type runningCluster struct {
	opts   Options
	layout Layout
	tools  Tools
	dialer Dialer
	logf   func(format string, args ...any)

	components []*component // control plane, in start order
	nodes      map[int]*component
	realNodes  map[int]*realNode
	realTools  RealNodeTools
	innerCfg   *rest.Config // admin, dialing 10.244.0.1:6443 inside the netns
	kube       kubernetes.Interface
	timings    []Timing
}

// Timing is the duration of one phase of `up`.
type Timing struct {
	Phase   string        `json:"phase"`
	Elapsed time.Duration `json:"elapsed"`
}

func (rc *runningCluster) phase(name string, start time.Time) {
	d := time.Since(start)
	rc.timings = append(rc.timings, Timing{Phase: name, Elapsed: d})
	rc.logf("phase %s: %s", name, d.Round(time.Millisecond))
}

// prepareFiles writes PKI, kubeconfigs and the Corefile.
func (rc *runningCluster) prepareFiles() error {
	l := rc.layout
	for _, d := range []string{l.Logs(), l.Kubeconfigs(), l.PVDir(), l.path("flexvolume"), l.path("etcd")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := writePKI(l.PKI(), rc.opts.Name, rc.opts.ClusterDomain, rc.opts.AllNodes()); err != nil {
		return err
	}
	for _, spec := range kubeconfigSpecs(l, rc.opts.AllNodes()) {
		if err := writeKubeconfig(l.PKI(), spec, "lc-"+rc.opts.Name); err != nil {
			return err
		}
	}
	if err := os.WriteFile(l.ResolvConf(), []byte(resolvConf(rc.opts.ClusterDomain)), 0o644); err != nil {
		return err
	}
	return os.WriteFile(l.path("Corefile"), []byte(corefile(l.InnerKubeconfig(), rc.opts.ClusterDomain)), 0o600)
}

func (rc *runningCluster) newComponent(name string, args []string) *component {
	c := &component{Name: name, Args: args, Log: rc.layout.ComponentLog(name)}
	rc.components = append(rc.components, c)
	return c
}

// startControlPlane starts etcd, kube-apiserver, KCM, scheduler, CoreDNS and kube-proxy
// and waits for each to be healthy.
func (rc *runningCluster) startControlPlane(ctx context.Context) error {
	l, t, ns := rc.layout, rc.tools, NetnsName(rc.opts.Name)
	start := time.Now()
	etcd := rc.newComponent("etcd", etcdArgs(t.Etcd, l))
	if err := etcd.start(ns); err != nil {
		return err
	}
	plain := rc.httpClient(nil)
	if err := waitHTTP(ctx, plain, fmt.Sprintf("http://127.0.0.1:%d/health", etcdPort), etcd); err != nil {
		return err
	}
	rc.phase("etcd", start)

	start = time.Now()
	api := rc.newComponent("kube-apiserver", apiServerArgs(t.APIServer, l, rc.opts.ClusterDomain))
	if err := api.start(ns); err != nil {
		return err
	}
	if err := rc.loadInnerConfig(); err != nil {
		return err
	}
	if err := rc.waitAPIReady(ctx, api); err != nil {
		return err
	}
	rc.phase("kube-apiserver", start)

	start = time.Now()
	kcm := rc.newComponent("kube-controller-manager", controllerManagerArgs(t.ControllerManager, l, rc.opts.Name))
	sched := rc.newComponent("kube-scheduler", schedulerArgs(t.Scheduler, l))
	dns := rc.newComponent("coredns", coreDNSArgs(t.CoreDNS, l.path("Corefile")))
	for _, c := range []*component{kcm, sched, dns} {
		if err := c.start(ns); err != nil {
			return err
		}
	}
	insecure := rc.httpClient(&tls.Config{InsecureSkipVerify: true}) // only /healthz of our own components
	if err := waitHTTP(ctx, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", kcmPort), kcm); err != nil {
		return err
	}
	if err := waitHTTP(ctx, insecure, fmt.Sprintf("https://127.0.0.1:%d/healthz", schedulerPort), sched); err != nil {
		return err
	}
	rc.phase("controller-manager+scheduler", start)
	return nil
}

// startKubeProxy runs kube-proxy once node 1 exists: kube-proxy waits 30 s for the
// Node named by --hostname-override and reports unhealthy without it.
func (rc *runningCluster) startKubeProxy(ctx context.Context) error {
	if rc.opts.NoKubeProxy || rc.opts.AllNodes() == 0 {
		return nil
	}
	start := time.Now()
	host := NodeName(rc.opts.Name, 1)
	kp := rc.newComponent("kube-proxy", kubeProxyArgs(rc.tools.KubeProxy, rc.layout, host))
	if err := kp.start(NetnsName(rc.opts.Name)); err != nil {
		return err
	}
	if err := waitHTTP(ctx, rc.httpClient(nil), "http://127.0.0.1:10256/healthz", kp); err != nil {
		return err
	}
	rc.phase("kube-proxy", start)
	return nil
}

// loadInnerConfig builds the admin rest.Config that dials through the netns.
func (rc *runningCluster) loadInnerConfig() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", rc.layout.InnerKubeconfig())
	if err != nil {
		return err
	}
	cfg.Dial = rc.dialer.DialContext
	cfg.QPS, cfg.Burst = 50, 100
	rc.innerCfg = cfg
	rc.kube, err = kubernetes.NewForConfig(cfg)
	return err
}

func (rc *runningCluster) waitAPIReady(ctx context.Context, api *component) error {
	return poll(ctx, 2*time.Minute, func() (bool, error) {
		if err := api.exitError(); err != nil {
			return false, err
		}
		body, err := rc.kube.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		return err == nil && string(body) == "ok", nil
	})
}

// httpClient dials inside the cluster netns.
func (rc *runningCluster) httpClient(tlsCfg *tls.Config) *http.Client {
	return &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		DialContext: rc.dialer.DialContext, TLSClientConfig: tlsCfg, DisableKeepAlives: true}}
}

// waitDNS waits until CoreDNS answers for the kubernetes Service (the ready plugin
// answers earlier than the first query succeeds).
func (rc *runningCluster) waitDNS(ctx context.Context) error {
	dns := rc.componentNamed("coredns")
	name := "kubernetes.default.svc." + rc.opts.ClusterDomain
	return poll(ctx, time.Minute, func() (bool, error) {
		if err := dns.exitError(); err != nil {
			return false, err
		}
		qctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		ips, err := rc.dialer.Resolver().LookupHost(qctx, name)
		return err == nil && len(ips) == 1 && ips[0] == KubernetesSvc, nil
	})
}

func (rc *runningCluster) componentNamed(name string) *component {
	for _, c := range rc.components {
		if c.Name == name {
			return c
		}
	}
	return &component{Name: name}
}

// stopAll stops the node agents, then the controllers, then the apiserver and etcd
// last (an apiserver whose etcd is gone may hang in shutdown).
func (rc *runningCluster) stopAll() {
	rc.stopRealNodes()
	var agents, controllers []*component
	for _, n := range rc.nodes {
		agents = append(agents, n)
	}
	stopParallel(agents, 15*time.Second)
	for _, c := range rc.components {
		if c.Name != "kube-apiserver" && c.Name != "etcd" {
			controllers = append(controllers, c)
		}
	}
	stopParallel(controllers, 10*time.Second)
	rc.componentNamed("kube-apiserver").stop(15 * time.Second)
	rc.componentNamed("etcd").stop(10 * time.Second)
}

func stopParallel(cs []*component, grace time.Duration) {
	var wg sync.WaitGroup
	for _, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.stop(grace)
		}()
	}
	wg.Wait()
}

func waitHTTP(ctx context.Context, c *http.Client, url string, comp *component) error {
	err := poll(ctx, time.Minute, func() (bool, error) {
		if err := comp.exitError(); err != nil {
			return false, err
		}
		resp, err := c.Get(url)
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("%s not healthy at %s: %w", comp.Name, url, err)
	}
	return nil
}

// poll runs cond every 100 ms until it is true, returns an error, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("timed out after %s: %w", timeout, ctx.Err())
		case <-tick.C:
		}
	}
}
